/* LoRA adapters attached to a model (model/lora.c; runner.h runner_model_add_lora). */
#ifndef RUNNER_MODEL_LORA_H
#define RUNNER_MODEL_LORA_H

#include "model/model.h"

/* Unmap and free every adapter attached to m (the model is being freed). */
void runner_model_free_loras(runner_model *m);

#endif
