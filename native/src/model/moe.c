/* The mixture-of-experts FFN sublayer: router, top-k choice, each chosen expert's rows, combine. */
#include "model/moe.h"

#include <math.h>
#include <string.h>

#include "ops/activation.h"
#include "ops/matmul.h"

typedef struct moe_step {
    runner_step *st;
    const runner_layer *L;
    runner_matmul_group *in;          /* the normed input, quantized for the experts' types */
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
    float v[RUNNER_ROW_CHUNK_DECODE];
    for (int64_t u = u0; u < u1; u++) {
        int64_t tile;
        const int32_t e = moe_unit(ms, u, &tile);
        const int64_t r0 = tile * ms->tile, r1 = r0 + ms->tile < c->n_ff_exp ? r0 + ms->tile : c->n_ff_exp;
        const runner_weight *wg = &ms->L->exp_gate[e], *wu = &ms->L->exp_up[e];
        for (int32_t it = ms->off[e]; it < ms->off[e + 1]; it++) {
            const int32_t item = ctx->s.exp_items[it], t = item / c->n_expert_used;
            float *g = ctx->s.exp_gate + (size_t)item * c->n_ff_exp, *up = ctx->s.exp_up + (size_t)item * c->n_ff_exp;
            runner_vec_dot_rows_packed(wg->traits, wg->variant, wg->ne[0], v, wg->data + (size_t)r0 * wg->row_bytes, wg->row_bytes, r1 - r0,
                                       runner_act_row(ms->in, ms->gate_slot, t), runner_packed_row(ms->in, ms->gate_slot, t, wg->traits->mv_pack[wg->variant]));
            for (int64_t r = r0; r < r1; r++) g[r] = v[r - r0];
            runner_vec_dot_rows_packed(wu->traits, wu->variant, wu->ne[0], v, wu->data + (size_t)r0 * wu->row_bytes, wu->row_bytes, r1 - r0,
                                       runner_act_row(ms->in, ms->up_slot, t), runner_packed_row(ms->in, ms->up_slot, t, wu->traits->mv_pack[wu->variant]));
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
        runner_gated_act_row(c->ffn_act, g, ctx->s.exp_up + (size_t)item * c->n_ff_exp, c->n_ff_exp);
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
    float v[RUNNER_ROW_CHUNK_DECODE];
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
void runner_moe_block(runner_context *ctx, const runner_layer *L, runner_step *st) {
    runner_scratch *s = &ctx->s;
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t n = st->n_tok, ne = c->n_expert, k = c->n_expert_used;
    runner_matmul_group in = {.ctx = ctx, .n_tok = n, .in = s->xn, .n_in = c->n_embd, .norm_src = s->x, .norm_w = (const float *)L->ffn_norm.data};
    runner_group_add(&in, &L->gate_inp, s->router, 0);
    moe_step ms = {.st = st, .L = L, .in = &in};
    ms.gate_slot = runner_group_slot(&in, L->exp_gate[0].traits->vec_dot_type);
    ms.up_slot = runner_group_slot(&in, L->exp_up[0].traits->vec_dot_type);
    if (n == 1) {
        /* one token: the experts' activations also in their decode kernels' layout (every expert of a
         * layer has the same type) */
        runner_group_want_pack(&in, ms.gate_slot, L->exp_gate[0].traits->mv_pack[L->exp_gate[0].variant]);
        runner_group_want_pack(&in, ms.up_slot, L->exp_up[0].traits->mv_pack[L->exp_up[0].variant]);
        const runner_weight *wd = &L->exp_down[0];
        const runner_act_pack *pack = wd->traits->mv_pack[wd->variant];
        if (pack && wd->traits->vec_dot_type != RUNNER_TYPE_F32) {
            ms.down_pack_off = runner_pack_offset(wd->traits->vec_dot_type, c->n_ff_exp, pack, s->act_q_row_bytes);
            ms.down_pack = ms.down_pack_off ? pack : NULL;
        }
    }
    runner_group_run(&in);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), moe_route_task, &ms);
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
    ms.tile = n == 1 ? RUNNER_ROW_CHUNK_DECODE : RUNNER_ROW_TILE;
    const int64_t ff_tiles = (c->n_ff_exp + ms.tile - 1) / ms.tile, embd_tiles = (c->n_embd + ms.tile - 1) / ms.tile;
    units[0] = 0;
    for (int32_t e = 0; e < ne; e++) units[e + 1] = units[e] + (off[e + 1] > off[e] ? ff_tiles : 0);
    runner_pool_for(ctx->pool, units[ne], 1, moe_gate_up_task, &ms);
    runner_pool_for(ctx->pool, (int64_t)n * k, 1, moe_act_task, &ms);
    for (int32_t e = 0; e < ne; e++) units[e + 1] = units[e] + (off[e + 1] > off[e] ? embd_tiles : 0);
    runner_pool_for(ctx->pool, units[ne], 1, moe_down_task, &ms);
    runner_pool_for(ctx->pool, n, runner_token_chunk(ctx, n), moe_combine_task, &ms);
}
