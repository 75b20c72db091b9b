/* The mixture-of-experts FFN sublayer (model/moe.c). */
#ifndef RUNNER_MODEL_MOE_H
#define RUNNER_MODEL_MOE_H

#include "model/model.h"

/* Norm, router, per-token choice, then each chosen expert's gate/up/down for exactly the tokens
 * routed to it (a weight row is read once per expert per step), combined into the residual. */
void runner_moe_block(runner_context *ctx, const runner_layer *L, runner_step *st);

#endif
