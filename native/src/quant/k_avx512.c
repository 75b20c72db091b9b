/*
 * K-quant dots against Q8_K with AVX-512 BW + VNNI. Bitwise equal to the scalar references: the
 * vector code forms each super-block's exact integer sums (kquant.h) and k_x86.h's K_DOT runs the
 * canonical float step for eight super-blocks at once. 64 values per zmm: VPMADDUBSW (u8 quants x
 * s8 activations, pairs within int16), then VPDPWSSD multiplies the int16 pair sums by the
 * sub-block scales (VPERMW puts each sub-block's scale under its lanes) and accumulates in int32.
 */
#include "quant/k_x86.h"
#include "quant/block_avx512.h" /* transpose_words4 */

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define KACC(acc, p, sc) _mm256_dpwssd_epi32((acc), (p), (sc))
#define K256(name) name##_vnni256
#include "quant/k_parts256.h"

static ALWAYS_INLINE __m512i ld512(const uint8_t *p) {
    return _mm512_loadu_si512((const void *)p);
}

/* int16 lanes 0-15 = a, 16-31 = b (shift counts and permute indices). */
static ALWAYS_INLINE __m512i pair_epi16(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)a)), _mm256_set1_epi16((short)b), 1);
}

/* The 16 int32 lanes folded to 8 (exact): what K_DOT's float step takes. */
static ALWAYS_INLINE __m256i fold(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/* int16 lane i of group g takes the scale of sub-block 4g + i/8 (four 16-value sub-blocks per zmm). */
static ALWAYS_INLINE __m512i group_index(int g) {
    const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6,
                                          5, 4, 3, 2, 1, 0);
    return _mm512_add_epi16(_mm512_srli_epi16(lane, 3), _mm512_set1_epi16((short)(4 * g)));
}

/* ---- Q4_K, Q5_K ------------------------------------------------------------------------------- */

void runner_vec_dot_q4_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q4_K_BYTES, 0, 1, q4k_part_vnni256, 2048)
}

void runner_vec_dot_q5_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q5_K_BYTES, 0, 1, q5k_part_vnni256, 0)
}

/* ---- Q6_K ------------------------------------------------------------------------------------- */

static ALWAYS_INLINE void q6k_part(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    (void)pm;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
    const __m512i sh01 = pair_epi16(0, 2), sh23 = pair_epi16(4, 6);
    const __m256i sc256 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(xb + Q6_K_SCALES)));
    const __m256i bias = bsum_vec(sc256, yb);
    const __m512i sc16 = _mm512_castsi256_si512(sc256);
    __m512i a = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        const __m512i ql = ld512(xb + Q6_K_QL + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(ld256(xb + Q6_K_QH + 32 * h));
        const __m512i h01 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh01), m2), 4);
        const __m512i h23 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m2), 4);
        const __m512i q01 = _mm512_or_si512(_mm512_and_si512(ql, m4), h01);
        const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), h23);
        const __m512i p01 = _mm512_maddubs_epi16(q01, ld512(yb + Q8_K_QS + 128 * h));
        const __m512i p23 = _mm512_maddubs_epi16(q23, ld512(yb + Q8_K_QS + 128 * h + 64));
        a = _mm512_dpwssd_epi32(a, p01, _mm512_permutexvar_epi16(group_index(2 * h), sc16));
        a = _mm512_dpwssd_epi32(a, p23, _mm512_permutexvar_epi16(group_index(2 * h + 1), sc16));
    }
    *pi = _mm256_sub_epi32(fold(a), _mm256_slli_epi32(bias, 5)); /* - 32 * sc_j * bsums[j] */
}

void runner_vec_dot_q6_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q6_K_BYTES, Q6_K_D, 0, q6k_part, 0)
}

/* ---- Q3_K, Q2_K ------------------------------------------------------------------------------- */

void runner_vec_dot_q3_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q3_K_BYTES, Q3_K_D, 0, q3k_part_vnni256, 0)
}

static ALWAYS_INLINE void q2k_part(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    const __m512i m2 = _mm512_set1_epi8(3);
    const __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(xb + Q2_K_SCALES));
    const __m256i sc256 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
    *pm = bsum_vec(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F))), yb);
    const __m512i sc16 = _mm512_castsi256_si512(sc256);
    __m512i a = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        const __m512i qs = _mm512_broadcast_i64x4(ld256(xb + Q2_K_QS + 32 * h));
        for (int g = 0; g < 2; g++) {
            const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(qs, pair_epi16(4 * g, 4 * g + 2)), m2);
            const __m512i p = _mm512_maddubs_epi16(q, ld512(yb + Q8_K_QS + 128 * h + 64 * g));
            a = _mm512_dpwssd_epi32(a, p, _mm512_permutexvar_epi16(group_index(2 * h + g), sc16));
        }
    }
    *pi = fold(a);
}

void runner_vec_dot_q2_K_q8_K_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    K_DOT(Q2_K_BYTES, Q2_K_D, 1, q2k_part, 0)
}

/* ---- tiles for the prompt path: KT_R weight rows by KT_C activation rows ------------------------ */

/*
 * Measured on Zen 4 (1 to 4 rows by 2 to 8 activations): the row's unpacking (scales, nibbles, scale
 * vectors) is what a tile saves, so activations matter more than rows. Q5_K and Q6_K keep every
 * activation's accumulator live, which eight still fit (pp512: 2 x 4 and 1 x 8 within 3 % of each
 * other); Q4_K has its own tile on packed activations below.
 */
#define KT_R 1
#define KT_C 8
/* Every loop of a tile unrolled, so the accumulators live in registers (GCC keeps them in memory
 * otherwise: 5.35 against 4.22 ns per super-block and pair). */
#define UNROLL _Pragma("GCC unroll 8")

/*
 * The float step of one group for a tile: kgroup_float's per-lane sequence for every (row,
 * activation) pair, with each activation's d (8 floats) and each row's halves assembled once.
 */
static ALWAYS_INLINE void kgroup_float_tile(__m256 acc[KT_R][KT_C], __m256i pi[KT_R][KT_C][8], __m256i pm[KT_R][KT_C][8], const uint8_t *const xd[KT_R],
                                            int xbytes, const uint8_t *const yg[KT_C], int count, int with_min) {
    __m256 dy[KT_C];
    UNROLL
    for (int c = 0; c < KT_C; c++) {
        float v[8];
        UNROLL
        for (int k = 0; k < 8; k++) v[k] = k < count ? rd_f32(yg[c] + k * Q8_K_BYTES) : 0.0f;
        dy[c] = _mm256_setr_ps(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }
    UNROLL
    for (int r = 0; r < KT_R; r++) {
        const __m256 hd = halves8(xd[r], xbytes, count);
        const __m256 hm = with_min ? halves8(xd[r] + 2, xbytes, count) : _mm256_setzero_ps();
        UNROLL
        for (int c = 0; c < KT_C; c++) {
            acc[r][c] = fma_lanes(reduce8_blocks(pi[r][c]), _mm256_mul_ps(dy[c], hd), acc[r][c], count);
            if (with_min)
                acc[r][c] = fma_lanes(_mm256_sub_epi32(_mm256_setzero_si256(), reduce8_blocks(pm[r][c])), _mm256_mul_ps(dy[c], hm), acc[r][c], count);
        }
    }
}

/* One group of up to eight super-blocks for the whole tile. COUNT is the constant 8 for full groups,
 * which lets the float step's per-block conditions fold away (a sixth of the tile's time otherwise). */
#define K_TILE_GROUP(XBYTES, DOFF, WITH_MIN, PART_TILE, COUNT)                                      \
    do {                                                                                            \
        __m256i pi[KT_R][KT_C][8], pm[KT_R][KT_C][8];                                               \
        for (int k = 0; k < 8; k++) {                                                               \
            const uint8_t *xb[KT_R], *yb[KT_C];                                                     \
            for (int r = 0; r < KT_R; r++) xb[r] = x + r * bx + (b0 + k) * (XBYTES);                \
            for (int c = 0; c < KT_C; c++) yb[c] = y + c * by + (b0 + k) * Q8_K_BYTES;              \
            if (k < (COUNT)) {                                                                      \
                PART_TILE(xb, yb, pi, pm, k);                                                       \
            } else {                                                                                \
                for (int r = 0; r < KT_R; r++)                                                      \
                    for (int c = 0; c < KT_C; c++) pi[r][c][k] = pm[r][c][k] = _mm256_setzero_si256(); \
            }                                                                                       \
        }                                                                                           \
        const uint8_t *xd[KT_R], *yg[KT_C];                                                         \
        for (int r = 0; r < KT_R; r++) xd[r] = x + r * bx + b0 * (XBYTES) + (DOFF);                 \
        for (int c = 0; c < KT_C; c++) yg[c] = y + c * by + b0 * Q8_K_BYTES;                        \
        kgroup_float_tile(acc, pi, pm, xd, (XBYTES), yg, (COUNT), (WITH_MIN));                      \
    } while (0)

/*
 * K_DOT for a tile: rows vx + r*bx against activations vy + c*by; s[KT_R*c + r] is row r against
 * activation c, bitwise what K_DOT gives for that pair. PART_TILE(xb, yb, pi, pm, k) sets
 * pi[r][c][k] (and pm) for the super-block at xb[r] / yb[c].
 */
#define K_DOT_TILE(XBYTES, DOFF, WITH_MIN, PART_TILE)                                              \
    const uint8_t *const x = vx, *const y = vy;                                                     \
    const int64_t nb = n / QK_K;                                                                    \
    __m256 acc[KT_R][KT_C];                                                                         \
    for (int r = 0; r < KT_R; r++)                                                                  \
        for (int c = 0; c < KT_C; c++) acc[r][c] = _mm256_setzero_ps();                             \
    int64_t b0 = 0;                                                                                 \
    for (; b0 + 8 <= nb; b0 += 8) K_TILE_GROUP(XBYTES, DOFF, WITH_MIN, PART_TILE, 8);               \
    if (b0 < nb) {                                                                                  \
        const int count = (int)(nb - b0);                                                           \
        K_TILE_GROUP(XBYTES, DOFF, WITH_MIN, PART_TILE, count);                                     \
    }                                                                                               \
    for (int c = 0; c < KT_C; c++)                                                                  \
        for (int r = 0; r < KT_R; r++) s[KT_R * c + r] = kreduce8(acc[r][c]);

/*
 * Q4_K against activations packed by runner_q8_K_tile_pack (q8k.c), a 1 x QT_C tile. Per pair of
 * super-blocks the weight row's nibbles are split and transposed (transpose_words4, then one
 * VSHUFI32X4 per word) so that lane L of w[t] holds values 4t .. 4t+3 of sub-block k_tile_order[L],
 * the packed activations' order, and the row's scales and mins are widened to int32 in that order.
 * Each activation then costs eight VPDPBUSD (u8 quants x s8 activations) straight into its
 * sub-block sums S_j, one VPMULLD for sc_j * S_j and one for m_j * (bsums[2j] + bsums[2j+1]):
 * the integers of the one-row kernel exactly (int32 modulo 2^32, as there), no shuffles per
 * activation. Per eight super-blocks the lanes are summed per super-block (reduce8_blocks) and
 * kgroup_float's per-lane sequence runs with d from the packed row. s[c] = row against activation c.
 */
#define QT_C 8
#define K_PAIR_BYTES (2 * QK_K + 16 * 4)

/* The pair's weights: w[8], scales and mins as int32 lanes (a missing second super-block: zeros). */
static ALWAYS_INLINE void q4k_pair_weights(const uint8_t *xa, const uint8_t *xb, __m512i w[8], __m512i *sc, __m512i *mn) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i v[2][4], t[2][4];
    __m128i k[2];
    UNROLL
    for (int h = 0; h < 2; h++) {
        const uint8_t *x = h ? xb : xa;
        if (!x) {
            v[h][0] = v[h][1] = v[h][2] = v[h][3] = _mm512_setzero_si512();
            k[h] = _mm_setzero_si128();
            continue;
        }
        const __m512i q01 = ld512(x + Q4_K_QS), q23 = ld512(x + Q4_K_QS + 64);
        v[h][0] = _mm512_and_si512(q01, m4);                        /* sub-blocks 0 | 2 */
        v[h][1] = _mm512_and_si512(_mm512_srli_epi16(q01, 4), m4);  /* 1 | 3 */
        v[h][2] = _mm512_and_si512(q23, m4);                        /* 4 | 6 */
        v[h][3] = _mm512_and_si512(_mm512_srli_epi16(q23, 4), m4);  /* 5 | 7 */
        k[h] = k4_unpack(x + Q4_K_SCALES);
    }
    transpose_words4(v[0], t[0]);
    transpose_words4(v[1], t[1]);
    UNROLL
    for (int d = 0; d < 4; d++) {
        w[d] = _mm512_shuffle_i32x4(t[0][d], t[1][d], _MM_SHUFFLE(2, 0, 2, 0));
        w[4 + d] = _mm512_shuffle_i32x4(t[0][d], t[1][d], _MM_SHUFFLE(3, 1, 3, 1));
    }
    const __m128i order = _mm_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15);
    *sc = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_unpacklo_epi64(k[0], k[1]), order));
    *mn = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_unpackhi_epi64(k[0], k[1]), order));
}

void runner_vec_dot_tile_q4_K_q8_K_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by) {
    (void)bx; /* one row */
    const uint8_t *const x = vx, *const y = vy;
    const int64_t nb = n / QK_K, npairs = (nb + 1) / 2;
    const uint8_t *const dys = y + npairs * K_PAIR_BYTES;
    __m256 acc[QT_C];
    UNROLL
    for (int c = 0; c < QT_C; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int count = nb - b0 < 8 ? (int)(nb - b0) : 8;
        __m256i pi[QT_C][8], pm[QT_C][8];
        for (int p = 0; p < 4; p++) {
            const int64_t b = b0 + 2 * p;
            if (b >= nb) {
                UNROLL
                for (int c = 0; c < QT_C; c++) pi[c][2 * p] = pi[c][2 * p + 1] = pm[c][2 * p] = pm[c][2 * p + 1] = _mm256_setzero_si256();
                continue;
            }
            __m512i w[8], sc, mn;
            q4k_pair_weights(x + b * Q4_K_BYTES, b + 1 < nb ? x + (b + 1) * Q4_K_BYTES : NULL, w, &sc, &mn);
            UNROLL
            for (int c = 0; c < QT_C; c++) {
                const uint8_t *const g = y + c * by + (b / 2) * K_PAIR_BYTES;
                __m512i z0 = _mm512_setzero_si512(), z1 = _mm512_setzero_si512(); /* two chains: latency */
                UNROLL
                for (int t = 0; t < 8; t += 2) {
                    z0 = _mm512_dpbusd_epi32(z0, w[t], ld512(g + 64 * t));
                    z1 = _mm512_dpbusd_epi32(z1, w[t + 1], ld512(g + 64 * t + 64));
                }
                const __m512i P = _mm512_mullo_epi32(_mm512_add_epi32(z0, z1), sc);
                const __m512i M = _mm512_mullo_epi32(ld512(g + 2 * QK_K), mn);
                pi[c][2 * p] = _mm512_castsi512_si256(P);
                pi[c][2 * p + 1] = _mm512_extracti64x4_epi64(P, 1);
                pm[c][2 * p] = _mm512_castsi512_si256(M);
                pm[c][2 * p + 1] = _mm512_extracti64x4_epi64(M, 1);
            }
        }
        const __m256 hd = halves8(x + b0 * Q4_K_BYTES, Q4_K_BYTES, count), hm = halves8(x + b0 * Q4_K_BYTES + 2, Q4_K_BYTES, count);
        UNROLL
        for (int c = 0; c < QT_C; c++) {
            const __m256 dy = _mm256_loadu_ps((const float *)(const void *)(dys + c * by + 4 * b0));
            acc[c] = fma_lanes(reduce8_blocks(pi[c]), _mm256_mul_ps(dy, hd), acc[c], count);
            acc[c] = fma_lanes(_mm256_sub_epi32(_mm256_setzero_si256(), reduce8_blocks(pm[c])), _mm256_mul_ps(dy, hm), acc[c], count);
        }
    }
    UNROLL
    for (int c = 0; c < QT_C; c++) s[c] = kreduce8(acc[c]);
}

/* Q5_K, one super-block of the tile: each 32-byte chunk of quants broadcast to both halves and
 * shifted by 0 / 4 gives sub-blocks 2q and 2q+1 side by side (the layout of the activation's 64 bytes
 * at 64q), with each value's fifth bit from qh (bit 2q of a byte for sub-block 2q, bit 2q + 1 for
 * 2q + 1; shifting 16-bit lanes right by at most 7 keeps bit 0 of each byte its own); then one
 * VPMADDUBSW and one VPDPWSSD (the sub-block scales) per activation and 64 values. */
static ALWAYS_INLINE void q5k_part_tile(const uint8_t *const xb[KT_R], const uint8_t *const yb[KT_C], __m256i pi[KT_R][KT_C][8], __m256i pm[KT_R][KT_C][8],
                                        int k) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m1 = _mm512_set1_epi8(1), shift = pair_epi16(0, 4);
    __m512i sc16[KT_R], qh[KT_R], a[KT_R][KT_C];
    UNROLL
    for (int r = 0; r < KT_R; r++) {
        const __m128i sm = k4_unpack(xb[r] + Q5_K_SCALES);
        const __m128i mins16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
        sc16[r] = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm));
        qh[r] = _mm512_broadcast_i64x4(ld256(xb[r] + Q5_K_QH));
        UNROLL
        for (int c = 0; c < KT_C; c++) {
            pm[r][c][k] = k4_mvec(mins16, yb[c]);
            a[r][c] = _mm512_setzero_si512();
        }
    }
    UNROLL
    for (int q = 0; q < 4; q++) {
        const __m512i idx = pair_epi16(2 * q, 2 * q + 1), hshift = pair_epi16(2 * q, 2 * q + 1);
        __m512i yv[KT_C];
        UNROLL
        for (int c = 0; c < KT_C; c++) yv[c] = ld512(yb[c] + Q8_K_QS + 64 * q);
        UNROLL
        for (int r = 0; r < KT_R; r++) {
            const __m512i lo4 = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(ld256(xb[r] + Q5_K_QS + 32 * q)), shift), m4);
            const __m512i bit5 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh[r], hshift), m1), 4);
            const __m512i w = _mm512_or_si512(lo4, bit5);
            const __m512i sc = _mm512_permutexvar_epi16(idx, sc16[r]);
            UNROLL
            for (int c = 0; c < KT_C; c++) a[r][c] = _mm512_dpwssd_epi32(a[r][c], _mm512_maddubs_epi16(w, yv[c]), sc);
        }
    }
    UNROLL
    for (int r = 0; r < KT_R; r++)
        UNROLL
        for (int c = 0; c < KT_C; c++) pi[r][c][k] = fold(a[r][c]);
}

void runner_vec_dot_tile_q5_K_q8_K_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by) {
    K_DOT_TILE(Q5_K_BYTES, 0, 1, q5k_part_tile)
}

/* Q6_K: q6k_part's unpacking once per row, its VPMADDUBSW / VPDPWSSD per activation. */
static ALWAYS_INLINE void q6k_part_tile(const uint8_t *const xb[KT_R], const uint8_t *const yb[KT_C], __m256i pi[KT_R][KT_C][8], __m256i pm[KT_R][KT_C][8],
                                        int k) {
    (void)pm;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(3);
    const __m512i sh01 = pair_epi16(0, 2), sh23 = pair_epi16(4, 6);
    __m512i sc16[KT_R], a[KT_R][KT_C];
    __m256i bias[KT_R][KT_C];
    UNROLL
    for (int r = 0; r < KT_R; r++) {
        const __m256i sc256 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(xb[r] + Q6_K_SCALES)));
        sc16[r] = _mm512_castsi256_si512(sc256);
        UNROLL
        for (int c = 0; c < KT_C; c++) {
            bias[r][c] = bsum_vec(sc256, yb[c]);
            a[r][c] = _mm512_setzero_si512();
        }
    }
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i y01[KT_C], y23[KT_C];
        UNROLL
        for (int c = 0; c < KT_C; c++) {
            y01[c] = ld512(yb[c] + Q8_K_QS + 128 * h);
            y23[c] = ld512(yb[c] + Q8_K_QS + 128 * h + 64);
        }
        UNROLL
        for (int r = 0; r < KT_R; r++) {
            const __m512i ql = ld512(xb[r] + Q6_K_QL + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(ld256(xb[r] + Q6_K_QH + 32 * h));
            const __m512i h01 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh01), m2), 4);
            const __m512i h23 = _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, sh23), m2), 4);
            const __m512i q01 = _mm512_or_si512(_mm512_and_si512(ql, m4), h01);
            const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4), h23);
            const __m512i s01 = _mm512_permutexvar_epi16(group_index(2 * h), sc16[r]);
            const __m512i s23 = _mm512_permutexvar_epi16(group_index(2 * h + 1), sc16[r]);
            UNROLL
            for (int c = 0; c < KT_C; c++) {
                a[r][c] = _mm512_dpwssd_epi32(a[r][c], _mm512_maddubs_epi16(q01, y01[c]), s01);
                a[r][c] = _mm512_dpwssd_epi32(a[r][c], _mm512_maddubs_epi16(q23, y23[c]), s23);
            }
        }
    }
    UNROLL
    for (int r = 0; r < KT_R; r++)
        UNROLL
        for (int c = 0; c < KT_C; c++) pi[r][c][k] = _mm256_sub_epi32(fold(a[r][c]), _mm256_slli_epi32(bias[r][c], 5)); /* - 32 * sc_j * bsums[j] */
}

void runner_vec_dot_tile_q6_K_q8_K_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by) {
    K_DOT_TILE(Q6_K_BYTES, Q6_K_D, 0, q6k_part_tile)
}
