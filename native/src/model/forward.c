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
        const size_t rp = (size_t)(p + seg->rope_off);
        const float *cs = rc + rp * half, *sn = rs + rp * half;
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

/* The LoRA deltas of weight w (runner.h runner_model_add_lora): out += s * (b (a in)) for each pair, in
 * attach order, on the n token rows of `in` (width n_in) that produced out. As llama.cpp's build_lora_mm:
 * a x is a matmul of its own (rounded to float), b's result is scaled, then added. */
static void lora_apply(runner_context *ctx, const runner_weight *w, const float *in, int64_t n_in, float *out, int32_t n) {
    for (const runner_lora_pair *p = w->lora; p; p = p->next) {
        runner_matmul_group a = {.ctx = ctx, .n_tok = n, .in = in, .n_in = n_in};
        runner_group_add(&a, &p->a, ctx->s.lora_tmp, 0);
        runner_group_run(&a);
        runner_matmul_group b = {.ctx = ctx, .n_tok = n, .in = ctx->s.lora_tmp, .n_in = p->a.ne[1]};
        runner_group_add_scaled(&b, &p->b, out, 1, p->scale);
        runner_group_run(&b);
    }
}

/* x += scale * xn, per token: a sublayer's output (in xn, its LoRA deltas added) into the residual. */
typedef struct residual_args {
    runner_step *st;
    float scale;
} residual_args;

static void residual_add_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    residual_args *a = arg;
    runner_context *ctx = a->st->ctx;
    const int32_t n_embd = ctx->model->cfg.n_embd;
    for (int64_t t = t0; t < t1; t++) {
        const float *o = ctx->s.xn + (size_t)t * n_embd;
        float *x = ctx->s.x + (size_t)t * n_embd;
        for (int32_t i = 0; i < n_embd; i++) x[i] = x[i] + (a->scale != 1.0f ? o[i] * a->scale : o[i]);
    }
}

/* A sublayer's output projection w of `in` into the residual: straight into x (accumulated, scaled),
 * or, when a post-norm or LoRA deltas come first, into xn, then normed and added or added. */
static void output_projection(runner_context *ctx, runner_step *st, const runner_weight *w, const float *in, int64_t n_in,
                              const runner_weight *post) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const float rs = c->residual_scale > 0.0f ? c->residual_scale : 1.0f;
    runner_matmul_group g = {.ctx = ctx, .n_tok = st->n_tok, .in = in, .n_in = n_in};
    if (!post->data && !w->lora) {
        runner_group_add_scaled(&g, w, s->x, 1, rs);
        runner_group_run(&g);
        return;
    }
    runner_group_add(&g, w, s->xn, 0);
    runner_group_run(&g);
    lora_apply(ctx, w, in, n_in, s->xn, st->n_tok);
    if (post->data) {
        post_norm_add(ctx, st, post);
        return;
    }
    residual_args a = {.st = st, .scale = rs};
    runner_pool_for(ctx->pool, st->n_tok, runner_token_chunk(ctx, st->n_tok), residual_add_task, &a);
}

/* Attention sublayer: norm, Q/K/V, rope and cache, attention, output projection into the residual. */
static void attention_block(runner_context *ctx, const runner_layer *L, runner_step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    /* Without a pre-norm (olmo2: its post-norm norms the output instead) the projections read x as it is. */
    const int pre = L->attn_norm.data != NULL;
    const float *in = pre ? s->xn : s->x;
    runner_matmul_group qkv = {.ctx = ctx, .n_tok = n, .in = in, .n_in = c->n_embd, .norm_src = pre ? s->x : NULL,
                               .norm_w = (const float *)L->attn_norm.data};
    runner_group_add(&qkv, &L->wq, s->q, 0);
    runner_group_add(&qkv, &L->wk, s->k, 0);
    runner_group_add(&qkv, &L->wv, s->v, 0);
    runner_group_run(&qkv);
    /* The group left the normed rows in `in`: the LoRA deltas read the projections' own input. */
    lora_apply(ctx, &L->wq, in, c->n_embd, s->q, n);
    lora_apply(ctx, &L->wk, in, c->n_embd, s->k, n);
    lora_apply(ctx, &L->wv, in, c->n_embd, s->v, n);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), rope_store_task, st);
    runner_attention(ctx, st);
    output_projection(ctx, st, &L->wo, s->att, (int64_t)c->n_head * c->head_dim, &L->attn_post_norm);
}

/* FFN sublayer: norm, gate and up, SwiGLU, down projection into the residual. */
static void ffn_block(runner_context *ctx, const runner_layer *L, runner_step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    const int pre = L->ffn_norm.data != NULL;
    const float *in = pre ? s->xn : s->x;
    runner_matmul_group ffn = {.ctx = ctx, .n_tok = n, .in = in, .n_in = c->n_embd, .norm_src = pre ? s->x : NULL,
                               .norm_w = (const float *)L->ffn_norm.data};
    runner_group_add(&ffn, &L->w_gate, s->gate, 0);
    runner_group_add(&ffn, &L->w_up, s->up, 0);
    runner_group_run(&ffn);
    lora_apply(ctx, &L->w_gate, in, c->n_embd, s->gate, n);
    lora_apply(ctx, &L->w_up, in, c->n_embd, s->up, n);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), swiglu_task, st);
    output_projection(ctx, st, &L->w_down, s->gate, c->n_ff, &L->ffn_post_norm);
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

/* Rows of logits times a scale (the head's 1 / logit_scale, when LoRA deltas came first). */
typedef struct scale_args {
    float *rows;
    int64_t n;
    float scale;
} scale_args;

static void scale_task(void *arg, int64_t r0, int64_t r1, int ith) {
    (void)ith;
    scale_args *a = arg;
    for (int64_t r = r0; r < r1; r++) {
        float *l = a->rows + r * a->n;
        for (int64_t i = 0; i < a->n; i++) l[i] = l[i] * a->scale;
    }
}

/* The head on the tokens whose logits are wanted (LAST: the final one, into row 0): norm_w's RMS norm
 * of the residual rows, the projection `out`, its LoRA deltas, logit scale and soft-cap. */
static void run_head(runner_context *ctx, int32_t n, int32_t logits_mode, const float *norm_w, const runner_weight *out) {
    const runner_model_config *c = &ctx->model->cfg;
    runner_scratch *s = &ctx->s;
    const int64_t n_embd = c->n_embd;
    const int32_t first = logits_mode == RUNNER_LOGITS_LAST ? n - 1 : 0;
    runner_matmul_group head = {.ctx = ctx, .n_tok = n - first, .in = s->xn, .n_in = n_embd,
                         .norm_src = s->x + (size_t)first * n_embd, .norm_w = norm_w};
    const float inv_scale = c->logit_scale > 0.0f ? 1.0f / c->logit_scale : 1.0f;
    /* With LoRA deltas on the head, llama.cpp scales the adapted projection: scale after adding them. */
    runner_group_add_scaled(&head, out, s->logits, 0, out->lora ? 1.0f : inv_scale);
    runner_group_run(&head);
    if (out->lora) {
        lora_apply(ctx, out, s->xn, n_embd, s->logits, n - first);
        if (inv_scale != 1.0f) {
            scale_args a = {.rows = s->logits, .n = c->n_vocab, .scale = inv_scale};
            runner_pool_for(ctx->pool, n - first, 1, scale_task, &a);
        }
    }
    if (c->final_softcap > 0.0f) {
        softcap_args a = {.rows = s->logits, .n = c->n_vocab, .cap = c->final_softcap};
        runner_pool_for(ctx->pool, n - first, 1, softcap_task, &a);
    }
}

/* Block l on the step's tokens; a removed sublayer adds nothing to the residual stream: skipped (it has no KV cache). */
static void run_block(runner_context *ctx, int32_t l, runner_step *st) {
    const runner_layer *L = &ctx->model->layers[l];
    st->layer = l;
    if (!L->attn_removed) attention_block(ctx, L, st);
    if (!L->ffn_removed) {
        if (ctx->model->cfg.n_expert > 0) runner_moe_block(ctx, L, st);
        else ffn_block(ctx, L, st);
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
    runner_step st = {.ctx = ctx, .tokens = tokens, .n_tok = n, .layer = 0, .segs = segs, .n_segs = n_segs, .seg_of = seg_of};

    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), embed_task, &st);
    /* A NextN block is preserved but not executed here (as llama.cpp's glm4 and qwen35): it is the MTP head's. */
    for (int32_t l = 0; l < c->n_layer - c->n_nextn; l++) {
        if (aborted(abort_flag)) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted at layer %d", l);
        run_block(ctx, l, &st);
    }
    if (logits_mode == RUNNER_LOGITS_NONE) return RUNNER_OK;
    if (logits_mode == RUNNER_LOGITS_EMBD) {
        /* The rows the head would read (the same runner_rmsnorm_row as its fused norm), without the head. */
        runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), output_norm_task, &st);
        return RUNNER_OK;
    }
    run_head(ctx, n, logits_mode, (const float *)m->output_norm.data, &m->output);
    return RUNNER_OK;
}

/* ---- the multi-token-prediction (NextN) head ------------------------------------------------ */

typedef struct mtp_input_args {
    runner_step *st;
    const float *h;      /* [n][n_embd] hidden states, before the norm that made them the head's input */
    const float *h_norm; /* that norm's weight (llama.cpp's h_nextn is the normed state) */
} mtp_input_args;

/* Row t of xn (2 n_embd wide) = enorm(embed(token t)) ++ hnorm(norm(h t)): the eh projection's input. */
static void mtp_input_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    mtp_input_args *a = arg;
    runner_context *ctx = a->st->ctx;
    const runner_model *m = ctx->model;
    const int32_t E = m->cfg.n_embd;
    const runner_weight *e = m->nextn.embed.data ? &m->nextn.embed : &m->tok_embd;
    for (int64_t t = t0; t < t1; t++) {
        float *row = ctx->s.xn + (size_t)t * 2 * E;
        e->traits->to_float(e->data + (size_t)a->st->tokens[t] * e->row_bytes, row, E);
        runner_rmsnorm_row(row, (const float *)m->nextn.enorm.data, row, E, m->cfg.norm_eps);
        runner_rmsnorm_row(a->h + (size_t)t * E, a->h_norm, row + E, E, m->cfg.norm_eps);
        runner_rmsnorm_row(row + E, (const float *)m->nextn.hnorm.data, row + E, E, m->cfg.norm_eps);
    }
}

runner_status runner_forward_mtp(runner_context *ctx, const float *h, int chained, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                                 const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    const runner_model *m = ctx->model;
    const runner_model_config *c = &m->cfg;
    if (ctx->params.blocks != RUNNER_CONTEXT_MTP) /* the NextN block's KV cache is there only */
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "the MTP head runs on an MTP context only");
    if (aborted(abort_flag)) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted before the MTP head");
    /* Slot p holds the pair (h_p, t_{p+1}), rotated as position p + 1 (llama.cpp's MTP position). */
    const runner_segment one = {.seq = ctx, .t0 = 0, .n = n, .pos = pos, .rope_off = 1};
    runner_step st = {.ctx = ctx, .tokens = tokens, .n_tok = n, .layer = 0, .segs = &one, .n_segs = 1, .seg_of = NULL};
    /* As llama.cpp's h_nextn: the target's state after its output norm; a chained draft's, after the head's norm. */
    const runner_weight *h_norm = chained && m->nextn.head_norm.data ? &m->nextn.head_norm : &m->output_norm;
    mtp_input_args in = {.st = &st, .h = h, .h_norm = (const float *)h_norm->data};
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), mtp_input_task, &in);
    runner_matmul_group g = {.ctx = ctx, .n_tok = n, .in = ctx->s.xn, .n_in = 2 * (int64_t)c->n_embd};
    runner_group_add(&g, &m->nextn.eh_proj, ctx->s.x, 0);
    runner_group_run(&g);
    run_block(ctx, c->n_layer - c->n_nextn, &st);
    if (logits_mode == RUNNER_LOGITS_NONE) return RUNNER_OK;
    const runner_weight *norm = m->nextn.head_norm.data ? &m->nextn.head_norm : &m->output_norm;
    run_head(ctx, n, logits_mode, (const float *)norm->data, m->nextn.head.data ? &m->nextn.head : &m->output);
    return RUNNER_OK;
}
