/*
 * Tiled attention with AVX-512 F/BW/VL/DQ: bitwise equal to attn_tile.c (the spec in attn_tile.h).
 * Each lane runs the reference's own operation on its own value (a key's score, a dimension's sum),
 * so the tiling below decides only which loads are shared:
 *   scores: 8 queries x 32 keys in 16 zmm accumulators, each K row of the block loaded once for all 8;
 *   accum:  4 queries x 64 dimensions in 16 accumulators, each V row loaded once for all 4.
 * F16 is widened with the 256-bit VCVTPH2PS: on Zen 4 the 512-bit one has a quarter of its
 * throughput (docs/kernels.md).
 */
#include <immintrin.h>

#include "ops/attn_tile.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

void runner_attn_widen_avx512(size_t n, const uint16_t *src, float *dst) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
    for (; i < n; i++) dst[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(src[i])));
}

ALWAYS_INLINE void scores_tile(const int nq, const int hd, const float *q, const float *kt, float *s) {
    __m512 a0[8], a1[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        if (i < nq) a0[i] = a1[i] = _mm512_setzero_ps();
    for (int d = 0; d < hd; d++) {
        const __m512 k0 = _mm512_loadu_ps(kt + (size_t)d * RUNNER_ATTN_BLOCK), k1 = _mm512_loadu_ps(kt + (size_t)d * RUNNER_ATTN_BLOCK + 16);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++)
            if (i < nq) {
                const __m512 qd = _mm512_set1_ps(q[(size_t)i * hd + d]);
                a0[i] = _mm512_fmadd_ps(qd, k0, a0[i]);
                a1[i] = _mm512_fmadd_ps(qd, k1, a1[i]);
            }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        if (i < nq) {
            _mm512_storeu_ps(s + i * RUNNER_ATTN_BLOCK, a0[i]);
            _mm512_storeu_ps(s + i * RUNNER_ATTN_BLOCK + 16, a1[i]);
        }
}

void runner_attn_scores_avx512(int nq, int hd, const float *q, const float *kt, float *s) {
    int i = 0;
    for (; i + 8 <= nq; i += 8) scores_tile(8, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
    if (nq - i >= 4) {
        scores_tile(4, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
        i += 4;
    }
    if (nq - i >= 2) {
        scores_tile(2, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
        i += 2;
    }
    if (nq - i >= 1) scores_tile(1, hd, q + (size_t)i * hd, kt, s + i * RUNNER_ATTN_BLOCK);
}

/* runner_attn_exp_ref on 16 lanes: the same operations in the same order. */
ALWAYS_INLINE __m512 exp16(__m512 x) {
    const __mmask16 ok = _mm512_cmp_ps_mask(x, _mm512_set1_ps(RUNNER_EXP_MIN), _CMP_GE_OQ);
    const __m512 magic = _mm512_set1_ps(RUNNER_EXP_MAGIC);
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(RUNNER_EXP_LOG2E), magic), magic);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-RUNNER_EXP_C1), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-RUNNER_EXP_C2), r);
    const __m512 z = _mm512_mul_ps(r, r);
    __m512 p = _mm512_set1_ps(RUNNER_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RUNNER_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RUNNER_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RUNNER_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RUNNER_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(RUNNER_EXP_P5));
    p = _mm512_fmadd_ps(p, z, r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(ok, p, _mm512_castsi512_ps(bits));
}

void runner_attn_softmax_avx512(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l,
                                float *c, float *e) {
    const __m512i idx0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i idx1 = _mm512_add_epi32(idx0, _mm512_set1_epi32(16));
    const __m512 ninf = _mm512_set1_ps(-__builtin_inff()), sc = _mm512_set1_ps(scale);
    for (int i = 0; i < nq; i++) {
        float *ei = e + i * RUNNER_ATTN_BLOCK;
        if (lo[i] > hi[i]) {
            _mm512_storeu_ps(ei, _mm512_setzero_ps());
            _mm512_storeu_ps(ei + 16, _mm512_setzero_ps());
            c[i] = 1.0f;
            continue;
        }
        const __m512i lv = _mm512_set1_epi32(lo[i]), hv = _mm512_set1_epi32(hi[i]);
        const __mmask16 k0 = _mm512_cmpge_epi32_mask(idx0, lv) & _mm512_cmple_epi32_mask(idx0, hv);
        const __mmask16 k1 = _mm512_cmpge_epi32_mask(idx1, lv) & _mm512_cmple_epi32_mask(idx1, hv);
        const __m512 x0 = _mm512_mask_mul_ps(ninf, k0, _mm512_loadu_ps(s + i * RUNNER_ATTN_BLOCK), sc);
        const __m512 x1 = _mm512_mask_mul_ps(ninf, k1, _mm512_loadu_ps(s + i * RUNNER_ATTN_BLOCK + 16), sc);
        const float mb = _mm512_reduce_max_ps(_mm512_max_ps(x0, x1));
        const float mn = mb > m[i] ? mb : m[i];
        c[i] = mn > m[i] ? runner_attn_exp_ref(m[i] - mn) : 1.0f;
        const __m512 mv = _mm512_set1_ps(mn);
        const __m512 e0 = exp16(_mm512_sub_ps(x0, mv)), e1 = exp16(_mm512_sub_ps(x1, mv));
        _mm512_storeu_ps(ei, e0);
        _mm512_storeu_ps(ei + 16, e1);
        /* the canonical tree: keys i and i + 16, then halves 8, 4, 2, 1 */
        const __m512 t = _mm512_add_ps(e0, e1);
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(t), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
        __m128 v = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        v = _mm_add_ss(v, _mm_movehdup_ps(v));
        l[i] = l[i] * c[i] + _mm_cvtss_f32(v);
        m[i] = mn;
    }
}

/* ni queries x nv vectors of 16 dimensions from d0 (the last one masked to hd). */
ALWAYS_INLINE void accum_tile(const int ni, const int nv, int hd, int d0, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi,
                              const float *e, const float *v, const float *c, float *acc) {
    __mmask16 mk[4];
    __m512 a[4][4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const int left = hd - d0 - 16 * t;
        mk[t] = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1u);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        if (i < ni) {
            const __m512 ci = _mm512_set1_ps(c[i]);
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
                if (t < nv) {
                    a[i][t] = _mm512_maskz_loadu_ps(mk[t], acc + (size_t)i * hd + d0 + 16 * t);
                    if (c[i] != 1.0f) a[i][t] = _mm512_mul_ps(a[i][t], ci);
                }
        }
    for (int j = j_lo; j <= j_hi; j++) {
        __m512 vv[4];
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            if (t < nv) vv[t] = _mm512_maskz_loadu_ps(mk[t], v + (size_t)j * hd + d0 + 16 * t);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            if (i < ni) {
                const __m512 w = _mm512_set1_ps(e[i * RUNNER_ATTN_BLOCK + j]);
                const __mmask16 own = j >= lo[i] && j <= hi[i] ? (__mmask16)0xffff : (__mmask16)0; /* the query's own keys only */
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++)
                    if (t < nv) a[i][t] = _mm512_mask3_fmadd_ps(w, vv[t], a[i][t], own);
            }
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        if (i < ni)
#pragma GCC unroll 4
            for (int t = 0; t < 4; t++)
                if (t < nv) _mm512_mask_storeu_ps(acc + (size_t)i * hd + d0 + 16 * t, mk[t], a[i][t]);
}

ALWAYS_INLINE void accum_rows(const int ni, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e,
                              const float *v, const float *c, float *acc) {
    for (int d0 = 0; d0 < hd; d0 += 64) {
        const int nv = (hd - d0 + 15) / 16;
        if (nv >= 4) accum_tile(ni, 4, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else if (nv == 3) accum_tile(ni, 3, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else if (nv == 2) accum_tile(ni, 2, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
        else accum_tile(ni, 1, hd, d0, j_lo, j_hi, lo, hi, e, v, c, acc);
    }
}

void runner_attn_accum_avx512(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                              const float *c, float *acc) {
    int i = 0;
#define ROWS(N) accum_rows(N, hd, j_lo, j_hi, lo + i, hi + i, e + i * RUNNER_ATTN_BLOCK, v, c + i, acc + (size_t)i * hd)
    for (; i + 4 <= nq; i += 4) ROWS(4);
    if (nq - i >= 2) {
        ROWS(2);
        i += 2;
    }
    if (nq - i >= 1) ROWS(1);
#undef ROWS
}
