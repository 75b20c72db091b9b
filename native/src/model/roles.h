/* Tensor roles as rules: names, shapes under the config, F32 vectors, completeness (model/roles.c). */
#ifndef RUNNER_MODEL_ROLES_H
#define RUNNER_MODEL_ROLES_H

#include "model/model.h"

/* 1 for roles bound per block, 0 for model-wide ones. */
int runner_role_is_per_layer(int32_t role);

/* 1 for the 1-D weights read as F32 in place (norms, biases, rope factors). */
int runner_role_is_vector(int32_t role);

/* The shape [ne0, ne1] a role's tensor has under the config (ne1 = 1 for vectors; experts: one expert's). */
void runner_role_shape(const runner_model_config *c, int32_t role, int64_t *ne0, int64_t *ne1);

/* Whether [ne0, ne1] is a shape the engine computes correctly for this role under the config. */
int runner_role_shape_ok(const runner_model_config *c, int32_t role, int64_t ne0, int64_t ne1);

/* After every tensor is bound: refuses a missing weight, a weight of a removed sublayer, and optional
 * weights given in only some blocks, naming the block and the tensor. */
runner_status runner_model_check_complete(runner_model *m, char *err, int32_t err_len);

#endif
