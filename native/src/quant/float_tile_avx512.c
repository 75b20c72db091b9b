/*
 * Prompt tiles for F32, F16 and BF16 weights (AVX-512 F/BW/VL): 2 weight rows against 3 activation
 * rows, every result bitwise the vec_dot of float.c (same 64 canonical lanes, same FMA per value,
 * same tree).
 *
 * Why a tile pays: the one-row kernel loads one activation value per FMA and converts each weight
 * value once per token. The tile loads and converts each weight vector once for 3 tokens and loads
 * each activation vector once for 2 rows. One output's 64 lanes are four zmm accumulators (lanes
 * 16k .. 16k+15 in zmm k), so the tile's 24 accumulators stay in registers with 8 to spare; they are
 * named variables, since GCC keeps an array of vectors in memory.
 *
 * Measured on Zen 4 (one core, 16 rows x 96 tokens of 2,048 values, GFLOP/s): BF16 41 -> 84; F32
 * 30 -> 41 and F16 36 -> 38, both held back by the L2 (the tile's 2 + 3 vectors per 6 FMAs come
 * from L2 at 4 bytes per value) and F16 also by VCVTPH2PS, which costs about four FMAs' time per
 * zmm there. Widening F16 rows to floats once per chunk and running the F32 tile measured the same
 * (38.6), so F16 widens in the tile and reads half the bytes.
 */
#include <immintrin.h>

#include "quant/quant_impl.h"

#define TILE_R 2
#define TILE_C 3

/* Bits 0..count-1 of 16 (count clamped to 0..16). */
static inline __mmask16 below16(int64_t count) {
    if (count <= 0) return 0;
    if (count >= 16) return 0xffff;
    return (__mmask16)((1u << count) - 1u);
}

/* The canonical tree over four zmm accumulators (lanes 16k .. 16k+15 in zmm k): w = 32, 16 across
 * registers, 8 across halves, then 4, 2, 1 (float.c's reduce_float_lanes). */
static inline float reduce_lanes_4x16(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    a0 = _mm512_add_ps(a0, a2); /* w = 32 */
    a1 = _mm512_add_ps(a1, a3);
    a0 = _mm512_add_ps(a0, a1); /* w = 16 */
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a0), _mm512_extractf32x8_ps(a0, 1)); /* w = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));            /* w = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                                   /* w = 2 */
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                                    /* w = 1 */
    return _mm_cvtss_f32(v);
}

/* ---- F32 x F32: lane(i) = i % 64 -------------------------------------------------------------- */

/* The accumulators are named variables, not an array: GCC keeps an array of vectors in memory. */
#define ACC4(R, C) __m512 a##R##C##0 = _mm512_setzero_ps(), a##R##C##1 = a##R##C##0, a##R##C##2 = a##R##C##0, a##R##C##3 = a##R##C##0;
#define ACC_ALL ACC4(0, 0) ACC4(1, 0) ACC4(0, 1) ACC4(1, 1) ACC4(0, 2) ACC4(1, 2)
#define STORE(C)                                                                                     \
    if (nc > (C)) {                                                                                  \
        s[TILE_R * (C)] = reduce_lanes_4x16(a0##C##0, a0##C##1, a0##C##2, a0##C##3);                 \
        s[TILE_R * (C) + 1] = reduce_lanes_4x16(a1##C##0, a1##C##1, a1##C##2, a1##C##3);             \
    }

/* zmm K of one 64-value step at value i (M: its values present) for activation C. */
#define F32_COL(C, K, M)                                                                             \
    if (nc > (C)) {                                                                                  \
        const __m512 ya = _mm512_maskz_loadu_ps(M, y + (size_t)(C) * by + 4 * (i + 16 * (K)));      \
        a0##C##K = _mm512_mask3_fmadd_ps(w0, ya, a0##C##K, M);                                       \
        a1##C##K = _mm512_mask3_fmadd_ps(w1, ya, a1##C##K, M);                                       \
    }
#define F32_ZMM(K, M)                                                                                \
    {                                                                                                \
        const __m512 w0 = _mm512_maskz_loadu_ps(M, x + 4 * (i + 16 * (K))), w1 = _mm512_maskz_loadu_ps(M, x + bx + 4 * (i + 16 * (K))); \
        F32_COL(0, K, M) F32_COL(1, K, M) F32_COL(2, K, M)                                           \
    }

/* The tile's loop around ZMM (F32_ZMM, F16_ZMM): whole 64-value steps, then the tail's zmm that
 * have values, each under its mask. NAME(n, s, x, bx, y, by, nc) fills s[2c + r] for c < nc. */
#define FLOAT_TILE(NAME, ZMM)                                                                        \
    static inline __attribute__((always_inline)) void NAME(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, const int nc) { \
        const uint8_t *x = vx, *y = vy;                                                              \
        ACC_ALL                                                                                      \
        int64_t i = 0;                                                                               \
        for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {                               \
            ZMM(0, 0xffff) ZMM(1, 0xffff) ZMM(2, 0xffff) ZMM(3, 0xffff)                              \
        }                                                                                            \
        if (i < n) {                                                                                 \
            const __mmask16 m0 = below16(n - i), m1 = below16(n - i - 16), m2 = below16(n - i - 32), m3 = below16(n - i - 48); \
            ZMM(0, m0)                                                                               \
            if (m1) ZMM(1, m1)                                                                       \
            if (m2) ZMM(2, m2)                                                                       \
            if (m3) ZMM(3, m3)                                                                       \
        }                                                                                            \
        STORE(0) STORE(1) STORE(2)                                                                   \
    }

/* The kernel table's two entries over a tile body: the full tile, and its first nc (1 or 2) activations. */
#define TILE_ENTRIES(TYPE, BODY)                                                                     \
    void runner_vec_dot_tile_##TYPE##_avx512(int64_t n, float *s, const void *x, size_t bx, const void *y, size_t by) { \
        BODY(n, s, x, bx, y, by, TILE_C);                                                            \
    }                                                                                                \
    void runner_vec_dot_tile_few_##TYPE##_avx512(int64_t n, float *s, const void *x, size_t bx, const void *y, size_t by, int nc) { \
        if (nc == 1) BODY(n, s, x, bx, y, by, 1);                                                    \
        else BODY(n, s, x, bx, y, by, 2);                                                            \
    }

FLOAT_TILE(f32_tile, F32_ZMM)
TILE_ENTRIES(f32, f32_tile)

/* 16 halves at p (those in m; the others read as +0) as floats, through the 256-bit VCVTPH2PS: on
 * Zen 4 the 512-bit form has a quarter of its throughput (docs/kernels.md). */
static inline __m512 f16x16(const uint8_t *p, __mmask16 m) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtph_ps(_mm256_castsi256_si128(h))), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), 1);
}

/* ---- F16 weights x F32 activations: lane(i) = i % 64 (F32's loop, weights widened) ------------- */

#define F16_ZMM(K, M)                                                                                \
    {                                                                                                \
        const __m512 w0 = f16x16(x + 2 * (i + 16 * (K)), M), w1 = f16x16(x + bx + 2 * (i + 16 * (K)), M); \
        F32_COL(0, K, M) F32_COL(1, K, M) F32_COL(2, K, M)                                           \
    }

FLOAT_TILE(f16_tile, F16_ZMM)

TILE_ENTRIES(f16, f16_tile)

/* ---- BF16 x BF16: lane(i) = 32*(r/32) + 16*(r%2) + (r%32)/2 with r = i % 64 ----------------------
 * 32 values at 32q are 16 words: shifted left by 16 they are the even values (lanes 32q .. 32q+15,
 * zmm 2q), masked to their high half the odd ones (zmm 2q + 1). */

/* Half Q (32 values, words 16Q ..) of one 64-value step: MW its words present, ME / MO its even / odd
 * lanes present. */
#define BF16_COL(C, Q, MW, ME, MO)                                                                   \
    if (nc > (C)) {                                                                                  \
        const __m512i v = _mm512_maskz_loadu_epi16(MW, y + (size_t)(C) * by + 2 * i + 64 * (Q));     \
        const __m512 ye = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), yo = _mm512_castsi512_ps(_mm512_and_si512(v, hi)); \
        BF16_FMA(C, Q, ME, MO)                                                                       \
    }
#define BF16_FMA(C, Q, ME, MO) BF16_FMA_(C, BF16_E##Q, BF16_O##Q, ME, MO)
#define BF16_FMA_(C, E, O, ME, MO) BF16_FMA__(C, E, O, ME, MO)
#define BF16_FMA__(C, E, O, ME, MO)                                                                  \
    a0##C##E = _mm512_mask3_fmadd_ps(we0, ye, a0##C##E, ME);                                         \
    a1##C##E = _mm512_mask3_fmadd_ps(we1, ye, a1##C##E, ME);                                         \
    a0##C##O = _mm512_mask3_fmadd_ps(wo0, yo, a0##C##O, MO);                                         \
    a1##C##O = _mm512_mask3_fmadd_ps(wo1, yo, a1##C##O, MO);
/* half q's even values are zmm 2q, its odd ones zmm 2q + 1 */
#define BF16_E0 0
#define BF16_O0 1
#define BF16_E1 2
#define BF16_O1 3
#define BF16_HALF(Q, MW, ME, MO)                                                                     \
    {                                                                                                \
        const __m512i v0 = _mm512_maskz_loadu_epi16(MW, x + 2 * i + 64 * (Q));                      \
        const __m512i v1 = _mm512_maskz_loadu_epi16(MW, x + bx + 2 * i + 64 * (Q));                 \
        const __m512 we0 = _mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)), wo0 = _mm512_castsi512_ps(_mm512_and_si512(v0, hi)); \
        const __m512 we1 = _mm512_castsi512_ps(_mm512_slli_epi32(v1, 16)), wo1 = _mm512_castsi512_ps(_mm512_and_si512(v1, hi)); \
        BF16_COL(0, Q, MW, ME, MO) BF16_COL(1, Q, MW, ME, MO) BF16_COL(2, Q, MW, ME, MO)             \
    }

/* The lanes of words 0..15 whose even value 2k is below c. */
static inline __mmask16 bf16_lanes(int64_t c) {
    return below16(c <= 0 ? 0 : (c + 1) / 2);
}

/* Values 0..c-1 of 32 (c clamped to 0..32). */
static inline __mmask32 below32(int64_t c) {
    if (c <= 0) return 0;
    if (c >= 32) return 0xffffffffu;
    return (__mmask32)((1u << c) - 1u);
}

static inline __attribute__((always_inline)) void bf16_tile(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, const int nc) {
    const uint8_t *x = vx, *y = vy;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    ACC_ALL
    int64_t i = 0;
    for (; i + RUNNER_FLOAT_LANES <= n; i += RUNNER_FLOAT_LANES) {
        BF16_HALF(0, 0xffffffffu, 0xffff, 0xffff) BF16_HALF(1, 0xffffffffu, 0xffff, 0xffff)
    }
    if (i < n) {
        /* c values left from value 32q: word k holds its even value when 2k < c, its odd one when
         * 2k + 1 < c. The loads stop at the row's last value (16-bit masks), so an odd count's last
         * word has a zero high half, which the odd mask leaves out anyway. */
        const int64_t c0 = n - i, c1 = n - i - 32;
        BF16_HALF(0, below32(c0), bf16_lanes(c0), below16(c0 / 2))
        if (c1 > 0) BF16_HALF(1, below32(c1), bf16_lanes(c1), below16(c1 / 2))
    }
    STORE(0) STORE(1) STORE(2)
}

TILE_ENTRIES(bf16, bf16_tile)
