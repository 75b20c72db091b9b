/*
 * Contexts: the KV cache, the scratch of one forward step (sized once for n_batch tokens), the rope
 * angle caches and the thread pool; and decoding, which cuts a call's tokens into n_batch chunks.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "ops/attention.h"
#include "ops/rope.h"
#include "quant/amx.h"

void runner_context_free(runner_context *ctx) {
    if (!ctx) return;
    atomic_fetch_sub(&ctx->model->n_contexts, 1);
    if (ctx->pool) runner_pool_free(ctx->pool);
    runner_kv_cache_free(&ctx->kv);
    runner_scratch *s = &ctx->s;
    void *bufs[] = {s->x, s->xn, s->q, s->k, s->v, s->att, s->gate, s->up, s->logits, s->lora_tmp, s->act_q, s->attn, s->amx,
                    s->router, s->sel, s->sel_w, s->exp_gate, s->exp_up, s->exp_out, s->exp_act_q, s->exp_items};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(ctx->rope_cos);
    free(ctx->rope_sin);
    free(ctx->rope_cos_swa);
    free(ctx->rope_sin_swa);
    free(ctx);
}

/* The rope angles of a context, as ggml_rope_cache_init forms them. longrope: theta / factor and cos,
 * sin times attn_factor; llama.cpp picks the long factors when its context (padded to 256) exceeds
 * n_ctx_orig. YaRN: the ramp is placed by this cache's own base (ggml takes the op's freq_base). */
static void fill_rope_cache(const runner_context *ctx, float base, float freq_scale, float *cos_out, float *sin_out) {
    const runner_model *m = ctx->model;
    const runner_model_config *c = &m->cfg;
    const int64_t padded = ((int64_t)ctx->params.n_ctx + 255) / 256 * 256;
    const int32_t orig = c->n_ctx_orig > 0 ? c->n_ctx_orig : c->n_ctx_train;
    const runner_weight *fw = padded > orig && m->rope_long.data ? &m->rope_long : m->rope_short.data ? &m->rope_short : m->rope_long.data ? &m->rope_long : NULL;
    const float *ff = fw ? (const float *)fw->data : NULL;
    const float mscale = c->rope_attn_factor > 0.0f ? c->rope_attn_factor : 1.0f;
    const int yarn_on = c->rope_ext_factor != 0.0f;
    runner_rope_yarn yarn = {0};
    if (yarn_on) yarn = runner_rope_yarn_params(c->n_rot, orig, base, c->rope_ext_factor, c->rope_beta_fast, c->rope_beta_slow);
    runner_rope_cache_fill(cos_out, sin_out, ctx->params.n_ctx, c->n_rot, base, freq_scale, ff, mscale, yarn_on ? &yarn : NULL);
}

/* Sliding-window layers need their own rope cache when their base or scale differs. */
static int swa_rope_differs(const runner_model_config *c) {
    const float base = c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base;
    const float scale = c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale;
    return c->n_swa > 0 && (base != c->rope_freq_base || scale != c->rope_freq_scale);
}

/* Every scratch buffer of one step over n_batch tokens; 0 when one could not be had. */
static int alloc_scratch(runner_context *ctx) {
    const runner_model_config *c = &ctx->model->cfg;
    const runner_context_params *p = &ctx->params;
    runner_scratch *s = &ctx->s;
    const size_t nb = (size_t)p->n_batch, n_q = (size_t)c->n_head * c->head_dim, n_kv = (size_t)c->n_head_kv * c->head_dim;
    size_t widest = (size_t)c->n_embd;
    if (n_q > widest) widest = n_q;
    if ((size_t)c->n_ff > widest) widest = (size_t)c->n_ff;
    if ((size_t)c->n_ff_exp > widest) widest = (size_t)c->n_ff_exp;
    /* The MTP head's projection reads [embedding ++ hidden state] rows (forward.c runner_forward_mtp). */
    if (c->n_nextn > 0 && 2 * (size_t)c->n_embd > widest) widest = 2 * (size_t)c->n_embd;
    /* A LoRA pair's b reads the rank-wide a x as its input (quantized like any activation row). */
    const size_t rank = (size_t)ctx->model->lora_max_rank;
    if (rank > widest) widest = rank;
    /* Quantized activation rows take at most 4 bytes per value (F32) plus block headers; 5 covers every type. */
    s->act_q_row_bytes = (widest * 5 + 63) & ~(size_t)63;
    s->x = runner_alloc_array(nb, (size_t)c->n_embd * sizeof(float));
    s->xn = runner_alloc_array(nb, widest * sizeof(float));
    s->q = runner_alloc_array(nb, n_q * sizeof(float));
    s->k = runner_alloc_array(nb, n_kv * sizeof(float));
    s->v = runner_alloc_array(nb, n_kv * sizeof(float));
    s->att = runner_alloc_array(nb, n_q * sizeof(float));
    s->gate = runner_alloc_array(nb, (size_t)c->n_ff * sizeof(float));
    s->up = runner_alloc_array(nb, (size_t)c->n_ff * sizeof(float));
    s->logits = runner_alloc_array(nb, (size_t)c->n_vocab * sizeof(float));
    s->act_q = runner_alloc_array(nb * RUNNER_ACT_SLOTS, s->act_q_row_bytes);
    s->attn_floats = runner_attention_workspace_floats(c->head_dim);
    s->attn = runner_alloc_array((size_t)p->n_threads, s->attn_floats * sizeof(float));
    if (rank > 0) s->lora_tmp = runner_alloc_array(nb, rank * sizeof(float));
    ctx->rope_cos = runner_alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
    ctx->rope_sin = runner_alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
    int ok = s->x && s->xn && s->q && s->k && s->v && s->att && s->gate && s->up && s->logits && s->act_q && s->attn &&
             ctx->rope_cos && ctx->rope_sin && (rank == 0 || s->lora_tmp);
    /* AMX tiles need a prompt's worth of tokens; a context of smaller batches never reaches them. */
    const runner_amx_isa *amx = nb >= RUNNER_AMX_TOKENS ? runner_amx_isa_in_use() : NULL;
    if (ok && amx) {
        s->amx_bytes = runner_amx_workspace_bytes((int64_t)((widest + 31) / 32 * 32)); /* every AMX weight's row fits */
        s->amx = runner_alloc_array((size_t)p->n_threads, s->amx_bytes);
        s->amx_isa = amx;
        ok = s->amx != NULL;
    }
    if (ok && swa_rope_differs(c)) {
        ctx->rope_cos_swa = runner_alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ctx->rope_sin_swa = runner_alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ok = ctx->rope_cos_swa && ctx->rope_sin_swa;
    }
    if (ok && c->n_expert > 0) {
        const size_t nk = nb * (size_t)c->n_expert_used;
        s->router = runner_alloc_array(nb, (size_t)c->n_expert * sizeof(float));
        s->sel = runner_alloc_array(nk, sizeof(int32_t));
        s->sel_w = runner_alloc_array(nk, sizeof(float));
        s->exp_gate = runner_alloc_array(nk, (size_t)c->n_ff_exp * sizeof(float));
        s->exp_up = runner_alloc_array(nk, (size_t)c->n_ff_exp * sizeof(float));
        s->exp_out = runner_alloc_array(nk, (size_t)c->n_embd * sizeof(float));
        s->exp_act_q = runner_alloc_array(nk, s->act_q_row_bytes);
        s->exp_items = runner_alloc_array(nk, sizeof(int32_t));
        ok = s->router && s->sel && s->sel_w && s->exp_gate && s->exp_up && s->exp_out && s->exp_act_q && s->exp_items;
    }
    return ok;
}

runner_status runner_context_create(runner_model *model, const runner_context_params *p, runner_context **out,
                                    char *err, int32_t err_len) {
    *out = NULL;
    const runner_model_config *c = &model->cfg;
    if (p->n_ctx < 1 || p->n_ctx > (1 << 24))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_ctx %d out of range [1, 16777216]", p->n_ctx);
    if (p->n_batch < 1 || p->n_batch > 65536)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_batch %d out of range [1, 65536]", p->n_batch);
    if (p->n_threads < 1 || p->n_threads > 256)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_threads %d out of range [1, 256]", p->n_threads);
    if (p->kv_type != RUNNER_KV_F16 && p->kv_type != RUNNER_KV_F32)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "kv_type %d is not f16 (1) or f32 (0)", p->kv_type);
    if (p->blocks != RUNNER_CONTEXT_MODEL && p->blocks != RUNNER_CONTEXT_MTP)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "blocks %d is not the model's (0) or the MTP head's (1)", p->blocks);
    if (p->blocks == RUNNER_CONTEXT_MTP && c->n_nextn < 1)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "an MTP context: the model has no NextN (MTP) head");
    runner_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    ctx->model = model;
    atomic_fetch_add(&model->n_contexts, 1); /* runner_context_free gives it back, on every path below */
    ctx->params = *p;
    uint8_t attn_removed[RUNNER_MAX_LAYERS], swa[RUNNER_MAX_LAYERS];
    /* A KV cache only for the blocks the context runs: the model's pass never runs a NextN block, an
     * MTP draft's context runs nothing else. */
    const int32_t first_nextn = c->n_layer - c->n_nextn;
    for (int32_t l = 0; l < c->n_layer; l++) {
        attn_removed[l] = model->layers[l].attn_removed || (p->blocks == RUNNER_CONTEXT_MTP) != (l >= first_nextn);
        swa[l] = model->layers[l].swa;
    }
    const runner_kv_shape shape = {.n_layer = c->n_layer, .n_head_kv = c->n_head_kv, .head_dim = c->head_dim, .n_ctx = p->n_ctx,
                                   .type = p->kv_type, .attn_removed = attn_removed, .swa = p->swa_full ? NULL : swa,
                                   .n_swa = c->n_swa, .n_batch = p->n_batch};
    /* The KV cache first: it refuses, before anything is allocated, a size this machine could never hold. */
    runner_status st = runner_kv_cache_create(&ctx->kv, &shape, err, err_len);
    if (st != RUNNER_OK) {
        atomic_fetch_sub(&model->n_contexts, 1);
        free(ctx);
        return st;
    }
    if (!alloc_scratch(ctx)) {
        runner_context_free(ctx);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "cannot allocate the scratch of a context of %d positions and batch %d",
                           p->n_ctx, p->n_batch);
    }
    fill_rope_cache(ctx, c->rope_freq_base, c->rope_freq_scale, ctx->rope_cos, ctx->rope_sin);
    if (ctx->rope_cos_swa)
        fill_rope_cache(ctx, c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base,
                        c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale, ctx->rope_cos_swa, ctx->rope_sin_swa);
    ctx->pool = runner_pool_create(p->n_threads);
    if (!ctx->pool) {
        runner_context_free(ctx);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "cannot start %d threads", p->n_threads);
    }
    *out = ctx;
    return RUNNER_OK;
}

uint64_t runner_context_kv_bytes(const runner_context *ctx) {
    return ctx->kv.bytes;
}

void runner_context_kv_info(const runner_context *ctx, runner_kv_info *out) {
    *out = (runner_kv_info){.bytes = ctx->kv.bytes, .flat_bytes = ctx->kv.flat_bytes, .ring_layers = ctx->kv.n_ring,
                            .ring_positions = ctx->kv.ring_blocks * RUNNER_ATTN_BLOCK};
}

int32_t runner_kv_min_keep(const runner_context *ctx) {
    return runner_kv_cache_min_keep(&ctx->kv);
}

int32_t runner_context_n_past(const runner_context *ctx) {
    return ctx->kv.n_past;
}

runner_status runner_kv_truncate(runner_context *ctx, int32_t n_keep, char *err, int32_t err_len) {
    runner_status st = runner_kv_cache_truncate(&ctx->kv, n_keep, err, err_len);
    if (st == RUNNER_OK) ctx->last_logits = NULL;
    return st;
}

const float *runner_context_logits(const runner_context *ctx) {
    return ctx->last_logits;
}

runner_status runner_decode(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                            float *logits, const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    const runner_model_config *c = &ctx->model->cfg;
    if (n < 1 || !tokens) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: no tokens");
    if (ctx->params.blocks == RUNNER_CONTEXT_MTP)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: an MTP context runs only the NextN head (a draft's)");
    if (pos < 0 || pos > ctx->kv.n_past)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: position %d is past the %d cached positions",
                           pos, ctx->kv.n_past);
    if ((int64_t)pos + n > ctx->params.n_ctx)
        return runner_fail(err, err_len, RUNNER_ERR_CONTEXT_FULL,
                           "%d tokens at position %d do not fit in the context of %d positions", n, pos, ctx->params.n_ctx);
    if (logits_mode < RUNNER_LOGITS_NONE || logits_mode > RUNNER_LOGITS_EMBD)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: logits mode %d", logits_mode);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token %d at index %d is outside the vocabulary of %d",
                               tokens[i], i, c->n_vocab);
    /* Rewriting cached positions is a truncate: refused where a ring lost what the window needs. */
    if (pos < ctx->kv.n_past) {
        const runner_status st = runner_kv_cache_truncate(&ctx->kv, pos, err, err_len);
        if (st != RUNNER_OK) return st;
    }
    ctx->kv.n_past = pos;
    ctx->last_logits = NULL;
    for (int32_t done = 0; done < n;) {
        const int32_t chunk = n - done < ctx->params.n_batch ? n - done : ctx->params.n_batch;
        runner_kv_cache_reserve(&ctx->kv, pos + done + chunk);
        const int last_chunk = done + chunk == n;
        int32_t mode = logits_mode == RUNNER_LOGITS_ALL || logits_mode == RUNNER_LOGITS_EMBD ? logits_mode
                       : (logits_mode == RUNNER_LOGITS_LAST && last_chunk)                 ? RUNNER_LOGITS_LAST
                                                                                            : RUNNER_LOGITS_NONE;
        runner_status st = runner_forward(ctx, tokens + done, chunk, pos + done, mode, abort_flag, err, err_len);
        if (st != RUNNER_OK) return st;
        ctx->kv.n_past = pos + done + chunk;
        if (logits && mode == RUNNER_LOGITS_EMBD)
            memcpy(logits + (size_t)done * c->n_embd, ctx->s.xn, (size_t)chunk * c->n_embd * sizeof(float));
        else if (logits && mode == RUNNER_LOGITS_ALL)
            memcpy(logits + (size_t)done * c->n_vocab, ctx->s.logits, (size_t)chunk * c->n_vocab * sizeof(float));
        else if (logits && mode == RUNNER_LOGITS_LAST)
            memcpy(logits, ctx->s.logits, (size_t)c->n_vocab * sizeof(float));
        /* The scratch holds this chunk's rows: ALL, one per token (the last is the call's last
         * token's); LAST, row 0. */
        if (last_chunk && (mode == RUNNER_LOGITS_ALL || mode == RUNNER_LOGITS_LAST))
            ctx->last_logits = ctx->s.logits + (mode == RUNNER_LOGITS_ALL ? (size_t)(chunk - 1) * c->n_vocab : 0);
        done += chunk;
    }
    return RUNNER_OK;
}
