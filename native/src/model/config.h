/* Checking a model config (model/config.c). */
#ifndef RUNNER_MODEL_CONFIG_H
#define RUNNER_MODEL_CONFIG_H

#include "runner.h"

/* Every field in range (dimensions, enums, finite scales); the message names the field and its value. */
runner_status runner_model_config_check(const runner_model_config *c, char *err, int32_t err_len);

#endif
