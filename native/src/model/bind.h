/* Binding one tensor descriptor to its place in a model (model/bind.c). */
#ifndef RUNNER_MODEL_BIND_H
#define RUNNER_MODEL_BIND_H

#include "model/model.h"

/* Check descriptor `index` (role, layer, file extent, type, shape, bytes) and bind it as a view
 * into the mapped file, picking its matmul kernel; the message names the tensor and the value. */
runner_status runner_model_bind_tensor(runner_model *m, const runner_tensor_desc *t, int32_t index, char *err, int32_t err_len);

/* The model's slot of a single (not fused, not expert) weight's role, or NULL. */
runner_weight *runner_model_weight_slot(runner_model *m, int32_t role, int32_t layer);

/* Pick the matmul kernel of a bound weight and the quantizer of the activations it dots against. */
runner_status runner_weight_setup_kernel(runner_model *m, runner_weight *w, const char *name, int32_t layer, char *err, int32_t err_len);

/* No output weight: the head is token_embd (tied embeddings), which then needs a matmul kernel. */
runner_status runner_model_bind_tied_head(runner_model *m, char *err, int32_t err_len);

#endif
