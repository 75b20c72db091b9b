/*
 * The one forward pass of every family (docs/models.md), as a sequence of pool tasks per layer; a
 * family's differences are config fields and optional weights (biases, q/k norms, post-norms, GELU,
 * soft-caps, sliding windows, experts), never a second pass. Every task splits
 * its work over whole output elements (tokens, rows, heads), never across a reduction, so each
 * value is computed by one thread in one fixed order: results do not depend on the thread count,
 * the batch size or how a prompt was chunked.
 *
 * Numerics follow ggml where it makes a choice (ENGINE.md): RMS norm sums squares in double, rope
 * angles come from the per-context cache built by repeated multiplication, softmax sums in double
 * and scales by the float reciprocal, SiLU is x / (1 + e^-x), GELU goes through ggml's F16 table,
 * and quantized weights dot against activations quantized once per matmul.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "model/model.h"

/* ---- small row operations ----------------------------------------------------------------- */

static void rmsnorm_row(const float *x, const float *w, float *y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

/* RMS norm of each head of a row, in place (qwen3's q/k norms): the same arithmetic as rmsnorm_row. */
static void head_norm_row(float *x, int32_t n_heads, int32_t head_dim, const float *w, float eps) {
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        rmsnorm_row(v, w, v, head_dim, eps);
    }
}

static void add_row(float *x, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] + b[i];
}

static void rope_row(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int neox, const float *cs,
                     const float *sn) {
    const int32_t half = n_rot / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int32_t i = 0; i < half; i++) {
            const int32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cs[i] - x1 * sn[i];
            v[b] = x0 * sn[i] + x1 * cs[i];
        }
    }
}

static float silu(float x) {
    return x / (1.0f + expf(-x));
}

/* ggml's CPU GELU (GGML_GELU_FP16, on in every ggml CPU build): the tanh form evaluated once per
 * F16 value into a table of F16 results; the input is rounded to F16 to index it. */
static uint16_t gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static float gelu_f32(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

static void gelu_table_fill(void) {
    for (uint32_t i = 0; i < (1u << 16); i++) gelu_table[i] = runner_fp32_to_fp16(gelu_f32(runner_fp16_to_fp32((uint16_t)i)));
}

void runner_gelu_table_init(void) {
    pthread_once(&gelu_once, gelu_table_fill);
}

/* gelu(x) * g as ggml_vec_geglu_f32: 0 below -10, x above 10, else the table. */
static float geglu(float x, float g) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x * g;
    return runner_fp16_to_fp32(gelu_table[runner_fp32_to_fp16(x)]) * g;
}

static void gated_act_row(int32_t act, float *g, const float *u, int64_t n) {
    if (act == RUNNER_FFN_GELU)
        for (int64_t i = 0; i < n; i++) g[i] = geglu(g[i], u[i]);
    else
        for (int64_t i = 0; i < n; i++) g[i] = silu(g[i]) * u[i];
}

/* ---- matmul groups: weights that share one input ------------------------------------------- */

#define GROUP_MAX 3
/* Rows per claimed chunk: a prompt step visits a tile of rows against every token; a single-token
 * step takes longer runs so the two-row kernel streams two distant rows (runner_vec_dot_rows). */
#define ROW_TILE 16
#define ROW_CHUNK_DECODE 64

typedef struct matmul_group {
    runner_context *ctx;
    int32_t n_tok;
    const float *in;            /* [n_tok][n_in] */
    int64_t n_in;
    int n_w;
    const runner_weight *w[GROUP_MAX];
    float *out[GROUP_MAX];      /* [n_tok][w->ne[1]] */
    int accumulate[GROUP_MAX];  /* add into out (residual) instead of storing */
    float scale[GROUP_MAX];     /* multiply each result by this first (1: none) */
    int slot[GROUP_MAX];        /* which activation slot holds this weight's input */
    int32_t slot_type[RUNNER_ACT_SLOTS];
    int n_slots;
    /* The packed layout some weight's kernels read a slot in (NULL: none; runner_act_pack), written by
     * the prepare task into the same scratch row at slot_pack_off, past the slot's own bytes. */
    const runner_act_pack *slot_pack[RUNNER_ACT_SLOTS];
    size_t slot_pack_off[RUNNER_ACT_SLOTS];
    /* optional pre-step per token before quantizing: RMS norm of src with weight */
    const float *norm_src;      /* [n_tok][n_in] or NULL */
    const float *norm_w;
} matmul_group;

static const uint8_t *act_row(const matmul_group *g, int slot, int32_t t) {
    const runner_scratch *s = &g->ctx->s;
    if (g->slot_type[slot] == RUNNER_TYPE_F32) return (const uint8_t *)(g->in + (size_t)t * g->n_in);
    return s->act_q + ((size_t)slot * g->ctx->params.n_batch + (size_t)t) * s->act_q_row_bytes;
}

/* Where a scratch row of row_bytes holding n values of `type` can also hold them packed by `pack`:
 * past its own bytes, 64-byte aligned; 0 when there is no room. */
static size_t pack_offset(int32_t type, int64_t n, const runner_act_pack *pack, size_t row_bytes) {
    size_t q_bytes = 0;
    if (runner_type_row_bytes(runner_type_traits_get(type), n, &q_bytes) != 0 || q_bytes == 0) return 0;
    const size_t off = (q_bytes + 63) & ~(size_t)63;
    return off + pack->bytes(n) <= row_bytes ? off : 0;
}

/* Where the slot's activation rows also get `pack` (the first asked for wins; NULL: nothing to do).
 * A weight whose kernels want another layout, or find no room, runs on the plain rows. */
static void group_want_pack(matmul_group *g, int s, const runner_act_pack *pack) {
    if (!pack || g->slot_pack[s] || g->slot_type[s] == RUNNER_TYPE_F32) return;
    const size_t off = pack_offset(g->slot_type[s], g->n_in, pack, g->ctx->s.act_q_row_bytes);
    if (!off) return;
    g->slot_pack[s] = pack;
    g->slot_pack_off[s] = off;
}

/* The packed row of slot s for token t where the slot was packed in `pack` (NULL otherwise). */
static const uint8_t *packed_row(const matmul_group *g, int s, int32_t t, const runner_act_pack *pack) {
    return pack && pack == g->slot_pack[s] ? act_row(g, s, t) + g->slot_pack_off[s] : NULL;
}

/* Task 1: (optional norm) and quantize each token's input once per activation type. */
static void group_prepare_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    matmul_group *g = arg;
    const runner_model *m = g->ctx->model;
    for (int64_t t = t0; t < t1; t++) {
        float *row = (float *)g->in + (size_t)t * g->n_in;
        if (g->norm_src) rmsnorm_row(g->norm_src + (size_t)t * g->n_in, g->norm_w, row, g->n_in, m->cfg.norm_eps);
        for (int s = 0; s < g->n_slots; s++) {
            if (g->slot_type[s] == RUNNER_TYPE_F32) continue;
            uint8_t *q = (uint8_t *)act_row(g, s, (int32_t)t);
            m->act_from_float[g->slot_type[s]](row, q, g->n_in);
            if (g->slot_pack[s]) g->slot_pack[s]->pack(q, q + g->slot_pack_off[s], g->n_in);
        }
    }
}

/* Rows [rt, re) of weight i for token t, from v: scaled, then stored or added to the output. */
static void store_rows(const matmul_group *g, int i, int32_t t, int64_t rt, int64_t re, float *v) {
    float *o = g->out[i] + (size_t)t * g->w[i]->ne[1];
    const float sc = g->scale[i];
    if (sc != 1.0f)
        for (int64_t r = rt; r < re; r++) v[r - rt] = v[r - rt] * sc;
    for (int64_t r = rt; r < re; r++) o[r] = g->accumulate[i] ? o[r] + v[r - rt] : v[r - rt];
}

/* Task 2: a range of output rows of the group's weights, concatenated. */
static void group_dot_task(void *arg, int64_t r0, int64_t r1, int ith) {
    (void)ith;
    matmul_group *g = arg;
    int64_t base = 0;
    for (int i = 0; i < g->n_w && r0 < r1; i++) {
        const runner_weight *w = g->w[i];
        const int64_t rows = w->ne[1];
        int64_t a = r0 - base, b = r1 - base;
        base += rows;
        if (b <= 0 || a >= rows) continue;
        if (a < 0) a = 0;
        if (b > rows) b = rows;
        const int64_t chunk = g->n_tok == 1 ? ROW_CHUNK_DECODE : ROW_TILE;
        const runner_type_traits *tt = w->traits;
        const int slot = g->slot[i];
        const runner_act_pack *pack = tt->tile_pack[w->variant];
        /* a tile whose activation layout the slot was not packed in (another weight's took it) is skipped */
        const runner_vec_dot_tile_fn tile = pack && pack != g->slot_pack[slot] ? NULL : tt->vec_dot_tile[w->variant];
        const size_t tile_off = pack ? g->slot_pack_off[slot] : 0;
        const int tr = tile ? tt->tile_rows[w->variant] : 0, tc = tile ? tt->tile_cols[w->variant] : 0;
        float v[ROW_CHUNK_DECODE], vt[RUNNER_TILE_MAX][ROW_TILE];
        for (int64_t rt = a; rt < b; rt += chunk) {
            const int64_t re = rt + chunk < b ? rt + chunk : b, nr = re - rt, nr_tiled = tile ? nr - nr % tr : 0;
            const uint8_t *x = w->data + (size_t)rt * w->row_bytes;
            int32_t t = 0;
            /* Tokens tc at a time through the register tile, rows tr at a time (the rows past the
             * last whole tile per token through vec_dot). Every value is still bitwise one vec_dot
             * (the kernel table's contract). */
            for (; tile && g->n_tok > 1 && t + tc <= g->n_tok; t += tc) {
                const uint8_t *y0 = act_row(g, slot, t);
                const size_t by = (size_t)(act_row(g, slot, t + 1) - y0);
                for (int64_t r = 0; r < nr_tiled; r += tr) {
                    float q[RUNNER_TILE_MAX];
                    tile(w->ne[0], q, x + (size_t)r * w->row_bytes, w->row_bytes, y0 + tile_off, by);
                    for (int c = 0; c < tc; c++)
                        for (int k = 0; k < tr; k++) vt[c][r + k] = q[tr * c + k];
                }
                for (int64_t r = nr_tiled; r < nr; r++)
                    for (int c = 0; c < tc; c++) tt->vec_dot[w->variant](w->ne[0], &vt[c][r], x + (size_t)r * w->row_bytes, act_row(g, slot, t + c));
                for (int c = 0; c < tc; c++) store_rows(g, i, t + c, rt, re, vt[c]);
            }
            for (; t < g->n_tok; t++) {
                runner_vec_dot_rows_packed(tt, w->variant, w->ne[0], v, x, w->row_bytes, nr, act_row(g, slot, t),
                                           g->n_tok == 1 ? packed_row(g, slot, t, tt->mv_pack[w->variant]) : NULL);
                store_rows(g, i, t, rt, re, v);
            }
        }
    }
}

static void group_add_scaled(matmul_group *g, const runner_weight *w, float *out, int accumulate, float scale) {
    const int i = g->n_w++;
    g->w[i] = w;
    g->out[i] = out;
    g->accumulate[i] = accumulate;
    g->scale[i] = scale;
    const int32_t type = w->traits->vec_dot_type;
    int s = 0;
    while (s < g->n_slots && g->slot_type[s] != type) s++;
    if (s == g->n_slots) g->slot_type[g->n_slots++] = type;
    g->slot[i] = s;
    /* the slot's packed layout: the decode kernels' for one token, the tile's for a batch that can use it */
    group_want_pack(g, s, g->n_tok == 1 ? w->traits->mv_pack[w->variant]
                                        : g->n_tok >= w->traits->tile_cols[w->variant] ? w->traits->tile_pack[w->variant] : NULL);
}

/* An activation slot of this type without a weight of the group (MoE: the experts' input). */
static int group_slot(matmul_group *g, int32_t type) {
    int s = 0;
    while (s < g->n_slots && g->slot_type[s] != type) s++;
    if (s == g->n_slots) g->slot_type[g->n_slots++] = type;
    return s;
}

static int64_t token_chunk(const runner_context *ctx, int64_t n) {
    const int64_t parts = 4 * (int64_t)ctx->params.n_threads;
    return n < parts ? 1 : (n + parts - 1) / parts;
}

static void group_add(matmul_group *g, const runner_weight *w, float *out, int accumulate) {
    group_add_scaled(g, w, out, accumulate, 1.0f);
}

static void group_run(matmul_group *g) {
    int64_t rows = 0;
    for (int i = 0; i < g->n_w; i++) rows += g->w[i]->ne[1];
    runner_pool_for(g->ctx->pool, g->n_tok, token_chunk(g->ctx, g->n_tok), group_prepare_task, g);
    runner_pool_for(g->ctx->pool, rows, g->n_tok == 1 ? ROW_CHUNK_DECODE : ROW_TILE, group_dot_task, g);
}

/* ---- per-token element-wise tasks --------------------------------------------------------- */

typedef struct step {
    runner_context *ctx;
    const int32_t *tokens;
    int32_t n_tok;
    int32_t pos;
    int32_t layer;
} step;

static void embed_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    step *st = arg;
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
    step *st = arg;
    runner_context *ctx = st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const size_t n_q = (size_t)c->n_head * c->head_dim, n_kv = (size_t)c->n_head_kv * c->head_dim;
    const int32_t half = c->n_rot / 2;
    const int neox = c->rope_type == RUNNER_ROPE_NEOX;
    const runner_layer *L = &ctx->model->layers[st->layer];
    const int swa_rope = L->swa && ctx->rope_cos_swa;
    const float *rc = swa_rope ? ctx->rope_cos_swa : ctx->rope_cos, *rs = swa_rope ? ctx->rope_sin_swa : ctx->rope_sin;
    for (int64_t t = t0; t < t1; t++) {
        const int32_t p = st->pos + (int32_t)t;
        const float *cs = rc + (size_t)p * half, *sn = rs + (size_t)p * half;
        float *q = ctx->s.q + t * n_q, *k = ctx->s.k + t * n_kv, *v = ctx->s.v + t * n_kv;
        if (L->bq.data) add_row(q, (const float *)L->bq.data, (int64_t)n_q);
        if (L->bk.data) add_row(k, (const float *)L->bk.data, (int64_t)n_kv);
        if (L->bv.data) add_row(v, (const float *)L->bv.data, (int64_t)n_kv);
        if (L->q_norm.data) {
            head_norm_row(q, c->n_head, c->head_dim, (const float *)L->q_norm.data, c->norm_eps);
            head_norm_row(k, c->n_head_kv, c->head_dim, (const float *)L->k_norm.data, c->norm_eps);
        }
        rope_row(q, c->n_head, c->head_dim, c->n_rot, neox, cs, sn);
        rope_row(k, c->n_head_kv, c->head_dim, c->n_rot, neox, cs, sn);
        if (c->query_scale > 0.0f) /* gemma: the query is scaled before the scores (ggml_scale of Qcur) */
            for (size_t i = 0; i < n_q; i++) q[i] = q[i] * c->query_scale;
        const size_t at = (size_t)p * n_kv;
        if (ctx->params.kv_type == RUNNER_KV_F16) {
            uint16_t *kc = (uint16_t *)ctx->k_cache[st->layer] + at, *vc = (uint16_t *)ctx->v_cache[st->layer] + at;
            for (size_t i = 0; i < n_kv; i++) {
                kc[i] = runner_fp32_to_fp16(k[i]);
                vc[i] = runner_fp32_to_fp16(v[i]);
            }
        } else {
            memcpy((float *)ctx->k_cache[st->layer] + at, k, n_kv * sizeof(float));
            memcpy((float *)ctx->v_cache[st->layer] + at, v, n_kv * sizeof(float));
        }
    }
}

/* Causal attention for each (token, head): keys 0..p in order, softmax, values in order. */
static void attention_task(void *arg, int64_t i0, int64_t i1, int ith) {
    step *st = arg;
    runner_context *ctx = st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    const size_t n_q = (size_t)c->n_head * hd, n_kv = (size_t)c->n_head_kv * hd;
    const int f16 = ctx->params.kv_type == RUNNER_KV_F16;
    /* An F16 cache dots against the query rounded to F16 (as ggml does), held here as the floats those
     * halves are: F16 x F32 gives bitwise F16 x F16's dot (the same lanes and tree, and a half's float
     * is exact), without converting the query again for every key. */
    const runner_type_traits *kt = runner_type_traits_get(f16 ? RUNNER_TYPE_F16 : RUNNER_TYPE_F32);
    const runner_vec_dot_fn dot = kt->vec_dot[runner_kernel_pick_vec_dot(kt, ctx->model->cpu)];
    const runner_axpy_fn axpy = runner_axpy_pick(f16 ? RUNNER_TYPE_F16 : RUNNER_TYPE_F32, ctx->model->cpu);
    const runner_round_f16_fn round_f16 = runner_round_f16_pick(ctx->model->cpu);
    float *scores = ctx->s.scores + (size_t)ith * ctx->params.n_ctx;
    float *qr = ctx->s.qr + (size_t)ith * hd;
    const float scale = c->attention_scale > 0.0f ? c->attention_scale : c->query_scale > 0.0f ? 1.0f : 1.0f / sqrtf((float)hd);
    const float cap = c->attn_softcap, inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
    const int swa = ctx->model->layers[st->layer].swa;
    for (int64_t i = i0; i < i1; i++) {
        const int32_t t = (int32_t)(i / c->n_head), h = (int32_t)(i % c->n_head), g = h / group;
        const int32_t p = st->pos + t;
        /* A sliding-window layer sees key k only if p - k < n_swa (llama.cpp's LLAMA_SWA_TYPE_STANDARD);
         * masked keys would contribute exp(-inf) = 0 exactly, so skipping them is the same sum. */
        const int32_t j0 = swa && p - c->n_swa + 1 > 0 ? p - c->n_swa + 1 : 0;
        const float *q = ctx->s.q + (size_t)t * n_q + (size_t)h * hd;
        const void *qv = q;
        if (f16) {
            round_f16(hd, 1.0f, q, qr);
            qv = qr;
        }
        float max = -INFINITY;
        for (int32_t j = j0; j <= p; j++) {
            const uint8_t *krow = (const uint8_t *)ctx->k_cache[st->layer] + ((size_t)j * n_kv + (size_t)g * hd) * ctx->kv_elem_bytes;
            float s;
            dot(hd, &s, krow, qv);
            if (cap > 0.0f) s = tanhf(s * inv_cap) * cap; /* soft-capping comes before the softmax's scale */
            s *= scale;
            scores[j] = s;
            if (s > max) max = s;
        }
        double sum = 0.0;
        for (int32_t j = j0; j <= p; j++) {
            const float e = expf(scores[j] - max);
            scores[j] = e;
            sum += (double)e;
        }
        const float inv = (float)(1.0 / sum);
        float *out = ctx->s.att + (size_t)t * n_q + (size_t)h * hd;
        for (int32_t d = 0; d < hd; d++) out[d] = 0.0f;
        if (f16)
            round_f16(p - j0 + 1, inv, scores + j0, scores + j0); /* ggml rounds the weights to F16 too */
        else
            for (int32_t j = j0; j <= p; j++) scores[j] = scores[j] * inv;
        const uint8_t *v0 = (const uint8_t *)ctx->v_cache[st->layer] + ((size_t)j0 * n_kv + (size_t)g * hd) * ctx->kv_elem_bytes;
        axpy(hd, p - j0 + 1, scores + j0, v0, n_kv * ctx->kv_elem_bytes, out);
    }
}

static void swiglu_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    step *st = arg;
    runner_context *ctx = st->ctx;
    const int64_t n_ff = ctx->model->cfg.n_ff;
    for (int64_t t = t0; t < t1; t++) gated_act_row(ctx->model->cfg.ffn_act, ctx->s.gate + t * n_ff, ctx->s.up + t * n_ff, n_ff);
}

/* Post-norm (gemma): the sublayer's output in xn is RMS-normed with `post`, then added to the residual. */
typedef struct post_norm_args {
    step *st;
    const float *w;
} post_norm_args;

static void post_norm_add_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    post_norm_args *a = arg;
    runner_context *ctx = a->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    for (int64_t t = t0; t < t1; t++) {
        float *o = ctx->s.xn + (size_t)t * c->n_embd, *x = ctx->s.x + (size_t)t * c->n_embd;
        rmsnorm_row(o, a->w, o, c->n_embd, c->norm_eps);
        for (int32_t i = 0; i < c->n_embd; i++) x[i] = o[i] + x[i];
    }
}

static void post_norm_add(runner_context *ctx, step *st, const runner_weight *post) {
    post_norm_args a = {.st = st, .w = (const float *)post->data};
    runner_pool_for(ctx->pool, st->n_tok, token_chunk(ctx, st->n_tok), post_norm_add_task, &a);
}

static int aborted(const volatile int32_t *flag) {
    return flag && *flag;
}

/* Attention sublayer: norm, Q/K/V, rope and cache, attention, output projection into the residual. */
static void attention_block(runner_context *ctx, const runner_layer *L, step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    matmul_group qkv = {.ctx = ctx, .n_tok = n, .in = s->xn, .n_in = c->n_embd, .norm_src = s->x, .norm_w = (const float *)L->attn_norm.data};
    group_add(&qkv, &L->wq, s->q, 0);
    group_add(&qkv, &L->wk, s->k, 0);
    group_add(&qkv, &L->wv, s->v, 0);
    group_run(&qkv);
    runner_pool_for(ctx->pool, n, token_chunk(ctx, n), rope_store_task, st);
    runner_pool_for(ctx->pool, (int64_t)n * c->n_head, 1, attention_task, st);
    matmul_group wo = {.ctx = ctx, .n_tok = n, .in = s->att, .n_in = (int64_t)c->n_head * c->head_dim};
    if (L->attn_post_norm.data) {
        group_add(&wo, &L->wo, s->xn, 0);
        group_run(&wo);
        post_norm_add(ctx, st, &L->attn_post_norm);
        return;
    }
    group_add_scaled(&wo, &L->wo, s->x, 1, c->residual_scale > 0.0f ? c->residual_scale : 1.0f);
    group_run(&wo);
}

/* FFN sublayer: norm, gate and up, SwiGLU, down projection into the residual. */
static void ffn_block(runner_context *ctx, const runner_layer *L, step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok;
    matmul_group ffn = {.ctx = ctx, .n_tok = n, .in = s->xn, .n_in = c->n_embd, .norm_src = s->x, .norm_w = (const float *)L->ffn_norm.data};
    group_add(&ffn, &L->w_gate, s->gate, 0);
    group_add(&ffn, &L->w_up, s->up, 0);
    group_run(&ffn);
    runner_pool_for(ctx->pool, n, token_chunk(ctx, n), swiglu_task, st);
    matmul_group down = {.ctx = ctx, .n_tok = n, .in = s->gate, .n_in = c->n_ff};
    if (L->ffn_post_norm.data) {
        group_add(&down, &L->w_down, s->xn, 0);
        group_run(&down);
        post_norm_add(ctx, st, &L->ffn_post_norm);
        return;
    }
    group_add_scaled(&down, &L->w_down, s->x, 1, c->residual_scale > 0.0f ? c->residual_scale : 1.0f);
    group_run(&down);
}


/* ---- mixture of experts ------------------------------------------------------------------------ */

typedef struct moe_step {
    step *st;
    const runner_layer *L;
    matmul_group *in;          /* the normed input, quantized for the experts' types */
    int gate_slot, up_slot;    /* its activation slots for exp_gate / exp_up */
    const runner_act_pack *down_pack; /* one token: the down projections' packed layout (NULL: none) */
    size_t down_pack_off;      /* where it sits in an exp_act_q row */
    const int32_t *off;        /* items of expert e: exp_items[off[e] .. off[e+1]) */
    const int64_t *unit_off;   /* work units of expert e start at unit_off[e] (n_expert + 1 entries) */
    int64_t tile;              /* rows per work unit: long runs for one token (prefetch), short tiles for a batch */
    int64_t rows;              /* rows per unit's weight (n_ff_exp for gate/up, n_embd for down) */
} moe_step;

/* Per token: softmax over the router logits (as ggml_soft_max), the top n_expert_used (best first,
 * ties to the lower index), their weights renormalised to sum 1 (llama.cpp's norm_w: the sum in
 * double, clamped to 2^-14, then a float division). */
static void moe_route_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    moe_step *ms = arg;
    runner_context *ctx = ms->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t ne = c->n_expert, k = c->n_expert_used;
    for (int64_t t = t0; t < t1; t++) {
        float *p = ctx->s.router + (size_t)t * ne;
        float max = -INFINITY;
        for (int32_t e = 0; e < ne; e++) max = p[e] > max ? p[e] : max;
        double sum = 0.0;
        for (int32_t e = 0; e < ne; e++) {
            const float v = expf(p[e] - max);
            p[e] = v;
            sum += (double)v;
        }
        const float inv = (float)(1.0 / sum);
        for (int32_t e = 0; e < ne; e++) p[e] = p[e] * inv;
        int32_t *sel = ctx->s.sel + (size_t)t * k;
        float *w = ctx->s.sel_w + (size_t)t * k;
        for (int32_t j = 0; j < k; j++) {
            int32_t best = -1;
            for (int32_t e = 0; e < ne; e++) {
                int taken = 0;
                for (int32_t q = 0; q < j; q++) taken |= sel[q] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = e;
            }
            sel[j] = best;
            w[j] = p[best];
        }
        double wsum = 0.0;
        for (int32_t j = 0; j < k; j++) wsum += (double)w[j];
        float fs = (float)wsum;
        if (fs < 6.103515625e-5f) fs = 6.103515625e-5f;
        for (int32_t j = 0; j < k; j++) w[j] = w[j] / fs;
    }
}

/* Find the expert and row tile of work unit u. */
static int32_t moe_unit(const moe_step *ms, int64_t u, int64_t *tile) {
    const int32_t ne = ms->st->ctx->model->cfg.n_expert;
    int32_t lo = 0, hi = ne; /* largest e with unit_off[e] <= u and a nonempty range */
    while (hi - lo > 1) {
        const int32_t mid = (lo + hi) / 2;
        if (ms->unit_off[mid] <= u) lo = mid;
        else hi = mid;
    }
    while (ms->unit_off[lo + 1] <= u) lo++;
    *tile = u - ms->unit_off[lo];
    return lo;
}

/* gate and up rows of one expert for every token routed to it. */
static void moe_gate_up_task(void *arg, int64_t u0, int64_t u1, int ith) {
    (void)ith;
    moe_step *ms = arg;
    runner_context *ctx = ms->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    float v[ROW_CHUNK_DECODE];
    for (int64_t u = u0; u < u1; u++) {
        int64_t tile;
        const int32_t e = moe_unit(ms, u, &tile);
        const int64_t r0 = tile * ms->tile, r1 = r0 + ms->tile < c->n_ff_exp ? r0 + ms->tile : c->n_ff_exp;
        const runner_weight *wg = &ms->L->exp_gate[e], *wu = &ms->L->exp_up[e];
        for (int32_t it = ms->off[e]; it < ms->off[e + 1]; it++) {
            const int32_t item = ctx->s.exp_items[it], t = item / c->n_expert_used;
            float *g = ctx->s.exp_gate + (size_t)item * c->n_ff_exp, *up = ctx->s.exp_up + (size_t)item * c->n_ff_exp;
            runner_vec_dot_rows_packed(wg->traits, wg->variant, wg->ne[0], v, wg->data + (size_t)r0 * wg->row_bytes, wg->row_bytes, r1 - r0,
                                       act_row(ms->in, ms->gate_slot, t), packed_row(ms->in, ms->gate_slot, t, wg->traits->mv_pack[wg->variant]));
            for (int64_t r = r0; r < r1; r++) g[r] = v[r - r0];
            runner_vec_dot_rows_packed(wu->traits, wu->variant, wu->ne[0], v, wu->data + (size_t)r0 * wu->row_bytes, wu->row_bytes, r1 - r0,
                                       act_row(ms->in, ms->up_slot, t), packed_row(ms->in, ms->up_slot, t, wu->traits->mv_pack[wu->variant]));
            for (int64_t r = r0; r < r1; r++) up[r] = v[r - r0];
        }
    }
}

/* Per (token, slot): the gated activation, quantized for its expert's down projection. */
static void moe_act_task(void *arg, int64_t i0, int64_t i1, int ith) {
    (void)ith;
    moe_step *ms = arg;
    runner_context *ctx = ms->st->ctx;
    const runner_model *m = ctx->model;
    const runner_model_config *c = &m->cfg;
    for (int64_t item = i0; item < i1; item++) {
        float *g = ctx->s.exp_gate + (size_t)item * c->n_ff_exp;
        gated_act_row(c->ffn_act, g, ctx->s.exp_up + (size_t)item * c->n_ff_exp, c->n_ff_exp);
        const runner_weight *wd = &ms->L->exp_down[ctx->s.sel[item]];
        const int32_t type = wd->traits->vec_dot_type;
        uint8_t *q = ctx->s.exp_act_q + (size_t)item * ctx->s.act_q_row_bytes;
        if (type != RUNNER_TYPE_F32) m->act_from_float[type](g, q, c->n_ff_exp);
        if (ms->down_pack) ms->down_pack->pack(q, q + ms->down_pack_off, c->n_ff_exp);
    }
}

static void moe_down_task(void *arg, int64_t u0, int64_t u1, int ith) {
    (void)ith;
    moe_step *ms = arg;
    runner_context *ctx = ms->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    float v[ROW_CHUNK_DECODE];
    for (int64_t u = u0; u < u1; u++) {
        int64_t tile;
        const int32_t e = moe_unit(ms, u, &tile);
        const int64_t r0 = tile * ms->tile, r1 = r0 + ms->tile < c->n_embd ? r0 + ms->tile : c->n_embd;
        const runner_weight *wd = &ms->L->exp_down[e];
        const int f32 = wd->traits->vec_dot_type == RUNNER_TYPE_F32;
        for (int32_t it = ms->off[e]; it < ms->off[e + 1]; it++) {
            const int32_t item = ctx->s.exp_items[it];
            const uint8_t *y = f32 ? (const uint8_t *)(ctx->s.exp_gate + (size_t)item * c->n_ff_exp)
                                   : ctx->s.exp_act_q + (size_t)item * ctx->s.act_q_row_bytes;
            const runner_act_pack *pack = wd->traits->mv_pack[wd->variant];
            runner_vec_dot_rows_packed(wd->traits, wd->variant, wd->ne[0], v, wd->data + (size_t)r0 * wd->row_bytes, wd->row_bytes, r1 - r0, y,
                                       pack && pack == ms->down_pack ? y + ms->down_pack_off : NULL);
            float *o = ctx->s.exp_out + (size_t)item * c->n_embd;
            for (int64_t r = r0; r < r1; r++) o[r] = v[r - r0];
        }
    }
}

/* Per token: the experts' outputs times their weights, summed best first, then added to the residual
 * (ggml_mul, the chain of ggml_add over the chosen experts, ggml_add with the residual). */
static void moe_combine_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    moe_step *ms = arg;
    runner_context *ctx = ms->st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t k = c->n_expert_used;
    for (int64_t t = t0; t < t1; t++) {
        float *x = ctx->s.x + (size_t)t * c->n_embd;
        const float *w = ctx->s.sel_w + (size_t)t * k;
        for (int32_t i = 0; i < c->n_embd; i++) {
            float acc = ctx->s.exp_out[((size_t)t * k) * c->n_embd + i] * w[0];
            for (int32_t j = 1; j < k; j++) acc = acc + ctx->s.exp_out[((size_t)t * k + j) * c->n_embd + i] * w[j];
            x[i] = acc + x[i];
        }
    }
}

/* MoE FFN sublayer: norm, router, per-token choice, then each chosen expert's gate/up/down for exactly
 * the tokens routed to it (a weight row is read once per expert per step), combined per token. */
static void moe_block(runner_context *ctx, const runner_layer *L, step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok, ne = c->n_expert, k = c->n_expert_used;
    matmul_group in = {.ctx = ctx, .n_tok = n, .in = s->xn, .n_in = c->n_embd, .norm_src = s->x, .norm_w = (const float *)L->ffn_norm.data};
    group_add(&in, &L->gate_inp, s->router, 0);
    moe_step ms = {.st = st, .L = L, .in = &in};
    ms.gate_slot = group_slot(&in, L->exp_gate[0].traits->vec_dot_type);
    ms.up_slot = group_slot(&in, L->exp_up[0].traits->vec_dot_type);
    if (n == 1) {
        /* one token: the experts' activations also in their decode kernels' layout (every expert of a
         * layer has the same type) */
        group_want_pack(&in, ms.gate_slot, L->exp_gate[0].traits->mv_pack[L->exp_gate[0].variant]);
        group_want_pack(&in, ms.up_slot, L->exp_up[0].traits->mv_pack[L->exp_up[0].variant]);
        const runner_weight *wd = &L->exp_down[0];
        const runner_act_pack *pack = wd->traits->mv_pack[wd->variant];
        if (pack && wd->traits->vec_dot_type != RUNNER_TYPE_F32) {
            ms.down_pack_off = pack_offset(wd->traits->vec_dot_type, c->n_ff_exp, pack, s->act_q_row_bytes);
            ms.down_pack = ms.down_pack_off ? pack : NULL;
        }
    }
    group_run(&in);
    runner_pool_for(ctx->pool, n, token_chunk(ctx, n), moe_route_task, &ms);
    /* Group the (token, slot) items by expert, in token order: a counting sort. */
    int32_t off[RUNNER_MAX_EXPERTS + 1];
    int64_t units[RUNNER_MAX_EXPERTS + 1];
    memset(off, 0, sizeof(int32_t) * (size_t)(ne + 1));
    for (int32_t i = 0; i < n * k; i++) off[s->sel[i] + 1]++;
    for (int32_t e = 0; e < ne; e++) off[e + 1] += off[e];
    {
        int32_t fill[RUNNER_MAX_EXPERTS];
        memcpy(fill, off, sizeof(int32_t) * (size_t)ne);
        for (int32_t i = 0; i < n * k; i++) s->exp_items[fill[s->sel[i]]++] = i;
    }
    ms.off = off;
    ms.unit_off = units;
    /* Results do not depend on the tile: every row is one vec_dot, however rows are grouped. */
    ms.tile = n == 1 ? ROW_CHUNK_DECODE : ROW_TILE;
    const int64_t ff_tiles = (c->n_ff_exp + ms.tile - 1) / ms.tile, embd_tiles = (c->n_embd + ms.tile - 1) / ms.tile;
    units[0] = 0;
    for (int32_t e = 0; e < ne; e++) units[e + 1] = units[e] + (off[e + 1] > off[e] ? ff_tiles : 0);
    runner_pool_for(ctx->pool, units[ne], 1, moe_gate_up_task, &ms);
    runner_pool_for(ctx->pool, (int64_t)n * k, 1, moe_act_task, &ms);
    for (int32_t e = 0; e < ne; e++) units[e + 1] = units[e] + (off[e + 1] > off[e] ? embd_tiles : 0);
    runner_pool_for(ctx->pool, units[ne], 1, moe_down_task, &ms);
    runner_pool_for(ctx->pool, n, token_chunk(ctx, n), moe_combine_task, &ms);
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
    const runner_model *m = ctx->model;
    const runner_model_config *c = &m->cfg;
    runner_scratch *s = &ctx->s;
    const int64_t n_embd = c->n_embd;
    step st = {.ctx = ctx, .tokens = tokens, .n_tok = n, .pos = pos, .layer = 0};

    runner_pool_for(ctx->pool, n, token_chunk(ctx, n), embed_task, &st);
    for (int32_t l = 0; l < c->n_layer; l++) {
        if (aborted(abort_flag)) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted at layer %d", l);
        const runner_layer *L = &m->layers[l];
        st.layer = l;
        /* A removed sublayer adds nothing to the residual stream: skip it (it has no KV cache). */
        if (!L->attn_removed) attention_block(ctx, L, &st);
        if (!L->ffn_removed) {
            if (c->n_expert > 0) moe_block(ctx, L, &st);
            else ffn_block(ctx, L, &st);
        }
    }
    if (logits_mode == RUNNER_LOGITS_NONE) return RUNNER_OK;
    /* The head runs only on the tokens whose logits are wanted (LAST: the final one, into row 0). */
    const int32_t first = logits_mode == RUNNER_LOGITS_LAST ? n - 1 : 0;
    matmul_group head = {.ctx = ctx, .n_tok = n - first, .in = s->xn, .n_in = n_embd,
                         .norm_src = s->x + (size_t)first * n_embd, .norm_w = (const float *)m->output_norm.data};
    group_add_scaled(&head, &m->output, s->logits, 0, c->logit_scale > 0.0f ? 1.0f / c->logit_scale : 1.0f);
    group_run(&head);
    if (c->final_softcap > 0.0f) {
        softcap_args a = {.rows = s->logits, .n = c->n_vocab, .cap = c->final_softcap};
        runner_pool_for(ctx->pool, n - first, 1, softcap_task, &a);
    }
    return RUNNER_OK;
}
