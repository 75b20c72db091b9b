/*
 * Tiled attention with AVX2 + FMA + F16C: bitwise equal to attn_tile.c (the spec in attn_tile.h).
 * With 16 ymm registers the tiles are smaller than AVX-512's: scores 2 queries x 32 keys, accum
 * 2 queries x 32 dimensions; dimensions past the last multiple of 8 run the reference's scalar loop.
 */
#include <immintrin.h>
#include <math.h>

#include "ops/attn_tile.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

void runner_attn_widen_avx2(size_t n, const uint16_t *src, float *dst) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    for (; i < n; i++) dst[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(src[i])));
}

ALWAYS_INLINE void scores_tile(const int nq, const int hd, const float *q, const float *kt, float *s) {
    __m256 a[2][4];
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        if (i < nq)
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) a[i][t] = _mm256_setzero_ps();
    for (int d = 0; d < hd; d++) {
        __m256 k[4];
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) k[t] = _mm256_loadu_ps(kt + (size_t)d * RUNNER_ATTN_BLOCK + 8 * t);
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++)
            if (i < nq) {
                const __m256 qd = _mm256_set1_ps(q[(size_t)i * hd + d]);
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++) a[i][t] = _mm256_fmadd_ps(qd, k[t], a[i][t]);
            }
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        if (i < nq)
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++) _mm256_storeu_ps(s + i * RUNNER_ATTN_BLOCK + 8 * t, a[i][t]);
}

void runner_attn_scores_avx2(int nq, int hd, const float *q, const float *kt, float *s) {
    int i = 0;
    for (; i + 2 <= nq; i += 2) scores_tile(2, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
    if (i < nq) scores_tile(1, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
}

/* runner_attn_exp_ref on 8 lanes: the same operations in the same order. */
ALWAYS_INLINE __m256 exp8(__m256 x) {
    const __m256 ok = _mm256_cmp_ps(x, _mm256_set1_ps(RUNNER_EXP_MIN), _CMP_GE_OQ);
    const __m256 magic = _mm256_set1_ps(RUNNER_EXP_MAGIC);
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(RUNNER_EXP_LOG2E), magic), magic);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-RUNNER_EXP_C1), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-RUNNER_EXP_C2), r);
    const __m256 z = _mm256_mul_ps(r, r);
    __m256 p = _mm256_set1_ps(RUNNER_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RUNNER_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RUNNER_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RUNNER_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RUNNER_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(RUNNER_EXP_P5));
    p = _mm256_fmadd_ps(p, z, r);
    p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(ok, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

ALWAYS_INLINE float hmax8(__m256 a) {
    __m128 v = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    v = _mm_max_ps(v, _mm_movehl_ps(v, v));
    v = _mm_max_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
}

void runner_attn_softmax_avx2(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l, float *c,
                              float *e) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY), sc = _mm256_set1_ps(scale);
    for (int i = 0; i < nq; i++) {
        float *ei = e + i * RUNNER_ATTN_BLOCK;
        if (lo[i] > hi[i]) {
            for (int t = 0; t < 4; t++) _mm256_storeu_ps(ei + 8 * t, _mm256_setzero_ps());
            c[i] = 1.0f;
            continue;
        }
        const __m256i lv = _mm256_set1_epi32(lo[i]), hv = _mm256_set1_epi32(hi[i]);
        __m256 x[4];
        __m256 mx = ninf;
        for (int t = 0; t < 4; t++) {
            const __m256i idx = _mm256_setr_epi32(8 * t, 8 * t + 1, 8 * t + 2, 8 * t + 3, 8 * t + 4, 8 * t + 5, 8 * t + 6, 8 * t + 7);
            /* outside [lo, hi]: lo > idx or idx > hi */
            const __m256i out = _mm256_or_si256(_mm256_cmpgt_epi32(lv, idx), _mm256_cmpgt_epi32(idx, hv));
            x[t] = _mm256_blendv_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i * RUNNER_ATTN_BLOCK + 8 * t), sc), ninf, _mm256_castsi256_ps(out));
            mx = _mm256_max_ps(mx, x[t]);
        }
        const float mb = hmax8(mx);
        const float mn = mb > m[i] ? mb : m[i];
        c[i] = mn > m[i] ? runner_attn_exp_ref(m[i] - mn) : 1.0f;
        const __m256 mv = _mm256_set1_ps(mn);
        __m256 ev[4];
        for (int t = 0; t < 4; t++) {
            ev[t] = exp8(_mm256_sub_ps(x[t], mv));
            _mm256_storeu_ps(ei + 8 * t, ev[t]);
        }
        /* the canonical tree: keys i and i + 16 (ev[0] + ev[2], ev[1] + ev[3]), then halves 8, 4, 2, 1 */
        const __m256 h = _mm256_add_ps(_mm256_add_ps(ev[0], ev[2]), _mm256_add_ps(ev[1], ev[3]));
        __m128 v = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        v = _mm_add_ss(v, _mm_movehdup_ps(v));
        l[i] = l[i] * c[i] + _mm_cvtss_f32(v);
        m[i] = mn;
    }
}

/* ni queries x nv vectors of 8 dimensions from d0. */
ALWAYS_INLINE void accum_tile(const int ni, const int nv, int hd, int d0, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi,
                              const float *e, const float *v, const float *c, float *acc) {
    __m256 a[2][4];
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        if (i < ni) {
            const __m256 ci = _mm256_set1_ps(c[i]);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
                if (t < nv) {
                    a[i][t] = _mm256_loadu_ps(acc + (size_t)i * hd + d0 + 8 * t);
                    if (c[i] != 1.0f) a[i][t] = _mm256_mul_ps(a[i][t], ci);
                }
        }
    for (int j = j_lo; j <= j_hi; j++) {
        __m256 vv[4];
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            if (t < nv) vv[t] = _mm256_loadu_ps(v + (size_t)j * hd + d0 + 8 * t);
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++)
            if (i < ni && j >= lo[i] && j <= hi[i]) { /* the query's own keys only */
                const __m256 w = _mm256_set1_ps(e[i * RUNNER_ATTN_BLOCK + j]);
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++)
                    if (t < nv) a[i][t] = _mm256_fmadd_ps(w, vv[t], a[i][t]);
            }
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        if (i < ni)
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
                if (t < nv) _mm256_storeu_ps(acc + (size_t)i * hd + d0 + 8 * t, a[i][t]);
}

ALWAYS_INLINE void accum_rows(const int ni, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e,
                              const float *v, const float *c, float *acc) {
    const int hd8 = hd & ~7;
    for (int d0 = 0; d0 < hd8; d0 += 32) {
        const int nv = (hd8 - d0) / 8;
        if (nv >= 4) accum_tile(ni, 4, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else if (nv == 3) accum_tile(ni, 3, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else if (nv == 2) accum_tile(ni, 2, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else accum_tile(ni, 1, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
    }
    for (int i = 0; i < ni; i++) { /* the reference's own loop for dimensions past hd8 */
        const int from = lo[i] > j_lo ? lo[i] : j_lo, to = hi[i] < j_hi ? hi[i] : j_hi;
        for (int d = hd8; d < hd; d++) {
            float *a = acc + (size_t)i * hd + d;
            if (c[i] != 1.0f) *a = *a * c[i];
            for (int j = from; j <= to; j++) *a = fmaf(e[i * RUNNER_ATTN_BLOCK + j], v[(size_t)j * hd + d], *a);
        }
    }
}

void runner_attn_accum_avx2(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                            const float *c, float *acc) {
    int i = 0;
    for (; i + 2 <= nq; i += 2) accum_rows(2, hd, j_lo, j_hi, lo + i, hi + i, e + i * RUNNER_ATTN_BLOCK, v, c + i, acc + (size_t)i * hd);
    if (i < nq) accum_rows(1, hd, j_lo, j_hi, lo + i, hi + i, e + i * RUNNER_ATTN_BLOCK, v, c + i, acc + (size_t)i * hd);
}
