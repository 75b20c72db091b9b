/*
 * IQ4_NL x Q8_0 and MXFP4 x Q8_0 with AVX2 + FMA + F16C. Bitwise equal to nl.c: the table values
 * come from VPSHUFB, the integer block sums are exact (int8 x int8 products summed with VPMADDWD;
 * the VPMADDUBSW sign trick would be wrong for an activation of -128), and the float part follows
 * block_avx2.h (groups of eight blocks alternating between lanes 0-7 and 8-15).
 */
#include "quant/block_avx2.h"
#include "quant/nl.h"

static inline __attribute__((always_inline)) __m256i nl_partials(const uint8_t *xq, const uint8_t *yq, __m256i tbl) {
    const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)xq);
    const __m256i q = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1), _mm256_set1_epi8(0x0f));
    const __m256i v = _mm256_shuffle_epi8(tbl, q);
    const __m256i yv = _mm256_loadu_si256((const __m256i *)(const void *)yq);
    const __m256i lo = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(yv)));
    const __m256i hi = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(v, 1)), _mm256_cvtepi8_epi16(_mm256_extracti128_si256(yv, 1)));
    return _mm256_add_epi32(lo, hi);
}

static inline __attribute__((always_inline)) void nl_dot_avx2(int64_t n, float *s, const uint8_t *x, const uint8_t *y, const int8_t *table, int mx) {
    const int xb = mx ? MXFP4_BYTES : IQ4_NL_BYTES, xqs = mx ? MXFP4_QS : IQ4_NL_QS;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)table));
    const int64_t nb = n / QK;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b0 = 0, g = 0; b0 < nb; b0 += 8, g++) {
        const int count = nb - b0 < 8 ? (int)(nb - b0) : 8;
        const uint8_t *xg = x + b0 * xb, *yg = y + b0 * Q8_0_BYTES;
        __m256i p[8];
        for (int k = 0; k < 8; k++) p[k] = k < count ? nl_partials(xg + k * xb + xqs, yg + k * Q8_0_BYTES + Q8_0_QS, tbl) : _mm256_setzero_si256();
        const __m256i isum = reduce8_blocks(p);
        __m256 dx;
        if (mx) {
            float t[8];
            for (int k = 0; k < 8; k++) t[k] = k < count ? runner_e8m0_half(xg[k * xb]) : 0.0f;
            dx = _mm256_loadu_ps(t);
        } else {
            dx = halves8(xg, xb, count);
        }
        acc[g % 2] = fma_lanes(isum, _mm256_mul_ps(dx, halves8(yg, Q8_0_BYTES, count)), acc[g % 2], count);
    }
    *s = reduce_block_lanes_avx2(acc[0], acc[1]);
}

void runner_vec_dot_iq4_nl_q8_0_avx2(int64_t n, float *s, const void *x, const void *y) {
    nl_dot_avx2(n, s, x, y, runner_kvalues_iq4nl, 0);
}

void runner_vec_dot_mxfp4_q8_0_avx2(int64_t n, float *s, const void *x, const void *y) {
    nl_dot_avx2(n, s, x, y, runner_kvalues_mxfp4, 1);
}
