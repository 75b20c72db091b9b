/*
 * F32, F16 and BF16 with AVX-512 F/BW/VL. Bitwise equal to float.c. The tails use zero-masked
 * loads and merge-masked FMAs, so lanes a tail does not reach are left untouched, as in the
 * reference.
 *
 * All three accumulate in eight ymm registers (canonical lanes 8k..8k+7), like the AVX2 variant;
 * what AVX-512 adds is masked tails. Measured on Zen 4 (docs/kernels.md): the 512-bit VCVTPH2PS has
 * a quarter of the throughput of the 256-bit one (a zmm F16 kernel ran 1.6x slower than AVX2), and
 * GGUF rows are only 32-byte aligned, so a 64-byte load straddles two cache lines half the time
 * (zmm F32/BF16 kernels ran 3-5% slower than ymm ones). These kernels stream weights from memory,
 * where the width of the FMAs does not matter.
 */
#include <immintrin.h>

#include "quant/float_simd.h"
#include "quant/quant_impl.h"

/* Bits 0..count-1 (count clamped to 0..bits). */
static inline uint32_t below(int64_t count, int bits) {
    if (count <= 0) return 0;
    if (count >= bits) return bits == 32 ? 0xffffffffu : (1u << bits) - 1u;
    return (1u << count) - 1u;
}

/* ---- F32: lane(i) = i % 64 ------------------------------------------------------------------------ */

#define F32_STEP(A, K) A = _mm256_fmadd_ps(_mm256_loadu_ps((const float *)(const void *)(x + 4 * (i + 8 * (K)))), _mm256_loadu_ps((const float *)(const void *)(y + 4 * (i + 8 * (K)))), A);
#define F32_TAIL(A, K)                                                                              \
    if (i + 8 * (K) < n) {                                                                          \
        const __mmask8 m = (__mmask8)below(n - i - 8 * (K), 8);                                      \
        A = _mm256_mask3_fmadd_ps(_mm256_maskz_loadu_ps(m, x + 4 * (i + 8 * (K))), _mm256_maskz_loadu_ps(m, y + 4 * (i + 8 * (K))), A, m); \
    }

void runner_vec_dot_f32_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        F32_STEP(a0, 0) F32_STEP(a1, 1) F32_STEP(a2, 2) F32_STEP(a3, 3) F32_STEP(a4, 4) F32_STEP(a5, 5) F32_STEP(a6, 6) F32_STEP(a7, 7)
    }
    F32_TAIL(a0, 0) F32_TAIL(a1, 1) F32_TAIL(a2, 2) F32_TAIL(a3, 3) F32_TAIL(a4, 4) F32_TAIL(a5, 5) F32_TAIL(a6, 6) F32_TAIL(a7, 7)
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* ---- F16: lane(i) = i % 64, eight ymm accumulators ------------------------------------------------ */

#define F16_STEP(A, K) A = _mm256_fmadd_ps(load_f16x8(x + 2 * (i + 8 * (K))), load_f16x8(y + 2 * (i + 8 * (K))), A);
#define F16_TAIL(A, K)                                                                              \
    if (i + 8 * (K) < n) {                                                                          \
        const __mmask8 m = (__mmask8)below(n - i - 8 * (K), 8);                                     \
        const __m256 fx = _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, x + 2 * (i + 8 * (K))));          \
        const __m256 fy = _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, y + 2 * (i + 8 * (K))));          \
        A = _mm256_mask3_fmadd_ps(fx, fy, A, m);                                                     \
    }

void runner_vec_dot_f16_f16_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        F16_STEP(a0, 0) F16_STEP(a1, 1) F16_STEP(a2, 2) F16_STEP(a3, 3) F16_STEP(a4, 4) F16_STEP(a5, 5) F16_STEP(a6, 6) F16_STEP(a7, 7)
    }
    F16_TAIL(a0, 0) F16_TAIL(a1, 1) F16_TAIL(a2, 2) F16_TAIL(a3, 3) F16_TAIL(a4, 4) F16_TAIL(a5, 5) F16_TAIL(a6, 6) F16_TAIL(a7, 7)
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* ---- F16 weights x F32 activations: lane(i) = i % 64 --------------------------------------------- */

#define F16F32_STEP(A, K) A = _mm256_fmadd_ps(load_f16x8(x + 2 * (i + 8 * (K))), _mm256_loadu_ps((const float *)(const void *)(y + 4 * (i + 8 * (K)))), A);
#define F16F32_TAIL(A, K)                                                                           \
    if (i + 8 * (K) < n) {                                                                          \
        const __mmask8 m = (__mmask8)below(n - i - 8 * (K), 8);                                     \
        const __m256 fx = _mm256_cvtph_ps(_mm_maskz_loadu_epi16(m, x + 2 * (i + 8 * (K))));          \
        const __m256 fy = _mm256_maskz_loadu_ps(m, y + 4 * (i + 8 * (K)));                          \
        A = _mm256_mask3_fmadd_ps(fx, fy, A, m);                                                     \
    }

void runner_vec_dot_f16_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        F16F32_STEP(a0, 0) F16F32_STEP(a1, 1) F16F32_STEP(a2, 2) F16F32_STEP(a3, 3) F16F32_STEP(a4, 4) F16F32_STEP(a5, 5) F16F32_STEP(a6, 6) F16F32_STEP(a7, 7)
    }
    F16F32_TAIL(a0, 0) F16F32_TAIL(a1, 1) F16F32_TAIL(a2, 2) F16F32_TAIL(a3, 3) F16F32_TAIL(a4, 4) F16F32_TAIL(a5, 5) F16F32_TAIL(a6, 6) F16F32_TAIL(a7, 7)
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* ---- BF16: lane(i) = 32*(r/32) + 16*(r%2) + (r%32)/2 with r = i % 64 ----------------------------------
 * Values 16q .. 16q+15 of a 64-value chunk (q = 0..3) are 8 words; shifting each word left by 16
 * gives the even values (lanes 32*(q/2) + 8*(q%2) + k), masking its low half the odd ones (16 lanes
 * further): ymm accumulator 4*(q/2) + (q%2), or that + 2. 256-bit loads, as for F32: a 64-byte load
 * of a 32-byte-aligned GGUF row straddles two cache lines. */

#define BF16_STEP(Q, AE, AO)                                                                        \
    {                                                                                               \
        const __m256i wx = _mm256_loadu_si256((const __m256i *)(const void *)(x + 2 * i + 32 * (Q))); \
        const __m256i wy = _mm256_loadu_si256((const __m256i *)(const void *)(y + 2 * i + 32 * (Q))); \
        AE = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wx, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(wy, 16)), AE); \
        AO = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(wx, hi)), _mm256_castsi256_ps(_mm256_and_si256(wy, hi)), AO); \
    }

/* c values are left from value 16q on; word k's even value is there when 2k < c, its odd one when 2k+1 < c. */
#define BF16_TAIL(Q, AE, AO)                                                                        \
    if (i + 16 * (Q) < n) {                                                                         \
        const int64_t left = n - i - 16 * (Q);                                                      \
        const int c = left > 16 ? 16 : (int)left;                                                   \
        const __mmask16 mw = (__mmask16)below(c, 16);                                               \
        const __m256i wx = _mm256_maskz_loadu_epi16(mw, x + 2 * i + 32 * (Q));                     \
        const __m256i wy = _mm256_maskz_loadu_epi16(mw, y + 2 * i + 32 * (Q));                     \
        const __mmask8 me = _mm256_cmplt_epi32_mask(even_idx, _mm256_set1_epi32(c));                \
        const __mmask8 mo = _mm256_cmplt_epi32_mask(even_idx, _mm256_set1_epi32(c - 1));            \
        AE = _mm256_mask3_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wx, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(wy, 16)), AE, me); \
        AO = _mm256_mask3_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(wx, hi)), _mm256_castsi256_ps(_mm256_and_si256(wy, hi)), AO, mo); \
    }

void runner_vec_dot_bf16_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        BF16_STEP(0, a0, a2) BF16_STEP(1, a1, a3) BF16_STEP(2, a4, a6) BF16_STEP(3, a5, a7)
    }
    if (i < n) {
        const __m256i even_idx = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
        BF16_TAIL(0, a0, a2) BF16_TAIL(1, a1, a3) BF16_TAIL(2, a4, a6) BF16_TAIL(3, a5, a7)
    }
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* ---- activation conversions ----------------------------------------------------------------------- */

void runner_from_float_f16_avx512(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = (__mmask16)below(n - i, 16);
        const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(y + 2 * i, m, h);
    }
}

void runner_from_float_bf16_avx512(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000);
    const __m512i round = _mm512_set1_epi32(0x7fff);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i quiet = _mm512_set1_epi32(64);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = (__mmask16)below(n - i, 16);
        const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
        const __m512i top = _mm512_srli_epi32(u, 16);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(round, _mm512_and_si512(top, one))), 16);
        r = _mm512_mask_or_epi32(r, nan, top, quiet);
        _mm256_mask_storeu_epi16(y + 2 * i, m, _mm512_cvtepi32_epi16(r));
    }
}
