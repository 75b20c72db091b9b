/* The forward pass (model/forward.c). */
#ifndef RUNNER_MODEL_FORWARD_H
#define RUNNER_MODEL_FORWARD_H

#include "model/model.h"

/* One forward step over n <= n_batch tokens at positions [pos, pos + n). Writes logits rows for
 * the tokens selected by logits_mode into ctx->s.logits (row i for token i, or row 0 for LAST), or,
 * for EMBD, every token's output-normed hidden state into ctx->s.xn (row i at i * n_embd). */
runner_status runner_forward(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                             const volatile int32_t *abort_flag, char *err, int32_t err_len);

/* The same step over tokens of several sequences: segs[i] says whose KV cache and positions tokens
 * [t0, t0 + n) use (seg_of[t]: token t's segment; NULL when n_segs is 1). ctx lends the scratch and
 * pool (n <= its n_batch) and must share the model of every segment's context. Each token's results
 * are bitwise those of running its sequence alone. */
runner_status runner_forward_segments(runner_context *ctx, const int32_t *tokens, int32_t n, const runner_segment *segs, int32_t n_segs,
                                      const int32_t *seg_of, int32_t logits_mode, const volatile int32_t *abort_flag, char *err,
                                      int32_t err_len);

/* The multi-token-prediction head (model config n_nextn > 0) over n <= n_batch pairs: token i with the
 * target's hidden state h[i] (row i at i * n_embd, the last main block's output before the output
 * norm) at KV slot pos + i (rope at pos + i + 1) of ctx, through eh_proj and the NextN block, then
 * its head (LAST or ALL rows into ctx->s.logits). The head reads each h after the output norm, as
 * llama.cpp's h_nextn is (chained: after the head's own norm, its shared_head_norm). ctx->s.x keeps
 * the block's output rows (before the norm): the h of the next pair when drafts are chained
 * (chained = 1). ctx's rope tables need pos + n + 1 rows. */
runner_status runner_forward_mtp(runner_context *ctx, const float *h, int chained, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                                 const volatile int32_t *abort_flag, char *err, int32_t err_len);

#endif
