/* The forward pass (model/forward.c). */
#ifndef RUNNER_MODEL_FORWARD_H
#define RUNNER_MODEL_FORWARD_H

#include "model/model.h"

/* One forward step over n <= n_batch tokens at positions [pos, pos + n). Writes logits rows for
 * the tokens selected by logits_mode into ctx->s.logits (row i for token i, or row 0 for LAST), or,
 * for EMBD, every token's output-normed hidden state into ctx->s.xn (row i at i * n_embd). */
runner_status runner_forward(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                             const volatile int32_t *abort_flag, char *err, int32_t err_len);

#endif
