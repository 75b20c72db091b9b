/*
 * block_avx512.h: the shared half of the block dot products with AVX-512 (F/BW/VL + VNNI),
 * for q4_avx512.c, q5_avx512.c and q8_avx512.c only (compiled with the AVX-512 flags).
 *
 * Blocks are taken in groups of sixteen, so one zmm of float accumulators holds all sixteen
 * canonical lanes. A kernel produces, per group, int32 partial sums in one of two layouts and
 * reduces them to one zmm of exact block sums whose lane L holds block PERM[L] of the group
 * (a fixed permutation that is cheaper than sorting). The scales are assembled in the same
 * permuted order, every lane then runs exactly the scalar reference's FMA sequence for its
 * block lane, and one permute at the end puts the lanes back in canonical order before the
 * canonical tree. A short last group loads nothing past the row (blocks beyond it read as zero)
 * and uses merge-masked FMAs (lanes it does not reach stay untouched, as in the reference).
 */
#ifndef RUNNER_BLOCK_AVX512_H
#define RUNNER_BLOCK_AVX512_H

#include <immintrin.h>

#include "quant/quant_impl.h"

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* Layout A (4 blocks per zmm, 4 int32 lanes each): z[k] 128-bit chunk j = block 4k + j.
 * Result lane 4j + m = block 4m + j. */
static const int32_t perm_4x4[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
/* Its inverse: canonical lane b is result lane inv[b] (a transpose is its own inverse). */
static const int32_t inv_4x4[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

static ALWAYS_INLINE __m512i reduce_4x4(__m512i z0, __m512i z1, __m512i z2, __m512i z3) {
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z0, z1), _mm512_unpackhi_epi32(z0, z1));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z2, z3), _mm512_unpackhi_epi32(z2, z3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

/* Layout B (2 blocks per zmm, 8 int32 lanes each): z[k] lanes 0-7 = block 2k, 8-15 = block 2k+1.
 * Result lane 4q + m = block 8*(q/2) + 2m + q%2. */
static const int32_t perm_8x2[16] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};
static const int32_t inv_8x2[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};

static ALWAYS_INLINE __m512i reduce_8x2(const __m512i z[8]) {
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
    const __m512i s45 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[4], z[5]), _mm512_unpackhi_epi32(z[4], z[5]));
    const __m512i s67 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[6], z[7]), _mm512_unpackhi_epi32(z[6], z[7]));
    const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
    const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi64(s45, s67), _mm512_unpackhi_epi64(s45, s67));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(t0, t1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Four 16-byte chunks at p + j*stride into zmm chunk j, for j < valid (0..4); zero elsewhere. */
static ALWAYS_INLINE __m512i load_chunks4(const uint8_t *p, int stride, int valid) {
#define CHUNK(j) _mm_loadu_si128((const __m128i *)(const void *)(p + (j) * stride))
    if (valid >= 4) {
        __m512i v = _mm512_castsi128_si512(CHUNK(0));
        v = _mm512_inserti32x4(v, CHUNK(1), 1);
        v = _mm512_inserti32x4(v, CHUNK(2), 2);
        return _mm512_inserti32x4(v, CHUNK(3), 3);
    }
    __m512i v = _mm512_setzero_si512();
    if (valid > 0) v = _mm512_inserti32x4(v, CHUNK(0), 0);
    if (valid > 1) v = _mm512_inserti32x4(v, CHUNK(1), 1);
    if (valid > 2) v = _mm512_inserti32x4(v, CHUNK(2), 2);
    return v;
#undef CHUNK
}

/*
 * The 32 quants of four activation blocks (at p + j*stride, j < valid; zero beyond) split into
 * their first halves (values 0..15 of block j in chunk j of *lo) and second halves (*hi): the
 * layout-A partner of four nibble arrays. Four 32-byte loads and four shuffles; sixteen-byte
 * loads straight into chunks (eight loads, six inserts) measured 10% slower on Zen 4.
 */
static ALWAYS_INLINE __m256i load_32_if(const uint8_t *p, int cond) {
    return cond ? _mm256_loadu_si256((const __m256i *)(const void *)p) : _mm256_setzero_si256();
}

static ALWAYS_INLINE void load_act4(const uint8_t *p, int stride, int valid, __m512i *lo, __m512i *hi) {
    const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(load_32_if(p, valid > 0)), load_32_if(p + stride, valid > 1), 1);
    const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(load_32_if(p + 2 * stride, valid > 2)), load_32_if(p + 3 * stride, valid > 3), 1);
    *lo = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    *hi = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

/*
 * The half at base + PERM[L]*stride for every lane L whose block is below count (0 elsewhere), as
 * floats. Sixteen strided halves are assembled in general-purpose registers (four per 64-bit word)
 * and moved over in two pieces: on Zen 4 a VPGATHERDD of 16 lanes costs about 18 cycles, this about
 * one cycle per half, and it uses the integer ports the vector code leaves idle.
 */
static ALWAYS_INLINE __m512 halves16(const uint8_t *base, int stride, const int32_t perm[16], int count) {
    uint64_t q[4];
    for (int i = 0; i < 4; i++) {
        uint64_t v = 0;
        for (int k = 0; k < 4; k++) {
            const int b = perm[4 * i + k];
            if (b < count) v |= (uint64_t)rd_u16(base + b * stride) << (16 * k);
        }
        q[i] = v;
    }
    const __m128i lo = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[0]), (long long)q[1], 1);
    const __m128i hi = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[2]), (long long)q[3], 1);
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

/* Two adjacent halves per block (d and m of Q4_1/Q5_1, d and s of Q8_1) at base + PERM[L]*stride,
 * read as one 32-bit word per block and split in vector registers: half the scalar loads of two
 * halves16() calls. */
static ALWAYS_INLINE void half_pairs16(const uint8_t *base, int stride, const int32_t perm[16], int count, __m512 *first, __m512 *second) {
    uint64_t q[8];
    for (int i = 0; i < 8; i++) {
        const int b0 = perm[2 * i], b1 = perm[2 * i + 1];
        const uint64_t w0 = b0 < count ? rd_u32(base + b0 * stride) : 0;
        const uint64_t w1 = b1 < count ? rd_u32(base + b1 * stride) : 0;
        q[i] = w0 | w1 << 32;
    }
    const __m128i v0 = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[0]), (long long)q[1], 1);
    const __m128i v1 = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[2]), (long long)q[3], 1);
    const __m128i v2 = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[4]), (long long)q[5], 1);
    const __m128i v3 = _mm_insert_epi64(_mm_cvtsi64_si128((long long)q[6]), (long long)q[7], 1);
    const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(v0), v1, 1);
    const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(v2), v3, 1);
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    *first = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w));
    *second = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
}

/* Canonical tree over the 16 block lanes (already in canonical order). */
static ALWAYS_INLINE float reduce_block_lanes_avx512(__m512 v16) {
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v16), 1));
    const __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(v16), hi);                  /* w = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));   /* w = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                             /* w = 2 */
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                              /* w = 1 */
    return _mm_cvtss_f32(v);
}

/*
 * The float half of one group for R (1 or 2) weight rows sharing one activation row: the
 * activation's scales are converted once, then every row runs the reference's per-lane sequence
 * (for _1 types fmaf(m_x, s_y, acc) first, then fmaf(isum, d_x*d_y, acc)) on the lanes in m.
 * `with_min`: d and m (x) and d and s (y) are adjacent halves at the block start.
 */
static ALWAYS_INLINE void block_float_step(__m512 acc[2], const __m512i isum[2], const uint8_t *const xg[2], const uint8_t *yg,
                                           int xb, int yb, int with_min, const int32_t perm[16], int count, __mmask16 m, int R) {
    if (with_min) {
        __m512 dy, sy;
        half_pairs16(yg, yb, perm, count, &dy, &sy);
        for (int r = 0; r < R; r++) {
            __m512 dx, mx;
            half_pairs16(xg[r], xb, perm, count, &dx, &mx);
            acc[r] = _mm512_mask3_fmadd_ps(mx, sy, acc[r], m);
            acc[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_mul_ps(dx, dy), acc[r], m);
        }
    } else {
        const __m512 dy = halves16(yg, yb, perm, count);
        for (int r = 0; r < R; r++) {
            const __m512 dxy = _mm512_mul_ps(halves16(xg[r], xb, perm, count), dy);
            acc[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), dxy, acc[r], m);
        }
    }
}

/*
 * The loop every block kernel shares, for R (1 or 2) weight rows at x and x + bx against one
 * activation row y; s[r] receives row r's dot. GROUP(isum, xg, yg, count, R) must set isum[r]
 * (int32 x 16, in the PERM layout) for the `count` (1..16) blocks at xg[r] / yg. Each row's result
 * is bitwise what the one-row kernel gives: the same integers, the same float sequence per lane.
 * PF > 0 prefetches each row PF bytes ahead (0: none). Decode streams Q4_0 weights from memory with
 * the kernel, not the bandwidth, as the limit, and there a 2 KiB lead measured +4 % at one thread
 * (+1.5 % at two); on Q8_0 it cost 25 %, so it is per type.
 */
#define BLOCK_DOT_AVX512(R, XB, YB, WITH_MIN, PERM, INV, GROUP, PF)                                 \
    const uint8_t *const x0 = (const uint8_t *)vx;                                                  \
    const uint8_t *const x1 = (R) > 1 ? x0 + bx : x0;                                               \
    const uint8_t *y = vy;                                                                          \
    const int64_t nb = n / QK;                                                                      \
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};                                     \
    int64_t b0 = 0;                                                                                 \
    for (; b0 + 16 <= nb; b0 += 16) {                                                               \
        const uint8_t *const xg[2] = {x0 + b0 * (XB), x1 + b0 * (XB)};                              \
        for (int pf = 0; (PF) && pf < 16 * (XB); pf += 64) {                                        \
            _mm_prefetch((const char *)(xg[0] + (PF) + pf), _MM_HINT_T0);                           \
            if ((R) > 1) _mm_prefetch((const char *)(xg[1] + (PF) + pf), _MM_HINT_T0);             \
        }                                                                                           \
        const uint8_t *yg = y + b0 * (YB);                                                          \
        __m512i isum[2];                                                                            \
        GROUP(isum, xg, yg, 16, R);                                                                 \
        block_float_step(acc, isum, xg, yg, (XB), (YB), (WITH_MIN), PERM, 16, (__mmask16)0xffff, R); \
    }                                                                                               \
    if (b0 < nb) {                                                                                  \
        const int count = (int)(nb - b0);                                                           \
        const uint8_t *const xg[2] = {x0 + b0 * (XB), x1 + b0 * (XB)};                              \
        const uint8_t *yg = y + b0 * (YB);                                                          \
        __m512i isum[2];                                                                            \
        GROUP(isum, xg, yg, count, R);                                                              \
        const __mmask16 m = _mm512_cmplt_epi32_mask(_mm512_loadu_si512(PERM), _mm512_set1_epi32(count)); \
        block_float_step(acc, isum, xg, yg, (XB), (YB), (WITH_MIN), PERM, count, m, R);             \
    }                                                                                               \
    for (int r = 0; r < (R); r++) s[r] = reduce_block_lanes_avx512(_mm512_permutexvar_ps(_mm512_loadu_si512(INV), acc[r]));

/* The 4 x 4 transpose of 32-bit words within each 128-bit lane: z[k] lane i word d -> out[d] lane i
 * word k. Four blocks per z[k] (layout A: chunk i = block 4k + i) become, in out[d], words 4d .. 4d+3
 * of all sixteen blocks with block perm_4x4[L] in lane L. */
static ALWAYS_INLINE void transpose_words4(const __m512i z[4], __m512i out[4]) {
    const __m512i a = _mm512_unpacklo_epi32(z[0], z[1]), b = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i c = _mm512_unpacklo_epi32(z[2], z[3]), d = _mm512_unpackhi_epi32(z[2], z[3]);
    out[0] = _mm512_unpacklo_epi64(a, c);
    out[1] = _mm512_unpackhi_epi64(a, c);
    out[2] = _mm512_unpacklo_epi64(b, d);
    out[3] = _mm512_unpackhi_epi64(b, d);
}

/*
 * The 1 x PT_C tile of Q4_0 and Q8_0 weights against activations packed by runner_q8_0_tile_pack
 * (q8.c). Per group of 16 blocks the weight row is unpacked once (XUNPACK(x_group, k, valid, &lo, &hi):
 * signed quants 0..15 and 16..31 of blocks 4k .. 4k+3, layout A) and transposed so that lane L of
 * w[t] holds values 4t .. 4t+3 of block perm_4x4[L], the packed activations' order; its bias
 * 128 * sum(w) per block is one more lane vector. Each activation then costs eight loads and eight
 * VPDPBUSD into one vector whose lane is its block's sum((y + 128) w), minus the bias: the one-row
 * kernels' integers exactly, with no reduction; one load of its sixteen scales (already floats in lane
 * order) and one FMA finish it. Activations run one after another, so the width costs no registers.
 * s[c] = row against activation c, bitwise vec_dot's.
 */
#define PT_C 8
#define PT_GROUP_BYTES (16 * QK + 16 * 4)
#define PT_UNROLL _Pragma("GCC unroll 8")

/* The tile against the first NC (<= PT_C) activations only: decode steps of a few sequences at once
 * (model/group.c) and a prompt's last tokens; every column is still bitwise vec_dot's. */
#define PACKED_TILE_AVX512(XB, XUNPACK) PACKED_TILE_AVX512_N(XB, XUNPACK, PT_C)

#define PACKED_TILE_AVX512_N(XB, XUNPACK, NC)                                                       \
    const uint8_t *const x = vx, *const y = vy;                                                     \
    const int64_t nb = n / QK;                                                                      \
    const __m512i u128 = _mm512_set1_epi8((char)0x80);                                              \
    __m512 acc[PT_C];                                                                               \
    PT_UNROLL                                                                                       \
    for (int c = 0; c < PT_C; c++) acc[c] = _mm512_setzero_ps();                                    \
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {                                                       \
        const int count = nb - b0 < 16 ? (int)(nb - b0) : 16;                                       \
        const uint8_t *const xg = x + b0 * (XB);                                                    \
        const uint8_t *const yg = y + (b0 / 16) * PT_GROUP_BYTES;                                   \
        __m512i lo[4], hi[4], w[8];                                                                 \
        PT_UNROLL                                                                                   \
        for (int k = 0; k < 4; k++) {                                                               \
            const int valid = count - 4 * k;                                                        \
            if (valid <= 0) {                                                                       \
                lo[k] = hi[k] = _mm512_setzero_si512();                                             \
                continue;                                                                           \
            }                                                                                       \
            XUNPACK(xg, k, valid, &lo[k], &hi[k]);                                                  \
        }                                                                                           \
        transpose_words4(lo, w);                                                                    \
        transpose_words4(hi, w + 4);                                                                \
        __m512i bias = _mm512_setzero_si512();                                                      \
        PT_UNROLL                                                                                   \
        for (int t = 0; t < 8; t++) bias = _mm512_dpbusd_epi32(bias, u128, w[t]);                   \
        const __m512 dx = halves16(xg, (XB), perm_4x4, count);                                      \
        const __mmask16 m = count == 16 ? (__mmask16)0xffff : _mm512_cmplt_epi32_mask(_mm512_loadu_si512(perm_4x4), _mm512_set1_epi32(count)); \
        PT_UNROLL                                                                                   \
        for (int c = 0; c < PT_C; c++) {                                                            \
            if (c >= (NC)) break;                                                                   \
            const uint8_t *const g = yg + c * by;                                                   \
            __m512i z0 = _mm512_setzero_si512(), z1 = _mm512_setzero_si512(); /* two chains: latency */ \
            PT_UNROLL                                                                               \
            for (int t = 0; t < 8; t += 2) {                                                        \
                z0 = _mm512_dpbusd_epi32(z0, _mm512_loadu_si512((const void *)(g + 64 * t)), w[t]); \
                z1 = _mm512_dpbusd_epi32(z1, _mm512_loadu_si512((const void *)(g + 64 * t + 64)), w[t + 1]); \
            }                                                                                       \
            const __m512i isum = _mm512_sub_epi32(_mm512_add_epi32(z0, z1), bias);                  \
            const __m512 dy = _mm512_loadu_ps((const void *)(g + 16 * QK));                         \
            acc[c] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dx, dy), acc[c], m); \
        }                                                                                           \
    }                                                                                               \
    PT_UNROLL                                                                                       \
    for (int c = 0; c < PT_C; c++)                                                                  \
        if (c < (NC)) s[c] = reduce_block_lanes_avx512(_mm512_permutexvar_ps(_mm512_loadu_si512(inv_4x4), acc[c]));

#endif /* RUNNER_BLOCK_AVX512_H */
