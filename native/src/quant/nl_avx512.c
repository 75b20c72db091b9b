/*
 * IQ4_NL x Q8_0 and MXFP4 x Q8_0 with AVX-512 VNNI. Bitwise equal to nl.c. Layout A of
 * block_avx512.h (four blocks per zmm, one 128-bit chunk each): VPSHUFB looks up table + 128 (an
 * unsigned byte), VPDPBUSD dots it with the activations, and 128 * sum(y) (a second VPDPBUSD) is
 * subtracted: exact int32 block sums, whatever the bytes. The float part runs the reference's
 * per-lane FMA in the permuted lane order, then one permute restores canonical order.
 */
#include "quant/block_avx512.h"
#include "quant/nl.h"

static ALWAYS_INLINE void nl_dot_avx512(int64_t n, float *s, const uint8_t *x, const uint8_t *y, const int8_t *table, int mx) {
    const int xb = mx ? MXFP4_BYTES : IQ4_NL_BYTES, xqs = mx ? MXFP4_QS : IQ4_NL_QS;
    const __m128i t128 = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)table), _mm_set1_epi8((char)0x80));
    const __m512i tbl = _mm512_broadcast_i32x4(t128);
    const __m512i mask = _mm512_set1_epi8(0x0f), off = _mm512_set1_epi8((char)0x80);
    const int64_t nb = n / QK;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int count = nb - b0 < 16 ? (int)(nb - b0) : 16;
        const uint8_t *xg = x + b0 * xb, *yg = y + b0 * Q8_0_BYTES;
        __m512i z[4];
        for (int k = 0; k < 4; k++) {
            const int valid = count - 4 * k;
            if (valid <= 0) {
                z[k] = _mm512_setzero_si512();
                continue;
            }
            __m512i ylo, yhi;
            load_act4(yg + 4 * k * Q8_0_BYTES + Q8_0_QS, Q8_0_BYTES, valid, &ylo, &yhi);
            const __m512i packed = load_chunks4(xg + 4 * k * xb + xqs, xb, valid);
            const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(packed, mask));
            const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask));
            const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo), hi, yhi);
            const __m512i c = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo), off, yhi);
            z[k] = _mm512_sub_epi32(d, c);
        }
        const __m512i isum = reduce_4x4(z[0], z[1], z[2], z[3]);
        __m512 dx;
        if (mx) {
            float t[16];
            for (int l = 0; l < 16; l++) t[l] = perm_4x4[l] < count ? runner_e8m0_half(xg[perm_4x4[l] * xb]) : 0.0f;
            dx = _mm512_loadu_ps(t);
        } else {
            dx = halves16(xg, xb, perm_4x4, count);
        }
        const __m512 dxy = _mm512_mul_ps(dx, halves16(yg, Q8_0_BYTES, perm_4x4, count));
        const __mmask16 m = count == 16 ? (__mmask16)0xffff : _mm512_cmplt_epi32_mask(_mm512_loadu_si512(perm_4x4), _mm512_set1_epi32(count));
        acc = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum), dxy, acc, m);
    }
    *s = reduce_block_lanes_avx512(_mm512_permutexvar_ps(_mm512_loadu_si512(inv_4x4), acc));
}

void runner_vec_dot_iq4_nl_q8_0_avx512(int64_t n, float *s, const void *x, const void *y) {
    nl_dot_avx512(n, s, x, y, runner_kvalues_iq4nl, 0);
}

void runner_vec_dot_mxfp4_q8_0_avx512(int64_t n, float *s, const void *x, const void *y) {
    nl_dot_avx512(n, s, x, y, runner_kvalues_mxfp4, 1);
}
