/*
 * kquant.h: ggml's K-quant family (super-blocks of 256 values) as the files of native/src/quant see
 * it: block layouts as byte offsets, the scale unpacking every variant shares, and the kernel
 * declarations the type table points at. Layouts are ggml-common.h's (block_q2_K ... block_q8_K);
 * fields are read through byte pointers (GGUF rows are only 32-byte aligned).
 *
 * Canonical order of every K-quant vec_dot (x a weight row, y its Q8_K activation row, b the
 * super-block index); the integer sums are exact int32, the float part is fixed:
 *
 *   Q4_K, Q5_K: isum = sum_{j<8}  sc_j * sum_{32 values of sub-block j} q * y       (q >= 0)
 *               msum = sum_{j<8}  m_j  * (bsums[2j] + bsums[2j+1])
 *   Q2_K:       isum = sum_{j<16} sc_j * sum_{16 values of sub-block j} q * y       (q 0..3)
 *               msum = sum_{j<16} m_j  * bsums[j]
 *               d  = d_y * half(x.d)      dm = d_y * half(x.dmin)      (float, one rounding each)
 *               acc[b % 8] = fmaf((float)isum, d, acc[b % 8])
 *               acc[b % 8] = fmaf((float)(-msum), dm, acc[b % 8])
 *   Q6_K:       isum = sum_{j<16} sc_j * (sum_{16 values} q6 * y - 32 * bsums[j])   (q6 0..63, sc int8)
 *   Q3_K:       isum = sum_{j<16} (sc6_j - 32) * (sum_{16 values} (q2 + 4 h) * y - 4 * bsums[j])
 *               d = d_y * half(x.d);   acc[b % 8] = fmaf((float)isum, d, acc[b % 8])
 *   then: for w in 4, 2, 1: acc[l] = acc[l] + acc[l + w];  result acc[0]   (acc starts at +0)
 *
 * The activation's sums come from its bsums (as ggml's x86 kernels take them), so a row whose bsums
 * disagree with its quants still has one defined result. Integer sums are taken modulo 2^32 (int32
 * lanes wrap; the scalar Q6_K sums in uint32): for Q8_K rows a quantizer writes (|bsum| <= 2032)
 * nothing comes near 2^31, and random bytes still give every variant the same integer. (float)isum
 * rounds to nearest even where it exceeds 2^24, identically in every variant.
 */
#ifndef RUNNER_KQUANT_H
#define RUNNER_KQUANT_H

#include "quant/quant_impl.h"

#define QK_K 256
#define K_LANES 8 /* float accumulator lanes of the K-quant dots: super-block b -> lane b % 8 */

/* block_q8_K {float d; i8 qs[256]; i16 bsums[16]}  (bsums[j] = sum of qs[16j .. 16j+15]) */
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260
/* block_q4_K {half d; half dmin; u8 scales[12]; u8 qs[128]} */
#define Q4_K_BYTES 144
#define Q4_K_DMIN 2
#define Q4_K_SCALES 4
#define Q4_K_QS 16
/* block_q5_K {half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]} */
#define Q5_K_BYTES 176
#define Q5_K_DMIN 2
#define Q5_K_SCALES 4
#define Q5_K_QH 16
#define Q5_K_QS 48
/* block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; half d} */
#define Q6_K_BYTES 210
#define Q6_K_QL 0
#define Q6_K_QH 128
#define Q6_K_SCALES 192
#define Q6_K_D 208
/* block_q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d} */
#define Q3_K_BYTES 110
#define Q3_K_HMASK 0
#define Q3_K_QS 32
#define Q3_K_SCALES 96
#define Q3_K_D 108
/* block_q2_K {u8 scales[16]; u8 qs[64]; half d; half dmin} */
#define Q2_K_BYTES 84
#define Q2_K_SCALES 0
#define Q2_K_QS 16
#define Q2_K_D 80
#define Q2_K_DMIN 82

/* ggml's get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block. */
static inline void k4_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

/* The 16 6-bit scales of a Q3_K block (0..63; the weight's scale is this minus 32). */
static inline void k3_scales(const uint8_t *s, int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)(lo | (hi << 4));
    }
}

static inline int16_t rd_i16(const uint8_t *p) {
    int16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The float half of one super-block, shared by every variant (the canonical order above). */
static inline void k_acc_min(float acc[K_LANES], int64_t b, int32_t isum, int32_t msum, float dy, const uint8_t *xd) {
    const int l = (int)(b % K_LANES);
    const float d = dy * rd_half(xd), dm = dy * rd_half(xd + 2);
    acc[l] = fmaf((float)isum, d, acc[l]);
    acc[l] = fmaf((float)(-msum), dm, acc[l]);
}

static inline void k_acc(float acc[K_LANES], int64_t b, int32_t isum, float dy, const uint8_t *xd) {
    const int l = (int)(b % K_LANES);
    acc[l] = fmaf((float)isum, dy * rd_half(xd), acc[l]);
}

static inline float k_reduce(float acc[K_LANES]) {
    for (int w = K_LANES / 2; w >= 1; w /= 2) {
        for (int i = 0; i < w; i++) acc[i] = acc[i] + acc[i + w];
    }
    return acc[0];
}

/* ggml's nearest_int: round to nearest even through the 1.5 * 2^23 trick (exactly its bits for
 * every input, including the out-of-range ones its assert would refuse). */
static inline int k_nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* kquant_ref.c: ggml-quants.c's shared helpers, rewritten (same float operations in the same order). */
float runner_k_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type);
float runner_k_make_q3_quants(int n, int nmax, const float *x, int8_t *L);
float runner_k_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min, uint8_t *Laux,
                                float rmin, float rdelta, int nstep, int use_mad);

/* q4k.c: what quantize_row_q4_K_ref and quantize_row_q5_K_ref share: the scales, mins (packed into
 * the block, with d and dmin) and final levels L (0..nmax) of one super-block. */
void runner_k4_quantize_block(const float *x, uint8_t *blk, uint8_t L[QK_K], int nmax, float rmin, float rdelta, int nstep);

/* q8k.c, q4k.c, q5k.c, q6k.c, q3k.c, q2k.c (scalar), k_avx2.c, k_avx512.c */
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q8_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q8_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_K_q8_K_scalar);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_q4_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q4_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_K_q8_K_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_K_q8_K_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_K_q8_K_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_q4_K_q8_K_avx512);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_q5_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q5_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_K_q8_K_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_K_q8_K_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_K_q8_K_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_q5_K_q8_K_avx512);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_q6_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q6_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q6_K_q8_K_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q6_K_q8_K_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q6_K_q8_K_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_q6_K_q8_K_avx512);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_q3_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q3_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q3_K_q8_K_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q3_K_q8_K_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q3_K_q8_K_avx512);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_q2_K);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q2_K);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q2_K_q8_K_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q2_K_q8_K_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q2_K_q8_K_avx512);

#endif /* RUNNER_KQUANT_H */
