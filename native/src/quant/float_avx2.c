/*
 * F32, F16 and BF16 with AVX2 + FMA + F16C. Bitwise equal to float.c: eight accumulators
 * A0..A7 hold the canonical lanes 8k..8k+7, and the final tree is the canonical one written with
 * vector adds (A0+=A4 .. A3+=A7 is w = 32, A0+=A2, A1+=A3 is w = 16, and so on).
 */
#include <immintrin.h>

#include "quant/float_simd.h"
#include "quant/quant_impl.h"

/* Lanes whose index (0..7) is below count, as a blend mask. */
static inline __m256 lanes_below(int count) {
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

/* Lanes k (0..7) with 2k + p below count, as a blend mask (the even or odd values of 16). */
static inline __m256 pair_lanes_below(int count, int p) {
    const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count - p), idx));
}

static inline __m256 load_f32x8(const uint8_t *p) {
    return _mm256_loadu_ps((const float *)(const void *)p);
}

/* ---- F32 and F16: lane(i) = i % 64 -------------------------------------------------------------- */

#define STEP(A, K) A = _mm256_fmadd_ps(LOADX(x + ESX * (i + 8 * (K))), LOADY(y + ESY * (i + 8 * (K))), A);
/* The tail (n % 64 values) is copied into zero-padded buffers; only the lanes it reaches are blended
 * into the accumulators (adding 0*0 to a -0 lane would make it +0). */
#define TAIL(A, K)                                                                                 \
    if (8 * (K) < r) {                                                                             \
        const __m256 f = _mm256_fmadd_ps(LOADX(tx + ESX * 8 * (K)), LOADY(ty + ESY * 8 * (K)), A); \
        A = _mm256_blendv_ps(A, f, lanes_below(r - 8 * (K)));                                      \
    }

#define FLOAT_DOT_AVX2                                                                             \
    const uint8_t *x = vx, *y = vy;                                                                \
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
    int64_t i = 0;                                                                                 \
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {                                 \
        STEP(a0, 0) STEP(a1, 1) STEP(a2, 2) STEP(a3, 3) STEP(a4, 4) STEP(a5, 5) STEP(a6, 6) STEP(a7, 7) \
    }                                                                                              \
    if (i < n) {                                                                                   \
        const int r = (int)(n - i);                                                                \
        uint8_t tx[RUNNER_FLOAT_LANES * ESX], ty[RUNNER_FLOAT_LANES * ESY];                        \
        memset(tx, 0, sizeof tx);                                                                  \
        memset(ty, 0, sizeof ty);                                                                  \
        memcpy(tx, x + ESX * i, (size_t)r * ESX);                                                  \
        memcpy(ty, y + ESY * i, (size_t)r * ESY);                                                  \
        TAIL(a0, 0) TAIL(a1, 1) TAIL(a2, 2) TAIL(a3, 3) TAIL(a4, 4) TAIL(a5, 5) TAIL(a6, 6) TAIL(a7, 7) \
    }                                                                                              \
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);

/* ESX/ESY: bytes per value of x and y; LOADX/LOADY: eight of them as floats. */
void runner_vec_dot_f32_avx2(int64_t n, float *s, const void *vx, const void *vy) {
#define ESX 4
#define ESY 4
#define LOADX load_f32x8
#define LOADY load_f32x8
    FLOAT_DOT_AVX2
#undef LOADX
#undef LOADY
#undef ESX
#undef ESY
}

void runner_vec_dot_f16_f16_avx2(int64_t n, float *s, const void *vx, const void *vy) {
#define ESX 2
#define ESY 2
#define LOADX load_f16x8
#define LOADY load_f16x8
    FLOAT_DOT_AVX2
#undef LOADX
#undef LOADY
#undef ESX
#undef ESY
}

void runner_vec_dot_f16_avx2(int64_t n, float *s, const void *vx, const void *vy) {
#define ESX 2
#define ESY 4
#define LOADX load_f16x8
#define LOADY load_f32x8
    FLOAT_DOT_AVX2
#undef LOADX
#undef LOADY
#undef ESX
#undef ESY
}

/* ---- BF16: even values of each 16 to one accumulator, odd to another ------------------------------
 * Values 16q .. 16q+15 of a 64-value chunk (q = 0..3) are 8 words; the even value of word k is
 * lane 32*(q/2) + 8*(q%2) + k, the odd one 16 lanes further: accumulator 4*(q/2) + (q%2) (even)
 * or that + 2 (odd). */
#define BF16_STEP(Q, AE, AO)                                                                       \
    {                                                                                              \
        const __m256i wx = _mm256_loadu_si256((const __m256i *)(const void *)(px + 32 * (Q)));     \
        const __m256i wy = _mm256_loadu_si256((const __m256i *)(const void *)(py + 32 * (Q)));     \
        AE = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wx, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(wy, 16)), AE); \
        AO = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(wx, hi)), _mm256_castsi256_ps(_mm256_and_si256(wy, hi)), AO); \
    }

#define BF16_TAIL(Q, AE, AO)                                                                       \
    if (16 * (Q) < r) {                                                                            \
        const __m256i wx = _mm256_loadu_si256((const __m256i *)(const void *)(tx + 32 * (Q)));     \
        const __m256i wy = _mm256_loadu_si256((const __m256i *)(const void *)(ty + 32 * (Q)));     \
        const __m256 fe = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wx, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(wy, 16)), AE); \
        const __m256 fo = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(wx, hi)), _mm256_castsi256_ps(_mm256_and_si256(wy, hi)), AO); \
        AE = _mm256_blendv_ps(AE, fe, pair_lanes_below(r - 16 * (Q), 0));                          \
        AO = _mm256_blendv_ps(AO, fo, pair_lanes_below(r - 16 * (Q), 1));                          \
    }

void runner_vec_dot_bf16_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        const uint8_t *px = x + 2 * i, *py = y + 2 * i;
        BF16_STEP(0, a0, a2) BF16_STEP(1, a1, a3) BF16_STEP(2, a4, a6) BF16_STEP(3, a5, a7)
    }
    if (i < n) {
        const int r = (int)(n - i);
        uint8_t tx[RUNNER_FLOAT_LANES * 2], ty[RUNNER_FLOAT_LANES * 2];
        memset(tx, 0, sizeof tx);
        memset(ty, 0, sizeof ty);
        memcpy(tx, x + 2 * i, (size_t)r * 2);
        memcpy(ty, y + 2 * i, (size_t)r * 2);
        BF16_TAIL(0, a0, a2) BF16_TAIL(1, a1, a3) BF16_TAIL(2, a4, a6) BF16_TAIL(3, a5, a7)
    }
    *s = reduce_lanes_8x8(a0, a1, a2, a3, a4, a5, a6, a7);
}

/* ---- activation conversions ----------------------------------------------------------------------- */

void runner_from_float_f16_avx2(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(y + 2 * i), h);
    }
    runner_from_float_f16_scalar(x + i, y + 2 * i, n - i);
}

void runner_from_float_bf16_avx2(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i round = _mm256_set1_epi32(0x7fff);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i quiet = _mm256_set1_epi32(64);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        const __m256i top = _mm256_srli_epi32(u, 16);
        const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(round, _mm256_and_si256(top, one))), 16);
        const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(top, quiet), nan);
        /* 8 x u32 (each < 0x10000) -> 8 x u16: packus works per 128-bit half, then gather the halves. */
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(void *)(y + 2 * i), _mm256_castsi256_si128(packed));
    }
    runner_from_float_bf16_scalar(x + i, y + 2 * i, n - i);
}

/* F16C's conversion rounds to nearest even and quiets NaNs keeping the payload's top bits, as
 * runner_fp32_to_fp16 does; the tail goes through the scalar loop. */
void runner_round_f16_avx2(int64_t n, float a, const float *x, float *y) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    runner_round_f16_scalar(n - i, a, x + i, y + i);
}
