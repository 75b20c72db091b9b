/*
 * Context shift (llama.cpp's --context-shift, issue #23): positions [n_keep, n_keep + n_discard) are
 * forgotten and the later ones move down by n_discard. Their cached keys were roped at their old
 * positions; rotating them by -n_discard (llama.cpp's K-shift: ggml_rope_ext of the cached K with the
 * position delta, in the cache's own precision) puts them where a rope at the new position would,
 * up to the rounding of two rotations instead of one, which is what llama.cpp's cache then holds too.
 * Values carry no position and are only moved.
 */
#include <stdlib.h>

#include "core/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "ops/rope.h"

/* Why a shift would not be exact on this context, as data: the first that applies refuses it. */
typedef struct shift_refusal {
    int (*applies)(const runner_context *ctx);
    const char *why;
} shift_refusal;

static int has_ring(const runner_context *ctx) {
    return ctx->kv.n_ring > 0;
}
static int scales_rope(const runner_context *ctx) {
    const float f = ctx->model->cfg.rope_attn_factor;
    return f > 0.0f && f != 1.0f;
}
static int has_yarn(const runner_context *ctx) {
    return ctx->model->cfg.rope_ext_factor != 0.0f;
}
static int has_rope_factors(const runner_context *ctx) {
    return ctx->model->rope_long.data || ctx->model->rope_short.data;
}

static const shift_refusal REFUSALS[] = {
    {has_ring, "its sliding-window layers hold a ring, which has already overwritten what a shift would move into their windows "
               "(llama.cpp refuses it too unless its SWA cache is full-size): use --swa-full"},
    {scales_rope, "the model's rope multiplies cos and sin by an attention factor, so rotating a cached key again scales it again: "
                  "re-roping is not a pure rotation"},
    {has_yarn, "YaRN rope scaling multiplies cos and sin by its magnitude correction, so rotating a cached key again scales it again: "
               "re-roping is not a pure rotation (llama.cpp's shift scales it too)"},
    {has_rope_factors, "longrope picks its frequency factors by the context's length; re-roping with them is not built"},
};

runner_status runner_kv_can_shift(const runner_context *ctx, char *err, int32_t err_len) {
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++)
        if (REFUSALS[i].applies(ctx))
            return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "context shift is refused on this context: %s", REFUSALS[i].why);
    return RUNNER_OK;
}

typedef struct shift_job {
    runner_context *ctx;
    int32_t n_keep, n_discard, n_moved;
    float *rows; /* a K row of scratch per thread */
} shift_job;

/* head_dim is at most 1024 (model/config.c), so n_rot / 2 at most 512. */
#define MAX_HALF_ROT 512

/* One layer: move, then rotate each moved key by -n_discard with the layer's own rope base and scale. */
static void shift_layer_task(void *arg, int64_t l0, int64_t l1, int ith) {
    const shift_job *job = arg;
    const runner_context *ctx = job->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const runner_kv_cache *kv = &ctx->kv;
    float cs[MAX_HALF_ROT], sn[MAX_HALF_ROT], *k = job->rows + (size_t)ith * kv->row_values;
    for (int64_t l = l0; l < l1; l++) {
        const runner_layer *L = &ctx->model->layers[l];
        if (!kv->k[l]) continue; /* attention removed: no cache */
        runner_kv_cache_move(kv, (int32_t)l, job->n_keep, job->n_keep + job->n_discard, job->n_moved);
        if (c->nope_layers && c->nope_layers[l]) continue; /* NoPE: keys carry no position */
        const float base = L->swa && c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base;
        const float scale = L->swa && c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale;
        runner_rope_angles(cs, sn, -job->n_discard, c->n_rot, base, scale, NULL, 1.0f, NULL);
        for (int32_t p = job->n_keep; p < job->n_keep + job->n_moved; p++) {
            runner_kv_cache_read_k(kv, (int32_t)l, p, k);
            runner_rope_row(k, c->n_head_kv, c->head_dim, c->n_rot, c->rope_type == RUNNER_ROPE_NEOX, cs, sn);
            runner_kv_cache_write_k(kv, (int32_t)l, p, k);
        }
    }
}

runner_status runner_kv_shift(runner_context *ctx, int32_t n_keep, int32_t n_discard, char *err, int32_t err_len) {
    const runner_status st = runner_kv_can_shift(ctx, err, err_len);
    if (st != RUNNER_OK) return st;
    const int32_t n_past = ctx->kv.n_past;
    if (n_keep < 0 || n_discard < 1 || (int64_t)n_keep + n_discard > n_past)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "kv shift: keep %d and discard %d do not fit in the %d cached positions",
                           n_keep, n_discard, n_past);
    shift_job job = {.ctx = ctx, .n_keep = n_keep, .n_discard = n_discard, .n_moved = n_past - n_keep - n_discard};
    job.rows = malloc((size_t)ctx->params.n_threads * ctx->kv.row_values * sizeof(float));
    if (!job.rows) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "kv shift: a key row per thread");
    runner_pool_for(ctx->pool, ctx->model->cfg.n_layer, 1, shift_layer_task, &job);
    free(job.rows);
    ctx->kv.n_past = n_past - n_discard;
    return RUNNER_OK;
}
