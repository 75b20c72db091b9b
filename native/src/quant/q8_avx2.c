/*
 * Q8_0 / Q8_1 with AVX2 + FMA + F16C: activation quantizers and the Q8 x Q8 dot. Bitwise equal
 * to q8.c (the block maximum is taken in the order q8.c documents, which is this code's order).
 */
#include "quant/block_avx2.h"

/* Quantize one block of 32 floats the way ggml's x86 quantize_row_q8_0 does; returns d, writes
 * the 32 quants to qs and (when sum != NULL) their sum. */
static inline float quantize_block_avx2(const float *x, uint8_t *qs, int32_t *sum) {
    __m256 v0 = _mm256_loadu_ps(x);
    __m256 v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16);
    __m256 v3 = _mm256_loadu_ps(x + 24);

    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_andnot_ps(sign, v0);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v1));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v2));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v3));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float max_scalar = _mm_cvtss_f32(m4);

    const float d = max_scalar / 127.0f;
    const __m256 id = _mm256_set1_ps(max_scalar != 0.0f ? 127.0f / max_scalar : 0.0f);
    const int r = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), r));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), r));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), r));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), r));
    /* int32 -> int8 with signed saturation; the packs work per 128-bit half, so fix the order. */
    const __m256i w01 = _mm256_packs_epi32(i0, i1);
    const __m256i w23 = _mm256_packs_epi32(i2, i3);
    __m256i q = _mm256_packs_epi16(w01, w23);
    q = _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)qs, q);

    if (sum) {
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q); /* 1 * q, pairwise */
        const __m256i s8 = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        *sum = _mm_cvtsi128_si32(s4);
    }
    return d;
}

void runner_from_float_q8_0_avx2(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_0_BYTES;
        const float d = quantize_block_avx2(x + b * QK, blk + Q8_0_QS, NULL);
        wr_u16(blk, runner_fp32_to_fp16(d));
    }
}

void runner_from_float_q8_1_avx2(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_1_BYTES;
        int32_t sum = 0;
        const float d = quantize_block_avx2(x + b * QK, blk + Q8_1_QS, &sum);
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q8_1_S, runner_fp32_to_fp16(d * (float)sum));
    }
}

/*
 * int8 x int8 over one block, exact for every byte (including -128, which the usual
 * sign/maddubs trick gets wrong): sign-extend to int16 and multiply-add pairs into int32.
 */
static inline __m256i q8_partials(const uint8_t *xq, const uint8_t *yq) {
    const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)xq));
    const __m256i x1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(xq + 16)));
    const __m256i y0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)yq));
    const __m256i y1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(yq + 16)));
    return _mm256_add_epi32(_mm256_madd_epi16(x0, y0), _mm256_madd_epi16(x1, y1));
}

#define Q8_0_PARTIALS(k, xb, yb) p[k] = q8_partials((xb) + Q8_0_QS, (yb) + Q8_0_QS);
#define Q8_1_PARTIALS(k, xb, yb) p[k] = q8_partials((xb) + Q8_1_QS, (yb) + Q8_1_QS);

void runner_vec_dot_q8_0_q8_0_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q8_0_BYTES, Q8_0_BYTES, 0, 0, 0, Q8_0_PARTIALS)
}

void runner_vec_dot_q8_1_q8_1_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    BLOCK_DOT_AVX2(Q8_1_BYTES, Q8_1_BYTES, 0, 0, 0, Q8_1_PARTIALS)
}
