/* Causal attention over the KV cache, one (token, head) pair per work item. */
#include "ops/attention.h"

#include <math.h>

/* Causal attention for each (token, head): keys 0..p in order, softmax, values in order. */
void runner_attention_task(void *arg, int64_t i0, int64_t i1, int ith) {
    runner_step *st = arg;
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
            const uint8_t *krow = (const uint8_t *)ctx->kv.k[st->layer] + ((size_t)j * n_kv + (size_t)g * hd) * ctx->kv.elem_bytes;
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
        const uint8_t *v0 = (const uint8_t *)ctx->kv.v[st->layer] + ((size_t)j0 * n_kv + (size_t)g * hd) * ctx->kv.elem_bytes;
        axpy(hd, p - j0 + 1, scores + j0, v0, n_kv * ctx->kv.elem_bytes, out);
    }
}
