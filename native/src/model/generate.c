/* Generation: prompt processing, then sample -> evaluate -> sample ..., entirely in native code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "model/draft.h"
#include "model/group.h"
#include "model/model.h"
#include "runner.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int is_eog(const runner_generate_params *p, int32_t token) {
    for (int32_t i = 0; i < p->n_eog; i++)
        if (p->eog_tokens[i] == token) return 1;
    return 0;
}

/* The grammar's step: which tokens may come next. End-of-generation tokens are allowed exactly when
 * the document is complete, whatever the mask said of them (a caller's stop list may hold tokens
 * with bytes). *forced = the one allowed token, or -1; *done = a complete document nothing extends. */
static runner_status grammar_step(const runner_generate_params *p, uint32_t *bits, int32_t n_words, int32_t *forced, int *done, char *err,
                                  int32_t err_len) {
    int32_t n_allowed = 0, only = -1;
    const runner_status st = runner_matcher_fill_mask(p->matcher, bits, &n_allowed, &only, err, err_len);
    if (st != RUNNER_OK) return st;
    const int complete = runner_matcher_is_complete(p->matcher);
    int cleared = 0;
    for (int32_t i = 0; i < p->n_eog; i++) {
        const int32_t t = p->eog_tokens[i];
        if ((bits[t >> 5] >> (t & 31)) & 1u) bits[t >> 5] &= ~(1u << (t & 31)), n_allowed--, cleared = 1;
    }
    if (cleared && n_allowed == 1)
        for (int32_t w = 0; w < n_words; w++)
            if (bits[w]) only = w * 32 + __builtin_ctz(bits[w]);
    *done = complete && n_allowed == 0;
    *forced = !complete && n_allowed == 1 ? only : -1;
    if (complete)
        for (int32_t i = 0; i < p->n_eog; i++) bits[p->eog_tokens[i] >> 5] |= 1u << (p->eog_tokens[i] & 31);
    if (!complete && n_allowed == 0)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED,
                           "grammar: no token of this vocabulary continues the document (a character it cannot spell?)");
    return RUNNER_OK;
}

/* grammar_step, timed into the stats. */
static runner_status timed_step(const runner_generate_params *p, uint32_t *bits, int32_t n_words, int32_t *forced, int *done, runner_generate_stats *out,
                                char *err, int32_t err_len) {
    const double m0 = now_ms();
    const runner_status st = grammar_step(p, bits, n_words, forced, done, err, err_len);
    out->mask_ms += now_ms() - m0;
    return st;
}

/* A forced token skips the sampler, but not its bans: a -inf bias or a non-finite logit refuses it. */
static int forced_is_banned(const runner_sampler_params *s, const float *logits, int32_t token) {
    float l = logits[token];
    for (int32_t i = 0; i < s->n_bias; i++)
        if (s->bias_tokens[i] == token) l += s->bias_values[i];
    return !isfinite(l);
}

/* One generation's state: what the emit step reads and advances. */
typedef struct gen {
    const runner_generate_params *p;
    runner_context *ctx;
    runner_sampler *sampler;
    runner_token_fn on_token;
    void *user;
    const volatile int32_t *abort_flag;
    runner_generate_stats *out;
    uint32_t *bits;           /* the grammar's mask (NULL without one) */
    int32_t n_words;
    int have_step;            /* bits already hold this step's mask */
    int32_t next_forced;      /* and its forced token */
    int32_t *seq;             /* with a draft: the whole sequence, prefix + prompt + emitted tokens */
    int32_t n_seq;
    char *err;
    int32_t err_len;
} gen;

/*
 * Choose the token after the position whose logits are `logits`, and emit it: the grammar's step,
 * the draw (or the forced token), the end-of-generation check, the callback, the next mask. Returns
 * 1 when the generation goes on (*token emitted), 0 when it ends (out->finish says why) or fails
 * (*st). The same for every source of logits rows, which is what makes drafts unable to change a token.
 */
static int emit(gen *g, const float *logits, int32_t pos, int32_t *token, runner_status *st) {
    const runner_generate_params *p = g->p;
    runner_generate_stats *out = g->out;
    if (g->abort_flag && *g->abort_flag) {
        out->finish = RUNNER_FINISH_ABORTED;
        return 0;
    }
    runner_sample_result r;
    int32_t forced = -1;
    if (p->matcher && !g->have_step) {
        int done = 0;
        if ((*st = timed_step(p, g->bits, g->n_words, &forced, &done, out, g->err, g->err_len)) != RUNNER_OK) return 0;
        if (done) {
            out->finish = RUNNER_FINISH_EOG;
            return 0;
        }
    } else if (p->matcher) {
        forced = g->next_forced; /* computed right after the previous token (below) */
        g->have_step = 0;
    }
    int32_t t;
    if (forced >= 0 && forced_is_banned(p->sampling, logits, forced)) {
        t = -1;
    } else if (forced >= 0) {
        /* The masked distribution puts all its mass on one token: take it without a draw. */
        t = forced;
        r = (runner_sample_result){.token = t, .logprob = p->sampling->logprobs ? 0.0f : NAN, .forced = 1};
        if (p->sampling->n_top_logprobs > 0) r.n_top = 1, r.top_tokens[0] = t, r.top_logprobs[0] = 0.0f;
        out->n_forced++;
    } else {
        t = runner_sampler_sample_masked(g->sampler, logits, g->bits, &r);
    }
    if (t < 0) {
        *st = runner_fail(g->err, g->err_len, RUNNER_ERR_MODEL,
                          p->matcher ? "every token the grammar allows has a banned or non-finite logit at position %d"
                                     : "every logit is banned or not finite at position %d", pos);
        return 0;
    }
    if (is_eog(p, t)) {
        out->finish = RUNNER_FINISH_EOG;
        out->eog_token = t;
        return 0;
    }
    if (p->matcher && (*st = runner_matcher_accept_token(p->matcher, t, g->err, g->err_len)) != RUNNER_OK) return 0;
    out->n_generated++;
    runner_sampler_accept(g->sampler, t);
    if (g->seq) g->seq[g->n_seq++] = t;
    if (g->on_token && g->on_token(g->user, &r) != 0) {
        out->finish = RUNNER_FINISH_STOPPED;
        return 0;
    }
    if (p->matcher) {
        /* The next step's mask now: a document this token completed, with nothing to extend it,
         * ends here ("eos" even on the last token of the budget), without evaluating the token. */
        int done = 0;
        if ((*st = timed_step(p, g->bits, g->n_words, &g->next_forced, &done, out, g->err, g->err_len)) != RUNNER_OK) return 0;
        if (done) {
            out->finish = RUNNER_FINISH_EOG;
            return 0;
        }
        g->have_step = 1;
    }
    *token = t;
    return out->n_generated < p->max_tokens;
}

/*
 * The prompt, as one runner_decode would run it. A draft that reads hidden rows sees each n_batch
 * chunk (runner_decode's own cut, so every row is bitwise the same) right after it is evaluated.
 */
static runner_status decode_prompt(gen *g) {
    const runner_generate_params *p = g->p;
    runner_context *ctx = g->ctx;
    if (!runner_draft_needs_hidden(p->draft))
        return runner_decode(ctx, p->prompt, p->n_prompt, p->pos, RUNNER_LOGITS_LAST, NULL, g->abort_flag, g->err, g->err_len);
    for (int32_t done = 0; done < p->n_prompt;) {
        const int32_t chunk = p->n_prompt - done < ctx->params.n_batch ? p->n_prompt - done : ctx->params.n_batch;
        const int last = done + chunk == p->n_prompt;
        runner_status st = runner_decode(ctx, p->prompt + done, chunk, p->pos + done, last ? RUNNER_LOGITS_LAST : RUNNER_LOGITS_NONE, NULL,
                                         g->abort_flag, g->err, g->err_len);
        if (st == RUNNER_OK) {
            const double d0 = now_ms();
            st = runner_draft_observe(p->draft, ctx, g->seq, g->n_seq, p->pos + done, chunk, g->abort_flag, g->err, g->err_len);
            g->out->draft_ms += now_ms() - d0;
        }
        if (st != RUNNER_OK) return st;
        done += chunk;
    }
    return RUNNER_OK;
}

/* A decode's abort is a finish, not a failure. */
static runner_status aborted_is_finish(runner_status st, runner_generate_stats *out) {
    if (st != RUNNER_ERR_ABORTED) return st;
    out->finish = RUNNER_FINISH_ABORTED;
    return RUNNER_OK;
}

/* Context shift (params.context_shift): a full context keeps its first shift_keep positions and drops
 * half of the rest, as llama.cpp's --context-shift does. 0 when it is off or nothing can go: the
 * generation then ends with "context". With a draft, its sequence drops the same span, so position
 * i is still seq[i], and its own cache shifts alike (runner_draft_shift). */
static int shift_when_full(gen *g, int32_t *pos) {
    runner_context *ctx = g->ctx;
    const runner_generate_params *p = g->p;
    const int32_t n_ctx = ctx->params.n_ctx;
    if (!p->context_shift) return 0;
    int32_t keep = p->shift_keep > 0 ? p->shift_keep : 0;
    if (keep > n_ctx - 4) keep = n_ctx > 4 ? n_ctx - 4 : 0;
    const int32_t discard = (*pos - keep) / 2;
    if (discard < 1 || runner_kv_shift(ctx, keep, discard, NULL, 0) != RUNNER_OK) return 0;
    if (g->seq) {
        memmove(g->seq + keep, g->seq + keep + discard, (size_t)(g->n_seq - keep - discard) * sizeof *g->seq);
        g->n_seq -= discard;
        runner_draft_shift(p->draft, keep, discard);
    }
    *pos -= discard;
    g->out->n_shifts++;
    g->out->n_discarded += discard;
    return 1;
}

/*
 * The decode phase with drafts. `t` was emitted and waits at `pos`; each step evaluates t and the
 * drafted tokens d1..dk at pos..pos+k in one forward pass (all logits rows), then walks the rows:
 * row j is sampled by emit() exactly as a one-token step would be, and the walk goes on while the
 * token sampled is d(j+1), which is then already evaluated. The first other token becomes the next
 * t; the cache keeps only evaluated positions of emitted tokens (positions after them are cut), so
 * at the end it holds what plain decoding leaves: every emitted token but the last.
 */
static runner_status speculate(gen *g, int32_t t, int32_t pos, float *rows) {
    const runner_generate_params *p = g->p;
    runner_context *ctx = g->ctx;
    runner_generate_stats *out = g->out;
    const int32_t n_vocab = ctx->model->cfg.n_vocab;
    const int32_t n_max = runner_draft_n_max(p->draft);
    int32_t *batch = malloc((size_t)(n_max + 1) * sizeof *batch);
    if (!batch) return runner_fail(g->err, g->err_len, RUNNER_ERR_NO_MEMORY, "generate: the verify batch");
    runner_status st = RUNNER_OK;
    for (;;) {
        if (pos >= ctx->params.n_ctx && !shift_when_full(g, &pos)) {
            out->finish = RUNNER_FINISH_CONTEXT;
            break;
        }
        /* Drafts beyond the budget or the context could never be emitted: do not ask for them. A
         * verify step stays within one batch, the step a sliding-window ring is sized for. */
        int32_t room = p->max_tokens - out->n_generated - 1;
        if (room > ctx->params.n_ctx - 1 - pos) room = ctx->params.n_ctx - 1 - pos;
        if (room > ctx->params.n_batch - 1) room = ctx->params.n_batch - 1;
        int32_t k = 0;
        batch[0] = t;
        if (room > 0) {
            const double d0 = now_ms();
            /* A draft with weights runs on its own context's pool now: no spinning workers beside it (a
             * lookup runs on this thread in microseconds: waking the workers each step would cost more). */
            if (runner_draft_context(p->draft)) runner_pool_idle(ctx->pool);
            st = runner_draft_propose(p->draft, g->seq, g->n_seq, room, n_vocab, batch + 1, &k, g->abort_flag, g->err, g->err_len);
            out->draft_ms += now_ms() - d0;
            if (st != RUNNER_OK) break;
        }
        st = aborted_is_finish(runner_decode(ctx, batch, k + 1, pos, k > 0 ? RUNNER_LOGITS_ALL : RUNNER_LOGITS_LAST, k > 0 ? rows : NULL,
                                             g->abort_flag, g->err, g->err_len), out);
        if (st != RUNNER_OK || out->finish == RUNNER_FINISH_ABORTED) break;
        if (k > 0) out->n_draft_steps++, out->n_drafted += k;
        int32_t j = 0, next = -1;
        int go = 1;
        for (;; j++) {
            go = emit(g, k > 0 ? rows + (size_t)j * n_vocab : runner_context_logits(ctx), pos + j + 1, &next, &st);
            if (!go || j == k || next != batch[j + 1]) break;
            out->n_accepted++;
        }
        /* The draft sees the hidden rows of what was kept (t and the accepted drafts). */
        if (st == RUNNER_OK && runner_draft_needs_hidden(p->draft)) {
            const double d0 = now_ms();
            runner_pool_idle(ctx->pool);
            st = runner_draft_observe(p->draft, ctx, g->seq, g->n_seq, pos, j + 1, g->abort_flag, g->err, g->err_len);
            out->draft_ms += now_ms() - d0;
        }
        /* Keep t and the accepted drafts; the rows after them were evaluated for nothing. */
        if (k > j && st == RUNNER_OK) st = runner_kv_truncate(ctx, pos + j + 1, g->err, g->err_len);
        if (!go || st != RUNNER_OK) break;
        t = next;
        pos += j + 1;
    }
    free(batch);
    return st;
}

runner_status runner_generate(runner_context *ctx, const runner_generate_params *p, runner_token_fn on_token,
                              void *user, const volatile int32_t *abort_flag, runner_generate_stats *stats, char *err,
                              int32_t err_len) {
    runner_generate_stats local = {0};
    runner_generate_stats *out = stats ? stats : &local;
    *out = (runner_generate_stats){.finish = RUNNER_FINISH_LENGTH, .eog_token = -1};
    if (!p || !p->prompt || p->n_prompt < 1 || p->max_tokens < 0 || !p->sampling || (p->n_eog > 0 && !p->eog_tokens) ||
        (p->n_history > 0 && !p->history) || p->n_history < 0)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: missing prompt, sampling or token lists");
    if (p->draft && (p->n_prefix != p->pos || (p->n_prefix > 0 && !p->prefix)))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: a draft needs the %d tokens before position %d, got %d",
                           p->pos, p->pos, p->n_prefix);
    if (p->draft && runner_draft_context(p->draft) == ctx)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: the draft model's context is the target's");
    if (p->draft) {
        const runner_status dst = runner_draft_check_target(p->draft, ctx, err, err_len);
        if (dst != RUNNER_OK) return dst;
    }
    const int32_t n_vocab = ctx->model->cfg.n_vocab;
    if (p->context_shift) {
        const runner_status can = runner_kv_can_shift(ctx, err, err_len);
        if (can != RUNNER_OK) return can;
    }
    if (p->matcher && runner_matcher_n_vocab(p->matcher) != n_vocab)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: the grammar's vocabulary has %d tokens, the model %d",
                           runner_matcher_n_vocab(p->matcher), n_vocab);
    if (p->group && runner_group_model(p->group) != ctx->model)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: the decode group belongs to another model");
    for (int32_t i = 0; i < p->n_eog; i++)
        if (p->eog_tokens[i] < 0 || p->eog_tokens[i] >= n_vocab)
            return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "generate: eog token %d is outside the vocabulary", p->eog_tokens[i]);
    gen g = {.p = p, .ctx = ctx, .on_token = on_token, .user = user, .abort_flag = abort_flag, .out = out,
             .n_words = (n_vocab + 31) / 32, .next_forced = -1, .err = err, .err_len = err_len};
    float *rows = NULL;
    runner_status st = RUNNER_OK;
    if (p->matcher && !(g.bits = malloc((size_t)g.n_words * sizeof *g.bits)))
        st = runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "generate: the grammar mask");
    if (st == RUNNER_OK && p->draft) {
        /* The sequence grows to the context at most (plus the token that finds it full). */
        const size_t n_seq_max = (size_t)ctx->params.n_ctx + 1;
        const size_t n_rows = (size_t)runner_draft_n_max(p->draft) + 1;
        g.seq = malloc(n_seq_max * sizeof *g.seq);
        rows = malloc(n_rows * (size_t)n_vocab * sizeof *rows);
        if (!g.seq || !rows) st = runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "generate: the draft's sequence and verify rows");
    }
    if (st == RUNNER_OK) st = runner_sampler_create(p->sampling, n_vocab, &g.sampler, err, err_len);
    if (st != RUNNER_OK) {
        free(g.bits), free(g.seq), free(rows);
        return st;
    }
    for (int32_t i = 0; i < p->n_history; i++) runner_sampler_accept(g.sampler, p->history[i]);
    for (int32_t i = 0; i < p->n_prompt; i++) runner_sampler_accept(g.sampler, p->prompt[i]);
    if (g.seq) {
        memcpy(g.seq, p->prefix, (size_t)p->n_prefix * sizeof *g.seq);
        memcpy(g.seq + p->n_prefix, p->prompt, (size_t)p->n_prompt * sizeof *g.seq);
        g.n_seq = p->n_prefix + p->n_prompt;
    }

    out->n_prompt = p->n_prompt;
    double t0 = now_ms();
    st = aborted_is_finish(decode_prompt(&g), out);
    double t1 = now_ms();
    out->prompt_ms = t1 - t0;
    int32_t pos = p->pos + p->n_prompt;
    /* The decode phase: in the group's steps when it has room (results are the same either way). */
    const int grouped = !p->draft && p->group && runner_group_enter(p->group);
    if (grouped) runner_pool_idle(ctx->pool); /* the group's pool runs the steps from here */
    int32_t token = -1;
    if (st == RUNNER_OK && out->finish == RUNNER_FINISH_LENGTH && p->max_tokens > 0 &&
        emit(&g, runner_context_logits(ctx), pos, &token, &st)) {
        if (p->draft) {
            st = speculate(&g, token, pos, rows);
        } else {
            /* One token a step: evaluate the emitted token, sample the next from its logits. */
            for (;;) {
                if (pos >= ctx->params.n_ctx && !shift_when_full(&g, &pos)) {
                    out->finish = RUNNER_FINISH_CONTEXT;
                    break;
                }
                st = aborted_is_finish(grouped ? runner_group_decode(p->group, ctx, token, pos, err, err_len)
                                               : runner_decode(ctx, &token, 1, pos, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len),
                                       out);
                if (st != RUNNER_OK || out->finish == RUNNER_FINISH_ABORTED) break;
                pos++;
                if (!emit(&g, runner_context_logits(ctx), pos, &token, &st)) break;
            }
        }
    }
    out->decode_ms = now_ms() - t1;
    if (grouped) runner_group_leave(p->group);
    runner_pool_idle(ctx->pool);
    runner_sampler_free(g.sampler);
    free(g.bits), free(g.seq), free(rows);
    return st;
}
