/*
 * Q4_0 x Q8_0 and Q4_1 x Q8_1 with AVX-512 VNNI, for one row (vec_dot) or two rows sharing the
 * activation row (vec_dot2). Bitwise equal to q4.c.
 *
 * Per four blocks: the four 16-byte nibble arrays fill one zmm; its low nibbles (values 0..15 of
 * each block) and high nibbles (16..31) dot, with VPDPBUSD (u8 x s8, exact int32), against the
 * activations' first and second 16 bytes of the same blocks. For Q4_0 the "-8" is applied as
 * 8 * sum(y), from a second VPDPBUSD against a vector of 8s, once per activation block however
 * many rows use it. Each block ends in one 128-bit chunk: layout A of block_avx512.h.
 */
#include "quant/block_avx512.h"

static ALWAYS_INLINE void q4_group(__m512i isum[2], const uint8_t *const xg[2], const uint8_t *yg, int count, int R,
                                   int xb, int xqs, int yb, int yqs, int offset) {
    __m512i z[2][4];
    const __m512i mask = _mm512_set1_epi8(0x0f);
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
            const __m512i packed = load_chunks4(xg[r] + 4 * k * xb + xqs, xb, valid);
            const __m512i lo = _mm512_and_si512(packed, mask);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
            const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo), hi, yhi);
            z[r][k] = offset ? _mm512_sub_epi32(d, c) : d;
        }
    }
    for (int r = 0; r < R; r++) isum[r] = reduce_4x4(z[r][0], z[r][1], z[r][2], z[r][3]);
}

#define Q4_0_GROUP(isum, xg, yg, count, R) q4_group(isum, xg, yg, count, R, Q4_0_BYTES, Q4_0_QS, Q8_0_BYTES, Q8_0_QS, 8)
#define Q4_1_GROUP(isum, xg, yg, count, R) q4_group(isum, xg, yg, count, R, Q4_1_BYTES, Q4_1_QS, Q8_1_BYTES, Q8_1_QS, 0)

void runner_vec_dot_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q4_0_BYTES, Q8_0_BYTES, 0, perm_4x4, inv_4x4, Q4_0_GROUP, 2048)
}

void runner_vec_dot2_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy) {
    BLOCK_DOT_AVX512(2, Q4_0_BYTES, Q8_0_BYTES, 0, perm_4x4, inv_4x4, Q4_0_GROUP, 2048)
}

void runner_vec_dot_q4_1_q8_1_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const size_t bx = 0;
    BLOCK_DOT_AVX512(1, Q4_1_BYTES, Q8_1_BYTES, 1, perm_4x4, inv_4x4, Q4_1_GROUP, 0)
}

void runner_vec_dot2_q4_1_q8_1_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy) {
    BLOCK_DOT_AVX512(2, Q4_1_BYTES, Q8_1_BYTES, 1, perm_4x4, inv_4x4, Q4_1_GROUP, 0)
}

/* Q4_0 for PACKED_TILE_AVX512: four blocks' nibbles as signed quants q - 8. */
static ALWAYS_INLINE void q4_0_unpack(const uint8_t *xg, int k, int valid, __m512i *lo, __m512i *hi) {
    const __m512i mask = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    const __m512i packed = load_chunks4(xg + 4 * k * Q4_0_BYTES + Q4_0_QS, Q4_0_BYTES, valid);
    *lo = _mm512_sub_epi8(_mm512_and_si512(packed, mask), eight);
    *hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(packed, 4), mask), eight);
}

void runner_vec_dot_tile_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by) {
    (void)bx; /* one row */
    PACKED_TILE_AVX512(Q4_0_BYTES, q4_0_unpack)
}

void runner_vec_dot_tile_few_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc) {
    (void)bx;
    PACKED_TILE_AVX512_N(Q4_0_BYTES, q4_0_unpack, nc)
}

/*
 * Q4_0 decode against the activation packed by runner_q8_0_mv_pack (q8.c), one row or two rows
 * sharing it: q4_group's integers with the activation's quants already in layout A and its
 * 8 * sum(q) and scales already per lane, so the activation costs two loads per four blocks and two
 * per sixteen (no shuffles, no offset VPDPBUSD, no half conversion). Bitwise vec_dot / vec_dot2.
 */
#define MV_GROUP_BYTES (16 * QK + 16 * 4 + 16 * 4)

static ALWAYS_INLINE void q4_0_mv(int64_t n, float *s, const uint8_t *x0, const uint8_t *x1, const uint8_t *yp, int R) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const int64_t nb = n / QK;
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int count = nb - b0 < 16 ? (int)(nb - b0) : 16;
        const uint8_t *const xg[2] = {x0 + b0 * Q4_0_BYTES, x1 + b0 * Q4_0_BYTES};
        const uint8_t *const yg = yp + (b0 / 16) * MV_GROUP_BYTES;
        for (int pf = 0; pf < 16 * Q4_0_BYTES; pf += 64) {
            _mm_prefetch((const char *)(xg[0] + 2048 + pf), _MM_HINT_T0);
            if (R > 1) _mm_prefetch((const char *)(xg[1] + 2048 + pf), _MM_HINT_T0);
        }
        __m512i z[2][4];
        for (int k = 0; k < 4; k++) {
            const int valid = count - 4 * k;
            if (valid <= 0) {
                z[0][k] = z[1][k] = _mm512_setzero_si512();
                continue;
            }
            const __m512i ylo = _mm512_loadu_si512((const void *)(yg + 128 * k)), yhi = _mm512_loadu_si512((const void *)(yg + 128 * k + 64));
            for (int r = 0; r < R; r++) {
                const __m512i packed = load_chunks4(xg[r] + 4 * k * Q4_0_BYTES + Q4_0_QS, Q4_0_BYTES, valid);
                const __m512i lo = _mm512_and_si512(packed, mask);
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
                z[r][k] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo), hi, yhi);
            }
        }
        const __m512i off = _mm512_loadu_si512((const void *)(yg + 16 * QK));
        const __m512 dy = _mm512_loadu_ps((const void *)(yg + 16 * QK + 64));
        const __mmask16 m = count == 16 ? (__mmask16)0xffff : _mm512_cmplt_epi32_mask(_mm512_loadu_si512(perm_4x4), _mm512_set1_epi32(count));
        for (int r = 0; r < R; r++) {
            const __m512i isum = _mm512_sub_epi32(reduce_4x4(z[r][0], z[r][1], z[r][2], z[r][3]), off);
            const __m512 dxy = _mm512_mul_ps(halves16(xg[r], Q4_0_BYTES, perm_4x4, count), dy);
            acc[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum), dxy, acc[r], m);
        }
    }
    for (int r = 0; r < R; r++) s[r] = reduce_block_lanes_avx512(_mm512_permutexvar_ps(_mm512_loadu_si512(inv_4x4), acc[r]));
}

void runner_vec_dot_mv_q4_0_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    q4_0_mv(n, s, vx, vx, vy, 1);
}

void runner_vec_dot2_mv_q4_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy) {
    q4_0_mv(n, s, vx, (const uint8_t *)vx + bx, vy, 2);
}

/*
 * Q4_0 decode of a few tokens at once (a decode group's step): one weight row against nc <= 4
 * activations packed by runner_q8_0_mv_pack (stride by), the row's nibbles unpacked and its scales
 * converted once for all of them. Per column exactly q4_0_mv's operations: bitwise vec_dot.
 */
void runner_vec_dot_mvn_q4_0_avx512(int64_t n, float *s, const void *vx, const void *vy, size_t by, int nc) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const uint8_t *const x = vx, *const y = vy;
    const int64_t nb = n / QK;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int count = nb - b0 < 16 ? (int)(nb - b0) : 16;
        const uint8_t *const xg = x + b0 * Q4_0_BYTES;
        for (int pf = 0; pf < 16 * Q4_0_BYTES; pf += 64) _mm_prefetch((const char *)(xg + 2048 + pf), _MM_HINT_T0);
        __m512i z[4][4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const int valid = count - 4 * k;
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) z[c][k] = _mm512_setzero_si512(); /* columns past nc stay unused */
            if (valid <= 0) continue;
            const __m512i packed = load_chunks4(xg + 4 * k * Q4_0_BYTES + Q4_0_QS, Q4_0_BYTES, valid);
            const __m512i lo = _mm512_and_si512(packed, mask);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), mask);
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                if (c >= nc) break;
                const uint8_t *const yg = y + c * by + (b0 / 16) * MV_GROUP_BYTES;
                const __m512i ylo = _mm512_loadu_si512((const void *)(yg + 128 * k)), yhi = _mm512_loadu_si512((const void *)(yg + 128 * k + 64));
                z[c][k] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z[c][k], lo, ylo), hi, yhi);
            }
        }
        const __m512 dx = halves16(xg, Q4_0_BYTES, perm_4x4, count);
        const __mmask16 m = count == 16 ? (__mmask16)0xffff : _mm512_cmplt_epi32_mask(_mm512_loadu_si512(perm_4x4), _mm512_set1_epi32(count));
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            if (c >= nc) break;
            const uint8_t *const yg = y + c * by + (b0 / 16) * MV_GROUP_BYTES;
            const __m512i off = _mm512_loadu_si512((const void *)(yg + 16 * QK));
            const __m512 dy = _mm512_loadu_ps((const void *)(yg + 16 * QK + 64));
            const __m512i isum = _mm512_sub_epi32(reduce_4x4(z[c][0], z[c][1], z[c][2], z[c][3]), off);
            acc[c] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dx, dy), acc[c], m);
        }
    }
    for (int c = 0; c < nc && c < 4; c++) s[c] = reduce_block_lanes_avx512(_mm512_permutexvar_ps(_mm512_loadu_si512(inv_4x4), acc[c]));
}
