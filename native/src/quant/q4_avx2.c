/*
 * Q4_0 x Q8_0 and Q4_1 x Q8_1 with AVX2 + FMA + F16C. Bitwise equal to q4.c: integer block sums
 * are exact, the float part follows block_avx2.h.
 */
#include "quant/block_avx2.h"

/* 16 bytes of nibbles -> 32 bytes in value order (low nibbles are values 0..15, high 16..31). */
static inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/*
 * sum (q - 8) * y as eight int32 partials: maddubs(q, y) - maddubs(8, y) in int16 (|q*y pair| <=
 * 3840 and |8*y pair| <= 2048, so neither saturates nor does their difference), then pairs to int32.
 */
static inline __m256i q4_0_partials(const uint8_t *xq, const uint8_t *yq) {
    const __m256i q = unpack_nibbles(xq);
    const __m256i yv = _mm256_loadu_si256((const __m256i *)(const void *)yq);
    const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, yv), _mm256_maddubs_epi16(_mm256_set1_epi8(8), yv));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

static inline __m256i q4_1_partials(const uint8_t *xq, const uint8_t *yq) {
    const __m256i q = unpack_nibbles(xq);
    const __m256i yv = _mm256_loadu_si256((const __m256i *)(const void *)yq);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, yv), _mm256_set1_epi16(1));
}

#define Q4_0_PARTIALS(k, xb, yb) p[k] = q4_0_partials((xb) + Q4_0_QS, (yb) + Q8_0_QS);
#define Q4_1_PARTIALS(k, xb, yb) p[k] = q4_1_partials((xb) + Q4_1_QS, (yb) + Q8_1_QS);

void runner_vec_dot_q4_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q4_0_BYTES, Q8_0_BYTES, 0, 0, 0, Q4_0_PARTIALS)
}

void runner_vec_dot_q4_1_q8_1_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q4_1_BYTES, Q8_1_BYTES, 1, Q4_1_M, Q8_1_S, Q4_1_PARTIALS)
}
