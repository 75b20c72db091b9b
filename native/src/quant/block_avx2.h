/*
 * block_avx2.h: the float side of the block dot products with AVX2, shared by q4_avx2.c,
 * q5_avx2.c and q8_avx2.c (include it only from *_avx2.c files, which are compiled with
 * -mavx2 -mfma -mf16c).
 *
 * Blocks are taken in groups of eight. A kernel computes, per block, a vector of eight int32
 * partial sums; reduce8_blocks() turns the eight vectors of a group into one vector whose lane k
 * is block k's exact isum. Group g goes to canonical lanes 8*(g % 2) .. +7, i.e. accumulator
 * acc[g % 2], so the per-lane FMA sequence is exactly the scalar reference's
 * acc[b % 16] = fmaf(isum_b, d_x*d_y, acc[b % 16]).
 */
#ifndef RUNNER_BLOCK_AVX2_H
#define RUNNER_BLOCK_AVX2_H

#include <immintrin.h>

#include "quant/quant_impl.h"

/* p[k] = eight int32 partial sums of block k -> lane k = total of block k (exact). */
static inline __attribute__((always_inline)) __m256i reduce8_blocks(const __m256i p[8]) {
    const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]);
    const __m256i h23 = _mm256_hadd_epi32(p[2], p[3]);
    const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]);
    const __m256i h67 = _mm256_hadd_epi32(p[6], p[7]);
    const __m256i h0123 = _mm256_hadd_epi32(h01, h23); /* [b0..b3 low halves | b0..b3 high halves] */
    const __m256i h4567 = _mm256_hadd_epi32(h45, h67);
    const __m256i lo = _mm256_permute2x128_si256(h0123, h4567, 0x20);
    const __m256i hi = _mm256_permute2x128_si256(h0123, h4567, 0x31);
    return _mm256_add_epi32(lo, hi);
}

/* Lanes 0..count-1 all ones (count 0..8), as an integer mask. */
static inline __m256i lanes_below8(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The half at base + k*stride for k < count (0 elsewhere), as eight floats, assembled in
 * general-purpose registers (a VPGATHERDD is far slower on the CPUs measured; docs/kernels.md). */
static inline __attribute__((always_inline)) __m256 halves8(const uint8_t *base, int stride, int count) {
    uint64_t q[2];
    for (int i = 0; i < 2; i++) {
        uint64_t v = 0;
        for (int k = 0; k < 4; k++) {
            if (4 * i + k < count) v |= (uint64_t)rd_u16(base + (4 * i + k) * stride) << (16 * k);
        }
        q[i] = v;
    }
    return _mm256_cvtph_ps(_mm_insert_epi64(_mm_cvtsi64_si128((long long)q[0]), (long long)q[1], 1));
}

/* acc lanes 0..count-1 = fmaf(isum, d, acc); the others untouched. */
static inline __attribute__((always_inline)) __m256 fma_lanes(__m256i isum, __m256 d, __m256 acc, int count) {
    const __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), d, acc);
    if (count >= 8) return f;
    return _mm256_blendv_ps(acc, f, _mm256_castsi256_ps(lanes_below8(count)));
}

static inline __attribute__((always_inline)) __m256 fma_lanes_f(__m256 a, __m256 b, __m256 acc, int count) {
    const __m256 f = _mm256_fmadd_ps(a, b, acc);
    if (count >= 8) return f;
    return _mm256_blendv_ps(acc, f, _mm256_castsi256_ps(lanes_below8(count)));
}

/* Canonical tree over the 16 block lanes held as acc[0] (lanes 0-7) and acc[1] (lanes 8-15). */
static inline float reduce_block_lanes_avx2(__m256 lo, __m256 hi) {
    const __m256 v8 = _mm256_add_ps(lo, hi);                                             /* w = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));     /* w = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                               /* w = 2 */
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                                /* w = 1 */
    return _mm_cvtss_f32(v);
}

/*
 * The loop every block kernel shares. BLOCK_PARTIALS(k, xb, yb) must set p[k] (int32 x 8) for the
 * block at xb/yb. XB/YB are the block sizes; WITH_MIN says the type has a min (x + XM) that
 * multiplies the activation's s (y + YS). Groups of eight blocks alternate between acc0 (canonical
 * lanes 0-7) and acc1 (lanes 8-15); a short last group blends only the lanes it reaches.
 */
#define BLOCK_GROUP_AVX2(ACC, COUNT, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                     \
    {                                                                                               \
        __m256i p[8];                                                                               \
        for (int k = 0; k < 8; k++) {                                                               \
            const uint8_t *xb = xg + k * (XB), *yb = yg + k * (YB);                                 \
            if (k < (COUNT)) {                                                                      \
                BLOCK_PARTIALS(k, xb, yb)                                                           \
            } else {                                                                                \
                p[k] = _mm256_setzero_si256();                                                      \
            }                                                                                       \
        }                                                                                           \
        const __m256i isum = reduce8_blocks(p);                                                     \
        if (WITH_MIN) ACC = fma_lanes_f(halves8(xg + (XM), (XB), (COUNT)), halves8(yg + (YS), (YB), (COUNT)), ACC, (COUNT)); \
        const __m256 dxy = _mm256_mul_ps(halves8(xg, (XB), (COUNT)), halves8(yg, (YB), (COUNT)));   \
        ACC = fma_lanes(isum, dxy, ACC, (COUNT));                                                   \
    }

#define BLOCK_DOT_AVX2(XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                                   \
    const uint8_t *x = vx, *y = vy;                                                                 \
    const int64_t nb = n / QK;                                                                      \
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                  \
    int64_t b0 = 0;                                                                                 \
    for (; b0 + 16 <= nb; b0 += 16) {                                                               \
        const uint8_t *xg = x + b0 * (XB), *yg = y + b0 * (YB);                                     \
        BLOCK_GROUP_AVX2(acc0, 8, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                         \
        xg += 8 * (XB);                                                                             \
        yg += 8 * (YB);                                                                             \
        BLOCK_GROUP_AVX2(acc1, 8, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                         \
    }                                                                                               \
    if (b0 < nb) {                                                                                  \
        const uint8_t *xg = x + b0 * (XB), *yg = y + b0 * (YB);                                     \
        if (nb - b0 >= 8) {                                                                         \
            BLOCK_GROUP_AVX2(acc0, 8, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                     \
            b0 += 8;                                                                                \
            xg += 8 * (XB);                                                                         \
            yg += 8 * (YB);                                                                         \
            if (b0 < nb) {                                                                          \
                const int count = (int)(nb - b0);                                                   \
                BLOCK_GROUP_AVX2(acc1, count, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)             \
            }                                                                                       \
        } else {                                                                                    \
            const int count = (int)(nb - b0);                                                       \
            BLOCK_GROUP_AVX2(acc0, count, XB, YB, WITH_MIN, XM, YS, BLOCK_PARTIALS)                 \
        }                                                                                           \
    }                                                                                               \
    *s = reduce_block_lanes_avx2(acc0, acc1);

#endif /* RUNNER_BLOCK_AVX2_H */
