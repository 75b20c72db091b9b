/* Generation: prompt processing, then sample -> evaluate -> sample ..., entirely in native code. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "core/status.h"
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

/* Context shift (params.context_shift): a full context keeps its first shift_keep positions and drops
 * half of the rest, as llama.cpp's --context-shift does. 0 when it is off or nothing can go: the
 * generation then ends with "context". */
static int shift_when_full(runner_context *ctx, const runner_generate_params *p, int32_t *pos, runner_generate_stats *out) {
    const int32_t n_ctx = ctx->params.n_ctx;
    if (!p->context_shift) return 0;
    int32_t keep = p->shift_keep > 0 ? p->shift_keep : 0;
    if (keep > n_ctx - 4) keep = n_ctx > 4 ? n_ctx - 4 : 0;
    const int32_t discard = (*pos - keep) / 2;
    if (discard < 1 || runner_kv_shift(ctx, keep, discard, NULL, 0) != RUNNER_OK) return 0;
    *pos -= discard;
    out->n_shifts++;
    out->n_discarded += discard;
    return 1;
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
    const int32_t n_vocab = ctx->model->cfg.n_vocab;
    runner_sampler *sampler = NULL;
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
    uint32_t *bits = NULL;
    const int32_t n_words = (n_vocab + 31) / 32;
    if (p->matcher && !(bits = malloc((size_t)n_words * sizeof *bits)))
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "generate: the grammar mask");
    const runner_status created = runner_sampler_create(p->sampling, n_vocab, &sampler, err, err_len);
    if (created != RUNNER_OK) {
        free(bits);
        return created;
    }
    for (int32_t i = 0; i < p->n_history; i++) runner_sampler_accept(sampler, p->history[i]);
    for (int32_t i = 0; i < p->n_prompt; i++) runner_sampler_accept(sampler, p->prompt[i]);

    out->n_prompt = p->n_prompt;
    double t0 = now_ms();
    runner_status st = runner_decode(ctx, p->prompt, p->n_prompt, p->pos, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len);
    double t1 = now_ms();
    out->prompt_ms = t1 - t0;
    if (st == RUNNER_ERR_ABORTED) {
        out->finish = RUNNER_FINISH_ABORTED;
        st = RUNNER_OK;
    }
    int32_t pos = p->pos + p->n_prompt;
    /* The decode phase: in the group's steps when it has room (results are the same either way). */
    const int grouped = p->group && runner_group_enter(p->group);
    if (grouped) runner_pool_idle(ctx->pool); /* the group's pool runs the steps from here */
    int have_step = 0;        /* bits already hold this step's mask */
    int32_t next_forced = -1; /* and its forced token */
    while (st == RUNNER_OK && out->finish == RUNNER_FINISH_LENGTH && out->n_generated < p->max_tokens) {
        if (abort_flag && *abort_flag) {
            out->finish = RUNNER_FINISH_ABORTED;
            break;
        }
        runner_sample_result r;
        int32_t forced = -1;
        if (p->matcher && !have_step) {
            int done = 0;
            if ((st = timed_step(p, bits, n_words, &forced, &done, out, err, err_len)) != RUNNER_OK) break;
            if (done) {
                out->finish = RUNNER_FINISH_EOG;
                break;
            }
        } else if (p->matcher) {
            forced = next_forced; /* computed right after the previous token (below) */
            have_step = 0;
        }
        int32_t token;
        if (forced >= 0 && forced_is_banned(p->sampling, runner_context_logits(ctx), forced)) {
            token = -1;
        } else if (forced >= 0) {
            /* The masked distribution puts all its mass on one token: take it without a draw. */
            token = forced;
            r = (runner_sample_result){.token = token, .logprob = p->sampling->logprobs ? 0.0f : NAN, .forced = 1};
            if (p->sampling->n_top_logprobs > 0) r.n_top = 1, r.top_tokens[0] = token, r.top_logprobs[0] = 0.0f;
            out->n_forced++;
        } else {
            token = runner_sampler_sample_masked(sampler, runner_context_logits(ctx), bits, &r);
        }
        if (token < 0) {
            st = runner_fail(err, err_len, RUNNER_ERR_MODEL, p->matcher ? "every token the grammar allows has a banned or non-finite logit at position %d"
                                                                         : "every logit is banned or not finite at position %d", pos);
            break;
        }
        if (is_eog(p, token)) {
            out->finish = RUNNER_FINISH_EOG;
            out->eog_token = token;
            break;
        }
        if (p->matcher && (st = runner_matcher_accept_token(p->matcher, token, err, err_len)) != RUNNER_OK) break;
        out->n_generated++;
        runner_sampler_accept(sampler, token);
        if (on_token && on_token(user, &r) != 0) {
            out->finish = RUNNER_FINISH_STOPPED;
            break;
        }
        if (p->matcher) {
            /* The next step's mask now: a document this token completed, with nothing to extend it,
             * ends here ("eos" even on the last token of the budget), without evaluating the token. */
            int done = 0;
            if ((st = timed_step(p, bits, n_words, &next_forced, &done, out, err, err_len)) != RUNNER_OK) break;
            if (done) {
                out->finish = RUNNER_FINISH_EOG;
                break;
            }
            have_step = 1;
        }
        if (out->n_generated == p->max_tokens) break;
        if (pos >= ctx->params.n_ctx && !shift_when_full(ctx, p, &pos, out)) {
            out->finish = RUNNER_FINISH_CONTEXT;
            break;
        }
        st = grouped ? runner_group_decode(p->group, ctx, token, pos, err, err_len)
                     : runner_decode(ctx, &token, 1, pos, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len);
        if (st == RUNNER_ERR_ABORTED) {
            out->finish = RUNNER_FINISH_ABORTED;
            st = RUNNER_OK;
        }
        pos++;
    }
    out->decode_ms = now_ms() - t1;
    if (grouped) runner_group_leave(p->group);
    runner_pool_idle(ctx->pool);
    runner_sampler_free(sampler);
    free(bits);
    return st;
}
