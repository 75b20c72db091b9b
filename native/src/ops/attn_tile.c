/* Tiled attention: the scalar reference of every kernel (the spec in attn_tile.h). */
#include "ops/attn_tile.h"

#include <math.h>
#include <string.h>

#include "quant/quant.h"

static const float EXP_P[6] = {RUNNER_EXP_P0, RUNNER_EXP_P1, RUNNER_EXP_P2, RUNNER_EXP_P3, RUNNER_EXP_P4, RUNNER_EXP_P5};

float runner_attn_exp_ref(float x) {
    if (!(x >= RUNNER_EXP_MIN)) return 0.0f; /* -inf (a masked key) and NaN too */
    const float t = fmaf(x, RUNNER_EXP_LOG2E, RUNNER_EXP_MAGIC);
    const float n = t - RUNNER_EXP_MAGIC;
    float r = fmaf(n, -RUNNER_EXP_C1, x);
    r = fmaf(n, -RUNNER_EXP_C2, r);
    const float z = r * r;
    float p = EXP_P[0];
    for (int i = 1; i < 6; i++) p = fmaf(p, r, EXP_P[i]);
    p = fmaf(p, z, r);
    p = p + 1.0f;
    const int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

void runner_attn_widen_scalar(size_t n, const uint16_t *src, float *dst) {
    for (size_t i = 0; i < n; i++) dst[i] = runner_fp16_to_fp32(src[i]);
}

void runner_attn_scores_scalar(int nq, int hd, const float *q, const float *kt, float *s) {
    for (int i = 0; i < nq; i++)
        for (int j = 0; j < RUNNER_ATTN_BLOCK; j++) {
            float acc = 0.0f;
            for (int d = 0; d < hd; d++) acc = fmaf(q[(size_t)i * hd + d], kt[(size_t)d * RUNNER_ATTN_BLOCK + j], acc);
            s[i * RUNNER_ATTN_BLOCK + j] = acc;
        }
}

/* The block's sum of e in the canonical tree: pairs 16 apart, then halves. */
static float block_sum(const float *e) {
    float t[16];
    for (int i = 0; i < 16; i++) t[i] = e[i] + e[i + 16];
    for (int w = 8; w >= 1; w /= 2)
        for (int i = 0; i < w; i++) t[i] = t[i] + t[i + w];
    return t[0];
}

void runner_attn_softmax_scalar(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l, float *c,
                                float *e) {
    for (int i = 0; i < nq; i++) {
        const float *si = s + i * RUNNER_ATTN_BLOCK;
        float *ei = e + i * RUNNER_ATTN_BLOCK;
        if (lo[i] > hi[i]) {
            for (int j = 0; j < RUNNER_ATTN_BLOCK; j++) ei[j] = 0.0f;
            c[i] = 1.0f;
            continue;
        }
        float x[RUNNER_ATTN_BLOCK], mb = -INFINITY;
        for (int j = 0; j < RUNNER_ATTN_BLOCK; j++) {
            x[j] = j >= lo[i] && j <= hi[i] ? si[j] * scale : -INFINITY;
            if (x[j] > mb) mb = x[j];
        }
        const float mn = mb > m[i] ? mb : m[i];
        c[i] = mn > m[i] ? runner_attn_exp_ref(m[i] - mn) : 1.0f;
        for (int j = 0; j < RUNNER_ATTN_BLOCK; j++) ei[j] = runner_attn_exp_ref(x[j] - mn);
        l[i] = l[i] * c[i] + block_sum(ei);
        m[i] = mn;
    }
}

void runner_attn_accum_scalar(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                              const float *c, float *acc) {
    for (int i = 0; i < nq; i++) {
        float *a = acc + (size_t)i * hd;
        if (c[i] != 1.0f)
            for (int d = 0; d < hd; d++) a[d] = a[d] * c[i];
        const int from = lo[i] > j_lo ? lo[i] : j_lo, to = hi[i] < j_hi ? hi[i] : j_hi;
        for (int j = from; j <= to; j++) {
            const float w = e[i * RUNNER_ATTN_BLOCK + j];
            for (int d = 0; d < hd; d++) a[d] = fmaf(w, v[(size_t)j * hd + d], a[d]);
        }
    }
}
