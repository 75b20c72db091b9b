/*
 * Q5_0 x Q8_0 and Q5_1 x Q8_1 with AVX2 + FMA + F16C. Bitwise equal to q5.c.
 */
#include "quant/block_avx2.h"

/* The 32 five-bit values of a block, one per byte, in value order. */
static inline __m256i unpack_q5(const uint8_t *qs, const uint8_t *qh_bytes) {
    const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    const __m256i nib = _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    /* Byte j gets bit j of qh: broadcast qh, give byte j the qh byte j/8, then test bit j%8. */
    const __m256i qh = _mm256_set1_epi32((int)rd_u32(qh_bytes));
    const __m256i spread = _mm256_shuffle_epi8(qh, _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                      0x0101010101010101, 0x0000000000000000));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_or_si256(nib, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
}

/* |q*y pair| <= 2*31*128 = 7936 and |16*y pair| <= 4096: no int16 saturation. */
static inline __m256i q5_0_partials(const uint8_t *xb, const uint8_t *yq) {
    const __m256i q = unpack_q5(xb + Q5_0_QS, xb + Q5_0_QH);
    const __m256i yv = _mm256_loadu_si256((const __m256i *)(const void *)yq);
    const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, yv), _mm256_maddubs_epi16(_mm256_set1_epi8(16), yv));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

static inline __m256i q5_1_partials(const uint8_t *xb, const uint8_t *yq) {
    const __m256i q = unpack_q5(xb + Q5_1_QS, xb + Q5_1_QH);
    const __m256i yv = _mm256_loadu_si256((const __m256i *)(const void *)yq);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, yv), _mm256_set1_epi16(1));
}

#define Q5_0_PARTIALS(k, xb, yb) p[k] = q5_0_partials((xb), (yb) + Q8_0_QS);
#define Q5_1_PARTIALS(k, xb, yb) p[k] = q5_1_partials((xb), (yb) + Q8_1_QS);

void runner_vec_dot_q5_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q5_0_BYTES, Q8_0_BYTES, 0, 0, 0, Q5_0_PARTIALS)
}

void runner_vec_dot_q5_1_q8_1_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q5_1_BYTES, Q8_1_BYTES, 1, Q5_1_M, Q8_1_S, Q5_1_PARTIALS)
}
