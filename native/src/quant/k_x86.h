/*
 * k_x86.h: what the AVX2 and AVX-512 K-quant dots share (include only from *_avx2.c / *_avx512.c,
 * which are compiled with AVX2 + FMA + F16C): scale unpacking, exact integer helpers, and the float
 * step of kquant.h's canonical order for eight super-blocks at once (K_DOT).
 */
#ifndef RUNNER_K_X86_H
#define RUNNER_K_X86_H

#include <immintrin.h>

#include "quant/block_avx2.h"
#include "quant/kquant.h"

static inline __m256i ld256(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/*
 * The eight 6-bit scales and mins of a Q4_K/Q5_K block unpacked with 32-bit word operations (what
 * k4_scale_min gives, all at once): bytes 0-7 of the result are the scales, bytes 8-15 the mins.
 */
static inline __m128i k4_unpack(const uint8_t *q) {
    uint32_t u[4];
    memcpy(u, q, 12);
    const uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
    u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);
    const uint32_t mins_lo = u[1] & m1;
    u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);
    u[2] = mins_lo;
    u[0] &= m1;
    /* from registers: a 16-byte load of four fresh 4-byte stores would stall on store forwarding */
    return _mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3]);
}

/* The sixteen 6-bit scales of a Q3_K block (k3_scales), unpacked with 32-bit word operations. */
static inline __m128i k3_unpack(const uint8_t *q) {
    uint32_t a[4];
    memcpy(a, q, 12);
    const uint32_t m1 = 0x03030303, m2 = 0x0f0f0f0f, t = a[2];
    a[2] = ((a[0] >> 4) & m2) | (((t >> 4) & m1) << 4);
    a[3] = ((a[1] >> 4) & m2) | (((t >> 6) & m1) << 4);
    a[0] = (a[0] & m2) | (((t >> 0) & m1) << 4);
    a[1] = (a[1] & m2) | (((t >> 2) & m1) << 4);
    return _mm_setr_epi32((int)a[0], (int)a[1], (int)a[2], (int)a[3]);
}

/* Lanes whose sum is sum_j m_j * (bsums[2j] + bsums[2j+1]), exactly for any bytes: each min meets each
 * of its two bsums in VPMADDWD (a sum of two random bsums could wrap int16). */
static inline __m256i k4_mvec(__m128i mins16, const uint8_t *yb) {
    const __m256i m2 = _mm256_set_m128i(_mm_unpackhi_epi16(mins16, mins16), _mm_unpacklo_epi16(mins16, mins16));
    return _mm256_madd_epi16(m2, ld256(yb + Q8_K_BSUMS));
}

/* Lanes whose sum is sum_j sc_j * bsums[j] (the 16 scales as int16). */
static inline __m256i bsum_vec(__m256i sc16, const uint8_t *yb) {
    return _mm256_madd_epi16(sc16, ld256(yb + Q8_K_BSUMS));
}

/*
 * The float step of up to eight super-blocks at once, lane k = super-block k of the group (its
 * canonical lane, b % 8, since groups start at multiples of 8): pi[k] and pm[k] are int32 vectors
 * whose lane sums are super-block k's isum and msum (exact), xd points at the first block's half d
 * (dmin follows it when with_min), yg at the first Q8_K block. Per lane this is exactly kquant.h's
 * k_acc / k_acc_min: d = d_y * half(d_x) and dm = d_y * half(dmin_x), one rounding each, then
 * fmaf(isum, d) and fmaf(-msum, dm); lanes at or beyond count keep their value.
 */
static inline __attribute__((always_inline)) __m256 kgroup_float(__m256 acc, __m256i pi[8], __m256i pm[8], const uint8_t *xd, int xbytes,
                                                                 const uint8_t *yg, int count, int with_min) {
    float dyv[8];
    for (int k = 0; k < 8; k++) dyv[k] = k < count ? rd_f32(yg + k * Q8_K_BYTES) : 0.0f;
    const __m256 dy = _mm256_setr_ps(dyv[0], dyv[1], dyv[2], dyv[3], dyv[4], dyv[5], dyv[6], dyv[7]);
    const __m256 d = _mm256_mul_ps(dy, halves8(xd, xbytes, count));
    acc = fma_lanes(reduce8_blocks(pi), d, acc, count);
    if (with_min) {
        const __m256 dm = _mm256_mul_ps(dy, halves8(xd + 2, xbytes, count));
        acc = fma_lanes(_mm256_sub_epi32(_mm256_setzero_si256(), reduce8_blocks(pm)), dm, acc, count);
    }
    return acc;
}

/* kquant.h's tree over the 8 lanes: w = 4, 2, 1. */
static inline float kreduce8(__m256 v8) {
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1)); /* w = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                           /* w = 2 */
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                            /* w = 1 */
    return _mm_cvtss_f32(v);
}

/*
 * The loop every SIMD K-quant dot shares: PART(xb, yb, pi, pm) sets the int32 vectors of one
 * super-block (pm untouched for types without a min); XBYTES is the block size, DOFF the offset of d.
 * KPF > 0 prefetches each super-block KPF bytes ahead (0: none): measured on Zen 4 decode, 2 KiB ahead
 * gives Q4_K +7 % on one thread and +10 % on two, and Q6_K -2 %, so it is per type.
 */
#define K_DOT(XBYTES, DOFF, WITH_MIN, PART, KPF)                                                   \
    const uint8_t *x = vx, *y = vy;                                                                 \
    const int64_t nb = n / QK_K;                                                                    \
    __m256 acc = _mm256_setzero_ps();                                                               \
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {                                                        \
        const int count = nb - b0 < 8 ? (int)(nb - b0) : 8;                                         \
        __m256i pi[8], pm[8];                                                                       \
        for (int k = 0; k < 8; k++) {                                                               \
            pi[k] = pm[k] = _mm256_setzero_si256();                                                 \
            if (k < count) {                                                                        \
                const uint8_t *xk = x + (b0 + k) * (XBYTES);                                        \
                for (int pf = 0; (KPF) && pf < (XBYTES); pf += 64)                                  \
                    _mm_prefetch((const char *)(xk + (KPF) + pf), _MM_HINT_T0);                     \
                PART(xk, y + (b0 + k) * Q8_K_BYTES, &pi[k], &pm[k]);                                \
            }                                                                                       \
        }                                                                                           \
        acc = kgroup_float(acc, pi, pm, x + b0 * (XBYTES) + (DOFF), (XBYTES), y + b0 * Q8_K_BYTES, count, (WITH_MIN)); \
    }                                                                                               \
    *s = kreduce8(acc);

#endif /* RUNNER_K_X86_H */
