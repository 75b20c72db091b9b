/*
 * Causal attention over the KV cache, tiled (ops/attn_tile.h has the kernels and their canonical
 * order). A task is a tile of queries that share a KV head: up to 8 heads of one GQA group times up to
 * 16 consecutive tokens. It walks the key blocks its queries see in ascending order; each block's K and
 * V are loaded (and widened from F16) once for the whole tile. Every query keeps its own online-softmax
 * state and sees exactly its own keys, so how queries are grouped into tasks, and which thread runs a
 * task, never changes a bit of its output: results do not depend on the batch, the chunking or the
 * thread count.
 */
#include "ops/attention.h"

#include <math.h>

#include "ops/attn_tile.h"

#define MAX_HEADS_PER_TASK 8
#define MAX_TOKENS_PER_TASK 16

static size_t round16(size_t n) {
    return (n + 15) & ~(size_t)15;
}

size_t runner_attention_workspace_floats(int32_t head_dim) {
    const size_t hd = (size_t)head_dim, q = RUNNER_ATTN_MAX_QUERIES, blk = RUNNER_ATTN_BLOCK;
    /* queries, accumulators, widened K and V blocks, scores, weights, then m, l, c, lo, hi */
    return 2 * round16(q * hd) + 2 * round16(blk * hd) + 2 * round16(q * blk) + 5 * round16(q);
}

/* Segments a step may hold (a decode group's members); a step with more runs in several passes. */
#define MAX_SEGMENTS 256

typedef struct attn_plan {
    runner_step *st;
    const runner_attn_kernels *kern;
    int32_t heads_per_task, tokens_per_task, n_head_chunks;
    int32_t seg0, n_segs;                    /* the segments of this pass */
    int32_t blocks_before[MAX_SEGMENTS + 1]; /* token blocks of the pass's segments before each one */
} attn_plan;

typedef struct attn_workspace {
    float *q, *acc, *kb, *vb, *s, *e, *m, *l, *c;
    int32_t *lo, *hi;
} attn_workspace;

static attn_workspace workspace_of(float *base, int32_t head_dim) {
    const size_t hd = (size_t)head_dim, q = RUNNER_ATTN_MAX_QUERIES, blk = RUNNER_ATTN_BLOCK;
    attn_workspace w;
    float *p = base;
    w.q = p, p += round16(q * hd);
    w.acc = p, p += round16(q * hd);
    w.kb = p, p += round16(blk * hd);
    w.vb = p, p += round16(blk * hd);
    w.s = p, p += round16(q * blk);
    w.e = p, p += round16(q * blk);
    w.m = p, p += round16(q);
    w.l = p, p += round16(q);
    w.c = p, p += round16(q);
    w.lo = (int32_t *)(void *)p, p += round16(q);
    w.hi = (int32_t *)(void *)p;
    return w;
}

static void attention_tile_task(void *arg, int64_t i0, int64_t i1, int ith) {
    const attn_plan *plan = arg;
    runner_step *st = plan->st;
    runner_context *ctx = st->ctx;
    const runner_model_config *c = &ctx->model->cfg;
    const runner_attn_kernels *K = plan->kern;
    const int32_t hd = c->head_dim, group = c->n_head / c->n_head_kv, layer = st->layer;
    const size_t n_q = (size_t)c->n_head * hd;
    const runner_round_f16_fn round_f16 = runner_round_f16_pick(ctx->model->cpu);
    const float scale = c->attention_scale > 0.0f ? c->attention_scale : c->query_scale > 0.0f ? 1.0f : 1.0f / sqrtf((float)hd);
    const float cap = c->attn_softcap, inv_cap = cap > 0.0f ? 1.0f / cap : 0.0f;
    const int swa = ctx->model->layers[layer].swa;
    attn_workspace w = workspace_of(ctx->s.attn + (size_t)ith * ctx->s.attn_floats, hd);
    int32_t p_of[RUNNER_ATTN_MAX_QUERIES], j0_of[RUNNER_ATTN_MAX_QUERIES];

    const int64_t per_tb = (int64_t)c->n_head_kv * plan->n_head_chunks;
    const int32_t n_blocks = plan->blocks_before[plan->n_segs];
    for (int64_t i = i0; i < i1; i++) {
        /* the last tokens' tiles (the most keys) first, so no thread is left with a long one at the end */
        const int32_t b_all = n_blocks - 1 - (int32_t)(i / per_tb);
        int32_t si = 0;
        while (plan->blocks_before[si + 1] <= b_all) si++;
        const runner_segment *seg = &st->segs[plan->seg0 + si];
        const runner_kv_cache *kv = &seg->seq->kv;
        const int f16 = kv->type == RUNNER_KV_F16;
        const int32_t tb = b_all - plan->blocks_before[si];
        const int32_t g = (int32_t)((i % per_tb) / plan->n_head_chunks), hc = (int32_t)(i % plan->n_head_chunks);
        const int32_t t0 = seg->t0 + tb * plan->tokens_per_task;
        const int32_t t1 = t0 + plan->tokens_per_task < seg->t0 + seg->n ? t0 + plan->tokens_per_task : seg->t0 + seg->n;
        const int32_t h0 = g * group + hc * plan->heads_per_task;
        const int32_t h1 = h0 + plan->heads_per_task < (g + 1) * group ? h0 + plan->heads_per_task : (g + 1) * group;
        const int32_t nh = h1 - h0, nq = (t1 - t0) * nh;
        int32_t first = INT32_MAX, last = 0;
        for (int32_t qi = 0; qi < nq; qi++) {
            const int32_t t = t0 + qi / nh, h = h0 + qi % nh, p = seg->pos + (t - seg->t0);
            const float *q = ctx->s.q + (size_t)t * n_q + (size_t)h * hd;
            /* An F16 cache dots against the query rounded to F16, as ggml does. */
            if (f16) round_f16(hd, 1.0f, q, w.q + (size_t)qi * hd);
            else
                for (int32_t d = 0; d < hd; d++) w.q[(size_t)qi * hd + d] = q[d];
            /* A sliding-window layer sees key k only if p - k < n_swa (llama.cpp's LLAMA_SWA_TYPE_STANDARD). */
            p_of[qi] = p;
            j0_of[qi] = swa && p - c->n_swa + 1 > 0 ? p - c->n_swa + 1 : 0;
            if (j0_of[qi] < first) first = j0_of[qi];
            if (p > last) last = p;
            w.m[qi] = -INFINITY;
            w.l[qi] = 0.0f;
            for (int32_t d = 0; d < hd; d++) w.acc[(size_t)qi * hd + d] = 0.0f;
        }
        for (int32_t b = first / RUNNER_ATTN_BLOCK; b <= last / RUNNER_ATTN_BLOCK; b++) {
            const int32_t base = b * RUNNER_ATTN_BLOCK;
            int32_t j_lo = RUNNER_ATTN_BLOCK, j_hi = -1;
            for (int32_t qi = 0; qi < nq; qi++) {
                const int32_t lo = j0_of[qi] > base ? j0_of[qi] - base : 0;
                const int32_t hi = p_of[qi] < base + RUNNER_ATTN_BLOCK - 1 ? p_of[qi] - base : RUNNER_ATTN_BLOCK - 1;
                w.lo[qi] = lo;
                w.hi[qi] = hi;
                if (lo <= hi) {
                    if (lo < j_lo) j_lo = lo;
                    if (hi > j_hi) j_hi = hi;
                }
            }
            if (j_lo > j_hi) continue; /* no query of this tile sees a key here */
            const void *kblock = runner_kv_k_block(kv, layer, g, b);
            const void *vrows = runner_kv_v_row(kv, layer, g, base);
            const float *kt = kblock, *v = vrows;
            if (f16) {
                K->widen((size_t)hd * RUNNER_ATTN_BLOCK, kblock, w.kb);
                K->widen((size_t)(j_hi - j_lo + 1) * hd, (const uint16_t *)vrows + (size_t)j_lo * hd, w.vb + (size_t)j_lo * hd);
                kt = w.kb;
                v = w.vb;
            }
            K->scores(nq, hd, w.q, kt, w.s);
            if (cap > 0.0f) /* soft-capping comes before the softmax's scale */
                for (int32_t qi = 0; qi < nq; qi++)
                    for (int32_t j = w.lo[qi]; j <= w.hi[qi]; j++) {
                        float *s = w.s + (size_t)qi * RUNNER_ATTN_BLOCK + j;
                        *s = tanhf(*s * inv_cap) * cap;
                    }
            K->softmax(nq, scale, w.s, w.lo, w.hi, w.m, w.l, w.c, w.e);
            K->accum(nq, hd, j_lo, j_hi, w.lo, w.hi, w.e, v, w.c, w.acc);
        }
        for (int32_t qi = 0; qi < nq; qi++) {
            const int32_t t = t0 + qi / nh, h = h0 + qi % nh;
            float *out = ctx->s.att + (size_t)t * n_q + (size_t)h * hd;
            const float inv = 1.0f / w.l[qi];
            for (int32_t d = 0; d < hd; d++) out[d] = w.acc[(size_t)qi * hd + d] * inv;
        }
    }
}

/* Token blocks of the plan's segments, and the tasks they make. */
static int64_t plan_blocks(attn_plan *plan, int32_t n_head_kv) {
    const runner_step *st = plan->st;
    plan->blocks_before[0] = 0;
    for (int32_t i = 0; i < plan->n_segs; i++)
        plan->blocks_before[i + 1] =
            plan->blocks_before[i] + (st->segs[plan->seg0 + i].n + plan->tokens_per_task - 1) / plan->tokens_per_task;
    return (int64_t)plan->blocks_before[plan->n_segs] * n_head_kv * plan->n_head_chunks;
}

static void plan_heads(attn_plan *plan, int32_t group, int32_t heads) {
    plan->heads_per_task = heads;
    plan->n_head_chunks = (group + heads - 1) / heads;
    plan->tokens_per_task = RUNNER_ATTN_MAX_QUERIES / heads < MAX_TOKENS_PER_TASK ? RUNNER_ATTN_MAX_QUERIES / heads : MAX_TOKENS_PER_TASK;
}

void runner_attention(runner_context *ctx, runner_step *st) {
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t group = c->n_head / c->n_head_kv;
    attn_plan plan = {.st = st, .kern = runner_attn_kernels_pick(ctx->model->cpu)};
    for (int32_t seg0 = 0; seg0 < st->n_segs; seg0 += MAX_SEGMENTS) {
        plan.seg0 = seg0;
        plan.n_segs = st->n_segs - seg0 < MAX_SEGMENTS ? st->n_segs - seg0 : MAX_SEGMENTS;
        int32_t heads = group < MAX_HEADS_PER_TASK ? group : MAX_HEADS_PER_TASK;
        plan_heads(&plan, group, heads);
        int64_t tasks = plan_blocks(&plan, c->n_head_kv);
        /* Few tiles of whole groups (a decode of one token has n_head_kv): split the groups until every
         * thread has two tasks, so a model with one or two KV heads still uses all of them. */
        while (heads > 1 && tasks < 2 * (int64_t)ctx->params.n_threads) {
            heads = (heads + 1) / 2;
            plan_heads(&plan, group, heads);
            tasks = plan_blocks(&plan, c->n_head_kv);
        }
        runner_pool_for(ctx->pool, tasks, 1, attention_tile_task, &plan);
    }
}
