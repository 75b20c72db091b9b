/* Whether a bound model has every weight its config declares, and none it does not (model/check.c). */
#ifndef RUNNER_MODEL_CHECK_H
#define RUNNER_MODEL_CHECK_H

#include "model/model.h"

/* After every tensor is bound: refuses a missing weight, a weight of a removed sublayer, and optional
 * weights given in only some blocks, naming the block and the tensor. Ties the head to token_embd
 * when there is no output weight. */
runner_status runner_model_check_complete(runner_model *m, char *err, int32_t err_len);

#endif
