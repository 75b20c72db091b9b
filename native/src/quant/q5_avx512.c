/*
 * Q5_0 x Q8_0 and Q5_1 x Q8_1 with AVX-512 VNNI. Bitwise equal to q5.c. (A two-row form, as
 * q4_avx512.c has, measured no faster here: the per-row fifth-bit work dominates.) Same scheme as q4_avx512.c; the fifth bits come
 * from qh as byte masks (bit j of block c's qh sets byte 16c + j of the low-nibble vector for
 * j < 16, of the high-nibble vector for j >= 16).
 */
#include "quant/block_avx512.h"

static ALWAYS_INLINE void q5_group(__m512i isum[2], const uint8_t *const xg[2], const uint8_t *yg, int count, int R,
                                   int xb, int xqh, int xqs, int yb, int yqs, int offset) {
    __m512i z[2][4];
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const __m512i sixteen = _mm512_set1_epi8(0x10);
    for (int k = 0; k < 4; k++) {
        const int valid = count - 4 * k;
        if (valid <= 0) {
            z[0][k] = z[1][k] = _mm512_setzero_si512();
            continue;
        }
        __m512i ylo, yhi;
        load_act4(yg + 4 * k * yb + yqs, yb, valid, &ylo, &yhi);
        __m512i c = _mm512_setzero_si512();
        if (offset) {
            const __m512i off = _mm512_set1_epi8((char)offset);
            c = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo), off, yhi);
        }
        for (int r = 0; r < R; r++) {
            const uint8_t *xk = xg[r] + 4 * k * xb;
            uint64_t bits_lo = 0, bits_hi = 0;
            for (int j = 0; j < 4 && j < valid; j++) {
                const uint32_t qh = rd_u32(xk + j * xb + xqh);
                bits_lo |= (uint64_t)(qh & 0xffffu) << (16 * j);
                bits_hi |= (uint64_t)(qh >> 16) << (16 * j);
            }
            const __m512i packed = load_chunks4(xk + xqs, xb, valid);
            __m512i lo = _mm512_and_si512(packed, mask);
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
            lo = _mm512_mask_add_epi8(lo, (__mmask64)bits_lo, lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, (__mmask64)bits_hi, hi, sixteen);
            const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo), hi, yhi);
            z[r][k] = offset ? _mm512_sub_epi32(d, c) : d;
        }
    }
    for (int r = 0; r < R; r++) isum[r] = reduce_4x4(z[r][0], z[r][1], z[r][2], z[r][3]);
}

#define Q5_0_GROUP(isum, xg, yg, count, R) q5_group(isum, xg, yg, count, R, Q5_0_BYTES, Q5_0_QH, Q5_0_QS, Q8_0_BYTES, Q8_0_QS, 16)
#define Q5_1_GROUP(isum, xg, yg, count, R) q5_group(isum, xg, yg, count, R, Q5_1_BYTES, Q5_1_QH, Q5_1_QS, Q8_1_BYTES, Q8_1_QS, 0)

void runner_vec_dot_q5_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q5_0_BYTES, Q8_0_BYTES, 0, perm_4x4, inv_4x4, Q5_0_GROUP, 0)
}

void runner_vec_dot_q5_1_q8_1_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q5_1_BYTES, Q8_1_BYTES, 1, perm_4x4, inv_4x4, Q5_1_GROUP, 0)
}

