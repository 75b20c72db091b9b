/* Binding one tensor descriptor to its place in a model (model/bind.c). */
#ifndef RUNNER_MODEL_BIND_H
#define RUNNER_MODEL_BIND_H

#include "model/model.h"

/* Check descriptor `index` (role, layer, file extent, type, shape, bytes) and bind it as a view
 * into the mapped file, picking its matmul kernel; the message names the tensor and the value. */
runner_status runner_model_bind_tensor(runner_model *m, const runner_tensor_desc *t, int32_t index, char *err, int32_t err_len);

/* No output weight: the head is token_embd (tied embeddings), which then needs a matmul kernel. */
runner_status runner_model_bind_tied_head(runner_model *m, char *err, int32_t err_len);

#endif
