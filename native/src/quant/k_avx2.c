/*
 * K-quant dots against Q8_K with AVX2 (+FMA, F16C). Bitwise equal to the scalar references: the
 * vector code forms each super-block's exact integer sums (isum, msum of kquant.h) as int32 lanes,
 * and k_x86.h's K_DOT runs the canonical float step for eight super-blocks at once (lane k =
 * super-block k of the group, its canonical lane).
 *
 * Exactness: VPMADDUBSW multiplies unsigned quants (<= 63) by signed activations, pairs stay
 * within int16 (2 * 63 * 128 = 16128); VPMADDWD by the sub-block scales (|sc| <= 128) sums pairs
 * into int32; every lane stays below 2^31, and lane sums are taken modulo 2^32 as the reference's.
 */
#include "quant/k_x86.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define KACC(acc, p, sc) _mm256_add_epi32((acc), _mm256_madd_epi16((p), (sc)))
#define K256(name) name##_avx2
#include "quant/k_parts256.h"

/* ---- Q4_K, Q5_K ------------------------------------------------------------------------------- */

void runner_vec_dot_q4_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q4_K_BYTES, 0, 1, q4k_part_avx2, 0)
}

void runner_vec_dot_q5_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q5_K_BYTES, 0, 1, q5k_part_avx2, 0)
}

/* ---- Q6_K ------------------------------------------------------------------------------------- */

static ALWAYS_INLINE void q6k_part(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    (void)pm;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(xb + Q6_K_SCALES)));
    const __m256i bias = bsum_vec(sc16, yb);
    const __m256i half_sc[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    __m256i a = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i ql0 = ld256(xb + Q6_K_QL + 64 * h), ql1 = ld256(xb + Q6_K_QL + 64 * h + 32);
        const __m256i qh = ld256(xb + Q6_K_QH + 32 * h);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
        for (int k = 0; k < 4; k++) {
            const __m256i p = _mm256_maddubs_epi16(q[k], ld256(yb + Q8_K_QS + 128 * h + 32 * k));
            a = _mm256_add_epi32(a, _mm256_madd_epi16(p, pair16_avx2(half_sc[h], 2 * k)));
        }
    }
    *pi = _mm256_sub_epi32(a, _mm256_slli_epi32(bias, 5)); /* - 32 * sc_j * bsums[j] */
}

void runner_vec_dot_q6_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q6_K_BYTES, Q6_K_D, 0, q6k_part, 0)
}

/* ---- Q3_K, Q2_K ------------------------------------------------------------------------------- */

void runner_vec_dot_q3_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q3_K_BYTES, Q3_K_D, 0, q3k_part_avx2, 0)
}

static ALWAYS_INLINE void q2k_part(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(xb + Q2_K_SCALES));
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
    *pm = bsum_vec(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F))), yb);
    const __m256i half_sc[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    __m256i a = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        __m256i qs = ld256(xb + Q2_K_QS + 32 * h);
        for (int k = 0; k < 4; k++) {
            const __m256i q = _mm256_and_si256(qs, m2);
            qs = _mm256_srli_epi16(qs, 2);
            const __m256i p = _mm256_maddubs_epi16(q, ld256(yb + Q8_K_QS + 128 * h + 32 * k));
            a = _mm256_add_epi32(a, _mm256_madd_epi16(p, pair16_avx2(half_sc[h], 2 * k)));
        }
    }
    *pi = a;
}

void runner_vec_dot_q2_K_q8_K_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q2_K_BYTES, Q2_K_D, 1, q2k_part, 0)
}
