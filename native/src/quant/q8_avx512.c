/*
 * Q8_0 / Q8_1 with AVX-512: activation quantizers (F/BW/VL) and the Q8 x Q8 dot (VNNI).
 * Bitwise equal to q8.c.
 *
 * The dot, for one row (vec_dot) or two rows sharing the activation row (vec_dot2): two blocks per
 * zmm (layout B of block_avx512.h). VPDPBUSD multiplies unsigned by
 * signed bytes, so x is biased to x + 128 (x ^ 0x80) and 128 * sum(y) is taken off again with a
 * second VPDPBUSD: exact for every byte, -128 included.
 */
#include "quant/block_avx512.h"

/* One block the way q8.c's activation quantizer does it; returns d, writes 32 quants to qs and,
 * when sum != NULL, their sum. The block maximum is taken with 256-bit steps in the documented
 * order (MAXPS returns its second operand on NaN, so the order is part of the result). */
static ALWAYS_INLINE float quantize_block_avx512(const float *x, uint8_t *qs, int32_t *sum) {
    const __m512 z0 = _mm512_loadu_ps(x);
    const __m512 z1 = _mm512_loadu_ps(x + 16);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_andnot_ps(sign, _mm512_castps512_ps256(z0));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z0), 1))));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm512_castps512_ps256(z1)));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z1), 1))));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float max_scalar = _mm_cvtss_f32(m4);

    const float d = max_scalar / 127.0f;
    const __m512 id = _mm512_set1_ps(max_scalar != 0.0f ? 127.0f / max_scalar : 0.0f);
    const int r = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512i i0 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(z0, id), r));
    const __m512i i1 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(z1, id), r));
    _mm_storeu_si128((__m128i *)(void *)qs, _mm512_cvtsepi32_epi8(i0));        /* signed saturation */
    _mm_storeu_si128((__m128i *)(void *)(qs + 16), _mm512_cvtsepi32_epi8(i1));
    if (sum) {
        const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
        const __m512i c0 = _mm512_min_epi32(_mm512_max_epi32(i0, lo), hi);
        const __m512i c1 = _mm512_min_epi32(_mm512_max_epi32(i1, lo), hi);
        *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
    }
    return d;
}

void runner_from_float_q8_0_avx512(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_0_BYTES;
        const float d = quantize_block_avx512(x + b * QK, blk + Q8_0_QS, NULL);
        wr_u16(blk, runner_fp32_to_fp16(d));
    }
}

void runner_from_float_q8_1_avx512(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_1_BYTES;
        int32_t sum = 0;
        const float d = quantize_block_avx512(x + b * QK, blk + Q8_1_QS, &sum);
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q8_1_S, runner_fp32_to_fp16(d * (float)sum));
    }
}

/* Two blocks' 32-byte quants at p and p + stride into one zmm (the second only when both). */
static ALWAYS_INLINE __m512i load_pair(const uint8_t *p, int stride, int both) {
    const __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)p));
    if (!both) return _mm512_inserti64x4(v, _mm256_setzero_si256(), 1);
    return _mm512_inserti64x4(v, _mm256_loadu_si256((const __m256i *)(const void *)(p + stride)), 1);
}

static ALWAYS_INLINE void q8_group(__m512i isum[2], const uint8_t *const xg[2], const uint8_t *yg, int count, int R, int b, int qs) {
    __m512i z[2][8];
    const __m512i bias = _mm512_set1_epi8(-128);
    for (int k = 0; k < 8; k++) {
        const int valid = count - 2 * k;
        if (valid <= 0) {
            z[0][k] = z[1][k] = _mm512_setzero_si512();
            continue;
        }
        const __m512i yv = load_pair(yg + 2 * k * b + qs, b, valid >= 2);
        const __m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, yv);
        for (int r = 0; r < R; r++) {
            const __m512i xv = load_pair(xg[r] + 2 * k * b + qs, b, valid >= 2);
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(xv, bias), yv);
            z[r][k] = _mm512_sub_epi32(p, c);
        }
    }
    for (int r = 0; r < R; r++) isum[r] = reduce_8x2(z[r]);
}

#define Q8_0_GROUP(isum, xg, yg, count, R) q8_group(isum, xg, yg, count, R, Q8_0_BYTES, Q8_0_QS)
#define Q8_1_GROUP(isum, xg, yg, count, R) q8_group(isum, xg, yg, count, R, Q8_1_BYTES, Q8_1_QS)

void runner_vec_dot_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q8_0_BYTES, Q8_0_BYTES, 0, perm_8x2, inv_8x2, Q8_0_GROUP, 0)
}

void runner_vec_dot2_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy) {
    BLOCK_DOT_AVX512(2, Q8_0_BYTES, Q8_0_BYTES, 0, perm_8x2, inv_8x2, Q8_0_GROUP, 0)
}

void runner_vec_dot_q8_1_q8_1_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q8_1_BYTES, Q8_1_BYTES, 0, perm_8x2, inv_8x2, Q8_1_GROUP, 0)
}

void runner_vec_dot2_q8_1_q8_1_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy) {
    BLOCK_DOT_AVX512(2, Q8_1_BYTES, Q8_1_BYTES, 0, perm_8x2, inv_8x2, Q8_1_GROUP, 0)
}

/* Q8_0 for PACKED_TILE_AVX512: four blocks' first and second sixteen quants. */
static ALWAYS_INLINE void q8_0_unpack(const uint8_t *xg, int k, int valid, __m512i *lo, __m512i *hi) {
    *lo = load_chunks4(xg + 4 * k * Q8_0_BYTES + Q8_0_QS, Q8_0_BYTES, valid);
    *hi = load_chunks4(xg + 4 * k * Q8_0_BYTES + Q8_0_QS + 16, Q8_0_BYTES, valid);
}

void runner_vec_dot_tile_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by) {
    (void)bx; /* one row */
    PACKED_TILE_AVX512(Q8_0_BYTES, q8_0_unpack)
}

void runner_vec_dot_tile_few_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc) {
    (void)bx; /* one row */
    PACKED_TILE_AVX512_N(Q8_0_BYTES, q8_0_unpack, nc)
}
