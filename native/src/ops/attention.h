/* Causal attention over the KV cache (ops/attention.c), tiled (ops/attn_tile.h). */
#ifndef RUNNER_OPS_ATTENTION_H
#define RUNNER_OPS_ATTENTION_H

#include "model/model.h"

/* The attention of step st's layer: every token's queries against the keys it sees (positions 0..p,
 * or the last n_swa on a sliding-window layer), from ctx->s.q into ctx->s.att. */
void runner_attention(runner_context *ctx, runner_step *st);

/* Floats of per-thread workspace runner_attention needs (ctx->s.attn holds n_threads of them). */
size_t runner_attention_workspace_floats(int32_t head_dim);

#endif
