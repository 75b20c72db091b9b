/* Generation: prompt processing, then sample -> evaluate -> sample ..., entirely in native code. */
#include <time.h>

#include "core/status.h"
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
    const runner_status created = runner_sampler_create(p->sampling, n_vocab, &sampler, err, err_len);
    if (created != RUNNER_OK) return created;
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
    while (st == RUNNER_OK && out->finish == RUNNER_FINISH_LENGTH && out->n_generated < p->max_tokens) {
        if (abort_flag && *abort_flag) {
            out->finish = RUNNER_FINISH_ABORTED;
            break;
        }
        runner_sample_result r;
        const int32_t token = runner_sampler_sample(sampler, runner_context_logits(ctx), &r);
        if (token < 0) {
            st = runner_fail(err, err_len, RUNNER_ERR_MODEL, "every logit is banned or not finite at position %d", pos);
            break;
        }
        if (is_eog(p, token)) {
            out->finish = RUNNER_FINISH_EOG;
            out->eog_token = token;
            break;
        }
        out->n_generated++;
        runner_sampler_accept(sampler, token);
        if (on_token && on_token(user, &r) != 0) {
            out->finish = RUNNER_FINISH_STOPPED;
            break;
        }
        if (out->n_generated == p->max_tokens) break;
        if (pos >= ctx->params.n_ctx) {
            out->finish = RUNNER_FINISH_CONTEXT;
            break;
        }
        st = runner_decode(ctx, &token, 1, pos, RUNNER_LOGITS_LAST, NULL, abort_flag, err, err_len);
        if (st == RUNNER_ERR_ABORTED) {
            out->finish = RUNNER_FINISH_ABORTED;
            st = RUNNER_OK;
        }
        pos++;
    }
    out->decode_ms = now_ms() - t1;
    runner_pool_idle(ctx->pool);
    runner_sampler_free(sampler);
    return st;
}
