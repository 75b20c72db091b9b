/* Causal attention over the KV cache (ops/attention.c). */
#ifndef RUNNER_OPS_ATTENTION_H
#define RUNNER_OPS_ATTENTION_H

#include "model/model.h"

/* Pool task over (token, head) pairs i in [i0, i1) of step st (a runner_step *): keys of positions
 * 0..p (a sliding-window layer: the last n_swa) in order, softmax summed in double, values in order,
 * into ctx->s.att. */
void runner_attention_task(void *arg, int64_t i0, int64_t i1, int ith);

#endif
