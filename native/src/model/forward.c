/*
 * The one forward pass of every family (docs/models.md), as a sequence of pool tasks per layer; a
 * family's differences are config fields and optional weights (biases, q/k norms, post-norms, GELU,
 * soft-caps, sliding windows, experts), never a second pass. Every task splits
 * its work over whole output elements (tokens, rows, heads), never across a reduction, so each
 * value is computed by one thread in one fixed order: results do not depend on the thread count,
 * the batch size or how a prompt was chunked.
 *
 * Numerics follow ggml where it makes a choice (ENGINE.md): RMS norm sums squares in double, rope
 * angles come from the per-context cache built by repeated multiplication, attention is tiled with
 * an online softmax in a fixed order (ops/attn_tile.h), SiLU is x / (1 + e^-x), GELU goes through ggml's F16 table,
 * and quantized weights dot against activations quantized once per matmul.
 */
#include <math.h>

#include "core/status.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/moe.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"

static void add_row(float *x, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] + b[i];
}

/* RMS norm of q or k before rope: per head (qwen3, gemma3) or over the whole projection (olmo2), as
 * the weight's width says (model/roles.c admits exactly these two). */
static void qk_norm_row(float *x, const runner_weight *w, int32_t n_heads, int32_t head_dim, float eps) {
    if (w->ne[0] == head_dim) runner_head_norm_row(x, n_heads, head_dim, (const float *)w->data, eps);
    else runner_rmsnorm_row(x, (const float *)w->data, x, w->ne[0], eps);
}

/* ---- per-token element-wise tasks --------------------------------------------------------- */

static void embed_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    runner_step *st = arg;
    const runner_model *m = st->ctx->model;
    const runner_weight *e = &m->tok_embd;
    for (int64_t t = t0; t < t1; t++) {
        float *x = st->ctx->s.x + (size_t)t * m->cfg.n_embd;
        e->traits->to_float(e->data + (size_t)st->tokens[t] * e->row_bytes, x, m->cfg.n_embd);
        if (m->cfg.embedding_scale > 0.0f)
            for (int32_t i = 0; i < m->cfg.n_embd; i++) x[i] = x[i] * m->cfg.embedding_scale;
    }
}

static void rope_store_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    runner_step *st = arg;
    runner_context *ctx = st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const size_t n_q = (size_t)c->n_head * c->head_dim, n_kv = (size_t)c->n_head_kv * c->head_dim;
    const int32_t half = c->n_rot / 2;
    const int neox = c->rope_type == RUNNER_ROPE_NEOX;
    const runner_layer *L = &ctx->model->layers[st->layer];
    /* A NoPE block (smollm3) attends without positions: llama.cpp skips ggml_rope_ext there. */
    const int rope = !(c->nope_layers && c->nope_layers[st->layer]);
    for (int64_t t = t0; t < t1; t++) {
        const runner_segment *seg = runner_step_segment(st, t);
        runner_context *seq = seg->seq;
        const int32_t p = seg->pos + (int32_t)(t - seg->t0);
        const int swa_rope = L->swa && seq->rope_cos_swa;
        const float *rc = swa_rope ? seq->rope_cos_swa : seq->rope_cos, *rs = swa_rope ? seq->rope_sin_swa : seq->rope_sin;
        const float *cs = rc + (size_t)p * half, *sn = rs + (size_t)p * half;
        float *q = ctx->s.q + t * n_q, *k = ctx->s.k + t * n_kv, *v = ctx->s.v + t * n_kv;
        if (L->bq.data) add_row(q, (const float *)L->bq.data, (int64_t)n_q);
        if (L->bk.data) add_row(k, (const float *)L->bk.data, (int64_t)n_kv);
        if (L->bv.data) add_row(v, (const float *)L->bv.data, (int64_t)n_kv);
        if (L->q_norm.data) {
            qk_norm_row(q, &L->q_norm, c->n_head, c->head_dim, c->norm_eps);
            qk_norm_row(k, &L->k_norm, c->n_head_kv, c->head_dim, c->norm_eps);
        }
        if (rope) {
            runner_rope_row(q, c->n_head, c->head_dim, c->n_rot, neox, cs, sn);
            runner_rope_row(k, c->n_head_kv, c->head_dim, c->n_rot, neox, cs, sn);
        }
        if (c->query_scale > 0.0f) /* gemma: the query is scaled before the scores (ggml_scale of Qcur) */
            for (size_t i = 0; i < n_q; i++) q[i] = q[i] * c->query_scale;
        runner_kv_cache_store(&seq->kv, st->layer, p, k, v);
    }
}

static void swiglu_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    runner_step *st = arg;
    runner_context *ctx = st->ctx;
    const int64_t n_ff = ctx->model->cfg.n_ff;
    for (int64_t t = t0; t < t1; t++) runner_gated_act_row(ctx->model->cfg.ffn_act, ctx->s.gate + t * n_ff, ctx->s.up + t * n_ff, n_ff);
}

/* Post-norm (gemma): the sublayer's output in xn is RMS-normed with `post`, then added to the residual. */
typedef struct post_norm_args {
    runner_step *st;
    const float *w;
} post_norm_args;

static void post_norm_add_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    post_norm_args *a = arg;
    runner_context *ctx = a->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    for (int64_t t = t0; t < t1; t++) {
        float *o = ctx->s.xn + (size_t)t * c->n_embd, *x = ctx->s.x + (size_t)t * c->n_embd;
        runner_rmsnorm_row(o, a->w, o, c->n_embd, c->norm_eps);
        for (int32_t i = 0; i < c->n_embd; i++) x[i] = o[i] + x[i];
    }
}

static void post_norm_add(runner_context *ctx, runner_step *st, const runner_weight *post) {
    post_norm_args a = {.st = st, .w = (const float *)post->data};
    runner_pool_for(ctx->pool, st->n_tok, runner_token_chunk(ctx, st->n_tok), post_norm_add_task, &a);
}

/* EMBD: each token's residual row, RMS-normed by output_norm into xn (row t at t * n_embd). */
static void output_norm_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    runner_step *st = arg;
    runner_context *ctx = st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const float *w = (const float *)ctx->model->output_norm.data;
    for (int64_t t = t0; t < t1; t++)
        runner_rmsnorm_row(ctx->s.x + (size_t)t * c->n_embd, w, ctx->s.xn + (size_t)t * c->n_embd, c->n_embd, c->norm_eps);
}

static int aborted(const volatile int32_t *flag) {
    return flag && *flag;
}

/* Attention sublayer: norm, Q/K/V, rope and cache, attention, output projection into the residual. */
static void attention_block(runner_context *ctx, const runner_layer *L, runner_step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    /* Without a pre-norm (olmo2: its post-norm norms the output instead) the projections read x as it is. */
    const int pre = L->attn_norm.data != NULL;
    runner_matmul_group qkv = {.ctx = ctx, .n_tok = n, .in = pre ? s->xn : s->x, .n_in = c->n_embd, .norm_src = pre ? s->x : NULL,
                               .norm_w = (const float *)L->attn_norm.data};
    runner_group_add(&qkv, &L->wq, s->q, 0);
    runner_group_add(&qkv, &L->wk, s->k, 0);
    runner_group_add(&qkv, &L->wv, s->v, 0);
    runner_group_run(&qkv);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), rope_store_task, st);
    runner_attention(ctx, st);
    runner_matmul_group wo = {.ctx = ctx, .n_tok = n, .in = s->att, .n_in = (int64_t)c->n_head * c->head_dim};
    if (L->attn_post_norm.data) {
        runner_group_add(&wo, &L->wo, s->xn, 0);
        runner_group_run(&wo);
        post_norm_add(ctx, st, &L->attn_post_norm);
        return;
    }
    runner_group_add_scaled(&wo, &L->wo, s->x, 1, c->residual_scale > 0.0f ? c->residual_scale : 1.0f);
    runner_group_run(&wo);
}

/* FFN sublayer: norm, gate and up, SwiGLU, down projection into the residual. */
static void ffn_block(runner_context *ctx, const runner_layer *L, runner_step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    const int pre = L->ffn_norm.data != NULL;
    runner_matmul_group ffn = {.ctx = ctx, .n_tok = n, .in = pre ? s->xn : s->x, .n_in = c->n_embd, .norm_src = pre ? s->x : NULL,
                               .norm_w = (const float *)L->ffn_norm.data};
    runner_group_add(&ffn, &L->w_gate, s->gate, 0);
    runner_group_add(&ffn, &L->w_up, s->up, 0);
    runner_group_run(&ffn);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), swiglu_task, st);
    runner_matmul_group down = {.ctx = ctx, .n_tok = n, .in = s->gate, .n_in = c->n_ff};
    if (L->ffn_post_norm.data) {
        runner_group_add(&down, &L->w_down, s->xn, 0);
        runner_group_run(&down);
        post_norm_add(ctx, st, &L->ffn_post_norm);
        return;
    }
    runner_group_add_scaled(&down, &L->w_down, s->x, 1, c->residual_scale > 0.0f ? c->residual_scale : 1.0f);
    runner_group_run(&down);
}


/* Final logit soft-capping (gemma2): logits = cap * tanh(logits / cap), as three ggml ops. */
typedef struct softcap_args {
    float *rows;
    int64_t n;
    float cap;
} softcap_args;

static void softcap_task(void *arg, int64_t r0, int64_t r1, int ith) {
    (void)ith;
    softcap_args *a = arg;
    const float inv = 1.0f / a->cap;
    for (int64_t r = r0; r < r1; r++) {
        float *l = a->rows + r * a->n;
        for (int64_t i = 0; i < a->n; i++) l[i] = tanhf(l[i] * inv) * a->cap;
    }
}

runner_status runner_forward(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                             const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    const runner_segment one = {.seq = ctx, .t0 = 0, .n = n, .pos = pos};
    return runner_forward_segments(ctx, tokens, n, &one, 1, NULL, logits_mode, abort_flag, err, err_len);
}

runner_status runner_forward_segments(runner_context *ctx, const int32_t *tokens, int32_t n, const runner_segment *segs, int32_t n_segs,
                                      const int32_t *seg_of, int32_t logits_mode, const volatile int32_t *abort_flag, char *err,
                                      int32_t err_len) {
    const runner_model *m = ctx->model;
    const runner_model_config *c = &m->cfg;
    runner_scratch *s = &ctx->s;
    const int64_t n_embd = c->n_embd;
    runner_step st = {.ctx = ctx, .tokens = tokens, .n_tok = n, .layer = 0, .segs = segs, .n_segs = n_segs, .seg_of = seg_of};

    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), embed_task, &st);
    for (int32_t l = 0; l < c->n_layer; l++) {
        if (aborted(abort_flag)) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted at layer %d", l);
        const runner_layer *L = &m->layers[l];
        st.layer = l;
        /* A removed sublayer adds nothing to the residual stream: skip it (it has no KV cache). */
        if (!L->attn_removed) attention_block(ctx, L, &st);
        if (!L->ffn_removed) {
            if (c->n_expert > 0) runner_moe_block(ctx, L, &st);
            else ffn_block(ctx, L, &st);
        }
    }
    if (logits_mode == RUNNER_LOGITS_NONE) return RUNNER_OK;
    if (logits_mode == RUNNER_LOGITS_EMBD) {
        /* The rows the head would read (the same runner_rmsnorm_row as its fused norm), without the head. */
        runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), output_norm_task, &st);
        return RUNNER_OK;
    }
    /* The head runs only on the tokens whose logits are wanted (LAST: the final one, into row 0). */
    const int32_t first = logits_mode == RUNNER_LOGITS_LAST ? n - 1 : 0;
    runner_matmul_group head = {.ctx = ctx, .n_tok = n - first, .in = s->xn, .n_in = n_embd,
                         .norm_src = s->x + (size_t)first * n_embd, .norm_w = (const float *)m->output_norm.data};
    runner_group_add_scaled(&head, &m->output, s->logits, 0, c->logit_scale > 0.0f ? 1.0f / c->logit_scale : 1.0f);
    runner_group_run(&head);
    if (c->final_softcap > 0.0f) {
        softcap_args a = {.rows = s->logits, .n = c->n_vocab, .cap = c->final_softcap};
        runner_pool_for(ctx->pool, n - first, 1, softcap_task, &a);
    }
    return RUNNER_OK;
}
