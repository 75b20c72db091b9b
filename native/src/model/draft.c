/*
 * Draft sources of speculative decoding. A draft only proposes: the generation (model/generate.c)
 * verifies every token with the target's own sampler, so nothing here can change an output, only
 * how many target steps it takes.
 *   LOOKUP: the longest suffix of the sequence (ngram_max down to ngram_min tokens) that occurred
 *           before, most recent occurrence first; the tokens that followed it are the draft
 *           (prompt lookup decoding: pays on text that repeats its input: code edits, quotes, lists).
 *   MODEL:  a smaller model with a compatible vocabulary continues the sequence greedily in its own
 *           context, which keeps what it evaluated: a step re-evaluates only where the sequence left
 *           its last proposal (the target rejected a token) and what was appended since.
 */
#include "model/draft.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/model.h"

struct runner_draft {
    runner_draft_params p;
    runner_context *ctx; /* MODEL: the draft model's context */
    int32_t *held;       /* MODEL: the tokens its KV cache holds, by position */
    int32_t n_held;
};

runner_status runner_draft_create(const runner_draft_params *params, runner_context *draft_ctx, runner_draft **out, char *err,
                                  int32_t err_len) {
    *out = NULL;
    if (!params) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: no parameters");
    const runner_draft_params *p = params;
    if (p->kind != RUNNER_DRAFT_LOOKUP && p->kind != RUNNER_DRAFT_MODEL)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: kind %d is not a draft source", p->kind);
    if (p->n_max < 1 || p->n_max > RUNNER_DRAFT_MAX)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: n_max %d is outside 1..%d", p->n_max, RUNNER_DRAFT_MAX);
    if (p->kind == RUNNER_DRAFT_LOOKUP &&
        (p->ngram_min < 1 || p->ngram_max < p->ngram_min || p->ngram_max > RUNNER_DRAFT_NGRAM_MAX))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: n-gram sizes %d..%d must lie in 1..%d, the first not above the second",
                           p->ngram_min, p->ngram_max, RUNNER_DRAFT_NGRAM_MAX);
    if (p->kind == RUNNER_DRAFT_MODEL && (!draft_ctx || !(p->p_min >= 0.0f && p->p_min <= 1.0f)))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, draft_ctx ? "draft: p_min %g is outside [0, 1]" : "draft: a draft model needs its context",
                           (double)p->p_min);
    if (p->kind == RUNNER_DRAFT_LOOKUP && draft_ctx)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: lookup takes no draft context");
    runner_draft *d = calloc(1, sizeof *d);
    if (!d) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "draft");
    d->p = *p;
    d->ctx = draft_ctx;
    if (draft_ctx && !(d->held = malloc((size_t)draft_ctx->params.n_ctx * sizeof *d->held))) {
        free(d);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "draft: its token list");
    }
    /* What the context held before is unknown to the draft: start from an empty cache. */
    if (draft_ctx) runner_kv_truncate(draft_ctx, 0, NULL, 0);
    *out = d;
    return RUNNER_OK;
}

void runner_draft_free(runner_draft *d) {
    if (!d) return;
    free(d->held);
    free(d);
}

runner_context *runner_draft_context(const runner_draft *d) {
    return d->ctx;
}

int32_t runner_draft_n_max(const runner_draft *d) {
    return d->p.n_max;
}

/* LOOKUP: the continuation of the most recent earlier occurrence of the longest matching suffix. */
static int32_t propose_lookup(const runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t max, int32_t n_vocab, int32_t *out) {
    for (int32_t n = d->p.ngram_max; n >= d->p.ngram_min; n--) {
        if (n >= n_seq) continue;
        const int32_t *suffix = seq + n_seq - n;
        /* Occurrences ending before the suffix itself, latest first; the one found must have a token after it. */
        for (int32_t i = n_seq - n - 1; i >= 0; i--) {
            if (memcmp(seq + i, suffix, (size_t)n * sizeof *seq) != 0) continue;
            int32_t k = 0;
            while (k < max && i + n + k < n_seq && seq[i + n + k] < n_vocab) out[k] = seq[i + n + k], k++;
            if (k > 0) return k;
        }
    }
    return 0;
}

/* The greedy token of a row and its softmax probability (ties: the lowest id, as the sampler's greedy). */
static int32_t argmax_prob(const float *row, int32_t n, float *prob) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++)
        if (isfinite(row[i]) && (best < 0 || row[i] > row[best])) best = i;
    if (best < 0) return -1;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        if (isfinite(row[i])) sum += exp((double)row[i] - (double)row[best]);
    *prob = (float)(1.0 / sum);
    return best;
}

/* MODEL: bring the draft's cache to seq (keeping the common prefix), then its greedy continuation. */
static runner_status propose_model(runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t max, int32_t n_vocab, int32_t *out,
                                   int32_t *n_out, const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    runner_context *dc = d->ctx;
    *n_out = 0;
    if (n_seq > dc->params.n_ctx) return RUNNER_OK; /* longer than the draft's context: no proposal */
    int32_t keep = 0;
    while (keep < d->n_held && keep < n_seq && d->held[keep] == seq[keep]) keep++;
    if (keep == n_seq) keep--; /* the last token is evaluated again: its logits are the first draft's */
    d->n_held = keep;
    runner_status st = runner_decode(dc, seq + keep, n_seq - keep, keep, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len);
    if (st != RUNNER_OK) return st;
    memcpy(d->held + keep, seq + keep, (size_t)(n_seq - keep) * sizeof *seq);
    d->n_held = n_seq;
    const int32_t dv = dc->model->cfg.n_vocab;
    for (int32_t k = 0; k < max; k++) {
        float prob = 0.0f;
        const int32_t t = argmax_prob(runner_context_logits(dc), dv, &prob);
        if (t < 0 || t >= n_vocab || prob < d->p.p_min) break;
        out[(*n_out)++] = t;
        /* The last draft is not evaluated: its continuation would not be proposed this step. */
        if (k + 1 == max || d->n_held >= dc->params.n_ctx) break;
        if ((st = runner_decode(dc, &t, 1, d->n_held, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len)) != RUNNER_OK) return st;
        d->held[d->n_held++] = t;
    }
    return RUNNER_OK;
}

runner_status runner_draft_propose(runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t max, int32_t n_vocab_target,
                                   int32_t *out, int32_t *n_out, const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    *n_out = 0;
    if (max > d->p.n_max) max = d->p.n_max;
    if (max < 1 || n_seq < 1) return RUNNER_OK;
    if (d->p.kind == RUNNER_DRAFT_LOOKUP) {
        *n_out = propose_lookup(d, seq, n_seq, max, n_vocab_target, out);
        return RUNNER_OK;
    }
    const runner_status st = propose_model(d, seq, n_seq, max, n_vocab_target, out, n_out, abort_flag, err, err_len);
    runner_pool_idle(d->ctx->pool); /* the target's step comes next: no spinning workers beside it */
    if (st == RUNNER_ERR_ABORTED) {
        *n_out = 0;
        return RUNNER_OK; /* the generation sees the flag itself */
    }
    return st;
}
