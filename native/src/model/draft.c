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
 *   MTP:    the target's own NextN head (runner.h RUNNER_DRAFT_MTP), in a context of the target's
 *           model: the generation shows it the target's hidden rows after each evaluation
 *           (runner_draft_observe), and it feeds the pairs (h_q, t_{q+1}) to the head's block, so
 *           its KV cache has the history; a proposal feeds the last pair (the pending token) and
 *           chains greedily on the block's own output.
 */
#include "model/draft.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/forward.h"
#include "model/model.h"

struct runner_draft {
    runner_draft_params p;
    runner_context *ctx; /* MODEL: the draft model's context; MTP: a context of the target's model */
    int32_t *held;       /* MODEL: the tokens its KV cache holds, by position; MTP: the sequence its slots and h came from */
    int32_t n_held;
    int32_t n_held_max;
    /* MTP: slots [0, n_fed) of ctx's KV cache hold the target's pairs (h_q, t_{q+1}); h is the last
     * hidden row the target showed (position h_pos, -1: none), whose pair waits for its next token;
     * chain is the block's output a chained draft reads. */
    float *h, *chain;
    int32_t h_pos, n_fed;
};

runner_status runner_draft_create(const runner_draft_params *params, runner_context *draft_ctx, runner_draft **out, char *err,
                                  int32_t err_len) {
    *out = NULL;
    if (!params) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: no parameters");
    const runner_draft_params *p = params;
    if (p->kind != RUNNER_DRAFT_LOOKUP && p->kind != RUNNER_DRAFT_MODEL && p->kind != RUNNER_DRAFT_MTP)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: kind %d is not a draft source", p->kind);
    if (p->n_max < 1 || p->n_max > RUNNER_DRAFT_MAX)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: n_max %d is outside 1..%d", p->n_max, RUNNER_DRAFT_MAX);
    if (p->kind == RUNNER_DRAFT_LOOKUP &&
        (p->ngram_min < 1 || p->ngram_max < p->ngram_min || p->ngram_max > RUNNER_DRAFT_NGRAM_MAX))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: n-gram sizes %d..%d must lie in 1..%d, the first not above the second",
                           p->ngram_min, p->ngram_max, RUNNER_DRAFT_NGRAM_MAX);
    if (p->kind != RUNNER_DRAFT_LOOKUP && (!draft_ctx || !(p->p_min >= 0.0f && p->p_min <= 1.0f)))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, draft_ctx ? "draft: p_min %g is outside [0, 1]" : "draft: a draft model needs its context",
                           (double)p->p_min);
    if (p->kind == RUNNER_DRAFT_LOOKUP && draft_ctx)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "draft: lookup takes no draft context");
    if (p->kind == RUNNER_DRAFT_MTP && draft_ctx->model->cfg.n_nextn < 1)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "draft: the model has no NextN (MTP) head (nextn_predict_layers)");
    if ((p->kind == RUNNER_DRAFT_MTP) != (draft_ctx && draft_ctx->params.blocks == RUNNER_CONTEXT_MTP) && p->kind != RUNNER_DRAFT_LOOKUP)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT,
                           p->kind == RUNNER_DRAFT_MTP ? "draft: an MTP draft needs an MTP context (blocks 1)" : "draft: a draft model needs a context of its model's own blocks");
    runner_draft *d = calloc(1, sizeof *d);
    if (!d) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "draft");
    d->p = *p;
    d->ctx = draft_ctx;
    d->h_pos = -1;
    /* MTP: the sequence may be one longer than the target's context (the token that finds it full). */
    d->n_held_max = draft_ctx ? draft_ctx->params.n_ctx + 1 : 0;
    const size_t E = draft_ctx ? (size_t)draft_ctx->model->cfg.n_embd : 0;
    const int ok = !draft_ctx || ((d->held = malloc((size_t)d->n_held_max * sizeof *d->held)) &&
                                  (p->kind != RUNNER_DRAFT_MTP || ((d->h = malloc(E * sizeof *d->h)) && (d->chain = malloc(E * sizeof *d->chain)))));
    if (!ok) {
        runner_draft_free(d);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "draft: its token list and rows");
    }
    /* What the context held before is unknown to the draft: start from an empty cache. */
    if (draft_ctx) runner_kv_truncate(draft_ctx, 0, NULL, 0);
    *out = d;
    return RUNNER_OK;
}

void runner_draft_free(runner_draft *d) {
    if (!d) return;
    free(d->held);
    free(d->h);
    free(d->chain);
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
    /* A sliding-window ring may no longer hold what a rewind that far back needs: start over. */
    if (keep > 0 && keep < dc->kv.n_past && keep < runner_kv_min_keep(dc)) keep = 0;
    if (keep == 0 && dc->kv.n_past > 0) runner_kv_truncate(dc, 0, NULL, 0);
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

/* ---- MTP ------------------------------------------------------------------------------ */

int runner_draft_needs_hidden(const runner_draft *d) {
    return d && d->p.kind == RUNNER_DRAFT_MTP;
}

runner_status runner_draft_check_target(const runner_draft *d, const runner_context *target, char *err, int32_t err_len) {
    if (d->p.kind != RUNNER_DRAFT_MTP) return RUNNER_OK;
    if (d->ctx->model != target->model)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: an MTP draft's context must be of the target's model");
    if (d->ctx->params.n_ctx < target->params.n_ctx + 1)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: an MTP draft's context needs %d positions (the target's + 1), has %d",
                           target->params.n_ctx + 1, d->ctx->params.n_ctx);
    return RUNNER_OK;
}

/* Tokens from the start on which the draft's sequence and seq agree. */
static int32_t common_prefix(const runner_draft *d, const int32_t *seq, int32_t n_seq) {
    int32_t k = 0;
    while (k < d->n_held && k < n_seq && d->held[k] == seq[k]) k++;
    return k;
}

static void hold(runner_draft *d, const int32_t *seq, int32_t n_seq) {
    d->n_held = n_seq < d->n_held_max ? n_seq : d->n_held_max;
    memcpy(d->held, seq, (size_t)d->n_held * sizeof *seq);
}

/* The head on n pairs (h rows, tokens) at slots [slot, slot + n), in the draft context's batches. */
static runner_status mtp_run(runner_draft *d, const float *h, int chained, const int32_t *tokens, int32_t n, int32_t slot, int32_t logits_mode,
                             const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    runner_context *dc = d->ctx;
    const int32_t E = dc->model->cfg.n_embd;
    dc->last_logits = NULL;
    for (int32_t done = 0; done < n;) {
        const int32_t chunk = n - done < dc->params.n_batch ? n - done : dc->params.n_batch;
        const int last = done + chunk == n;
        dc->kv.n_past = slot + done;
        const int32_t mode = last ? logits_mode : RUNNER_LOGITS_NONE;
        runner_status st = runner_forward_mtp(dc, h + (size_t)done * E, chained, tokens + done, chunk, slot + done, mode, abort_flag, err, err_len);
        if (st != RUNNER_OK) return st;
        dc->kv.n_past = slot + done + chunk;
        if (last && mode == RUNNER_LOGITS_LAST) dc->last_logits = dc->s.logits;
        done += chunk;
    }
    return RUNNER_OK;
}

/* Forget the slots and the held row that seq no longer backs, the target evaluating its positions
 * from pos on anew: slot q stays while tokens 0..q+1 are unchanged and q < pos (its h_q is then
 * still the target's), the held row while tokens 0..h_pos are unchanged and h_pos < pos. */
static void mtp_sync(runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t pos) {
    const int32_t keep = common_prefix(d, seq, n_seq);
    if (d->n_fed > keep - 1) d->n_fed = keep > 0 ? keep - 1 : 0;
    if (d->n_fed > pos) d->n_fed = pos;
    if (d->h_pos >= keep || d->h_pos >= pos) d->h_pos = -1;
}

runner_status runner_draft_observe(runner_draft *d, const runner_context *target, const int32_t *seq, int32_t n_seq, int32_t pos, int32_t n,
                                   const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    if (!runner_draft_needs_hidden(d) || n < 1) return RUNNER_OK;
    runner_context *dc = d->ctx;
    const int32_t E = dc->model->cfg.n_embd;
    mtp_sync(d, seq, n_seq, pos);
    runner_status st = RUNNER_OK;
    /* Slots up to pos + n - 2, rotated up to pos + n - 1: beyond the draft's context nothing is fed. */
    if (n_seq > d->n_held_max || pos + n + 1 > dc->params.n_ctx) {
        d->h_pos = -1;
        return RUNNER_OK;
    }
    /* The row held from the previous evaluation pairs with the first token evaluated now. */
    if (d->n_fed == pos - 1 && d->h_pos == pos - 1 && (st = mtp_run(d, d->h, 0, seq + pos, 1, pos - 1, RUNNER_LOGITS_NONE, abort_flag, err, err_len)) == RUNNER_OK)
        d->n_fed = pos;
    /* Each row but the last pairs with the token after it; the last waits for its token (held). A gap
     * (positions the target evaluated without showing them) leaves the slots unfed: no proposals. */
    if (st == RUNNER_OK && d->n_fed == pos && n > 1 &&
        (st = mtp_run(d, target->s.x, 0, seq + pos + 1, n - 1, pos, RUNNER_LOGITS_NONE, abort_flag, err, err_len)) == RUNNER_OK)
        d->n_fed = pos + n - 1;
    memcpy(d->h, target->s.x + (size_t)(n - 1) * E, (size_t)E * sizeof *d->h);
    d->h_pos = pos + n - 1;
    hold(d, seq, n_seq);
    runner_pool_idle(dc->pool); /* the target's step comes next */
    if (st == RUNNER_ERR_ABORTED) return RUNNER_OK; /* the generation sees the flag itself */
    return st;
}

/* MTP: the pending token seq[n_seq - 1] with the target's h of the position before it gives the first
 * draft; each further one feeds the block's own output with the token just drafted. */
static runner_status propose_mtp(runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t max, int32_t n_vocab, int32_t *out,
                                 int32_t *n_out, const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    runner_context *dc = d->ctx;
    const int32_t E = dc->model->cfg.n_embd, q = n_seq - 2;
    *n_out = 0;
    if (q < 0 || n_seq > d->n_held_max) return RUNNER_OK;
    mtp_sync(d, seq, n_seq, q + 1);
    if (d->h_pos != q || d->n_fed < q) return RUNNER_OK; /* the history is not all there */
    if (q + max + 1 > dc->params.n_ctx) max = dc->params.n_ctx - 1 - q; /* slots q.., rotated up to q + max */
    if (max < 1) return RUNNER_OK;
    runner_status st = mtp_run(d, d->h, 0, seq + n_seq - 1, 1, q, RUNNER_LOGITS_LAST, abort_flag, err, err_len);
    if (st != RUNNER_OK) return st;
    d->n_fed = q + 1; /* the pending token is emitted: this pair is the target's own */
    hold(d, seq, n_seq);
    const int32_t dv = dc->model->cfg.n_vocab;
    for (int32_t k = 0; k < max; k++) {
        float prob = 0.0f;
        const int32_t t = argmax_prob(dc->last_logits, dv, &prob);
        if (t < 0 || t >= n_vocab || prob < d->p.p_min) break;
        out[(*n_out)++] = t;
        if (k + 1 == max) break;
        memcpy(d->chain, dc->s.x, (size_t)E * sizeof *d->chain); /* the block's output, before the norm */
        if ((st = mtp_run(d, d->chain, 1, &t, 1, q + 1 + k, RUNNER_LOGITS_LAST, abort_flag, err, err_len)) != RUNNER_OK) return st;
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
    const runner_status st = d->p.kind == RUNNER_DRAFT_MTP ? propose_mtp(d, seq, n_seq, max, n_vocab_target, out, n_out, abort_flag, err, err_len)
                                                           : propose_model(d, seq, n_seq, max, n_vocab_target, out, n_out, abort_flag, err, err_len);
    runner_pool_idle(d->ctx->pool); /* the target's step comes next: no spinning workers beside it */
    if (st == RUNNER_ERR_ABORTED) {
        *n_out = 0;
        return RUNNER_OK; /* the generation sees the flag itself */
    }
    return st;
}

void runner_draft_shift(runner_draft *d, int32_t keep, int32_t discard) {
    if (d->p.kind == RUNNER_DRAFT_LOOKUP) return;
    runner_context *dc = d->ctx;
    const int32_t end = keep + discard;
    if (dc->kv.n_past >= end && runner_kv_shift(dc, keep, discard, NULL, 0) == RUNNER_OK) {
        if (d->n_held > end) {
            memmove(d->held + keep, d->held + end, (size_t)(d->n_held - end) * sizeof *d->held);
            d->n_held -= discard;
        } else if (d->n_held > keep) {
            d->n_held = keep;
        }
        if (d->p.kind == RUNNER_DRAFT_MTP) {
            d->n_fed = d->n_fed >= end ? d->n_fed - discard : d->n_fed > keep ? keep : d->n_fed;
            d->h_pos = d->h_pos >= end ? d->h_pos - discard : -1;
        }
        return;
    }
    if (d->n_held > keep) d->n_held = keep;
    if (dc->kv.n_past > keep) runner_kv_truncate(dc, keep, NULL, 0);
    if (d->p.kind == RUNNER_DRAFT_MTP) {
        if (d->n_fed > keep) d->n_fed = keep;
        d->h_pos = -1;
    }
}
