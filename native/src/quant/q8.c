/*
 * Q8_0 and Q8_1: scalar references (dequantize, weight quantizers, activation quantizers, dot).
 *
 * Weight quantizers (runner_quantize_ref_*) are ggml's quantize_row_q8_0_ref / _q8_1_ref:
 *   amax = running MAX(amax, |x|) from 0, d = amax / 127, id = d ? 1/d : 0, q = roundf(x * id)
 * (half away from zero), the float->int8 store done as x86 does it (see x86_cvtt_i32).
 *
 * Activation quantizers (runner_from_float_*) are ggml's x86 path (quantize_row_q8_0 in
 * ggml-cpu/arch/x86/quants.c), which llama.cpp runs on this hardware: the block maximum is taken
 * in the order its vector code uses (below), d = amax / 127, id = amax != 0 ? 127 / amax : 0
 * (one rounding, not 1/(amax/127)), q = round-half-to-even(x * id) saturated to int8 (NaN and
 * out-of-range -> -128, as CVTPS2DQ + PACKSS give). Q8_1 adds s = half(d * sum(q)) over the
 * stored q. The SIMD variants reproduce this bit for bit.
 *
 * Canonical order of vec_dot (Q8_0 x Q8_0, and Q8_1 x Q8_1 ignoring s):
 *   isum_b = sum_j x_b[j] * y_b[j]                       exact int32
 *   acc[b % 16] = fmaf((float)isum_b, d_x[b] * d_y[b], acc[b % 16])     (acc starts at +0;
 *                                                        d_x * d_y of two halves is exact)
 *   tree: for w in 8, 4, 2, 1: acc[l] = acc[l] + acc[l + w];  result acc[0]
 */
#include "quant/quant_impl.h"

/* ---- dequantize -------------------------------------------------------------------------------- */

void runner_to_float_q8_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q8_0_BYTES;
        const float d = rd_half(blk);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)(int8_t)blk[Q8_0_QS + j] * d;
    }
}

void runner_to_float_q8_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q8_1_BYTES;
        const float d = rd_half(blk);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)(int8_t)blk[Q8_1_QS + j] * d;
    }
}

/* ---- weight quantizers (ggml's *_ref) ------------------------------------------------------------ */

/* Returns d and writes the 32 quants of one block the way quantize_row_q8_0_ref does. */
static float quantize_block_q8_ref(const float *x, int8_t q[QK]) {
    float amax = 0.0f;
    for (int j = 0; j < QK; j++) amax = x86_max(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) q[j] = low_i8(x86_cvtt_i32(roundf(x[j] * id)));
    return d;
}

void runner_quantize_ref_q8_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_0_BYTES;
        int8_t q[QK];
        const float d = quantize_block_q8_ref(x + b * QK, q);
        wr_u16(blk, runner_fp32_to_fp16(d));
        memcpy(blk + Q8_0_QS, q, QK);
    }
}

void runner_quantize_ref_q8_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_1_BYTES;
        int8_t q[QK];
        const float d = quantize_block_q8_ref(x + b * QK, q);
        int32_t sum = 0;
        for (int j = 0; j < QK; j++) sum += q[j];
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q8_1_S, runner_fp32_to_fp16((float)sum * d));
        memcpy(blk + Q8_1_QS, q, QK);
    }
}

/* ---- activation quantizers (ggml's x86 path) ----------------------------------------------------- */

/*
 * max |x| over one block in the order of ggml's AVX code: lane l of four 8-wide vectors
 * (elements l, 8+l, 16+l, 24+l) folded left, then the upper 4 lanes against the lower 4, then
 * lanes {0,1} against {2,3}, then lane 0 against lane 1, every step an x86 MAXPS (a > b ? a : b).
 */
static float block_amax_x86_order(const float *x) {
    float m[8];
    for (int l = 0; l < 8; l++) {
        float v = fabsf(x[l]);
        v = x86_max(v, fabsf(x[8 + l]));
        v = x86_max(v, fabsf(x[16 + l]));
        v = x86_max(v, fabsf(x[24 + l]));
        m[l] = v;
    }
    float h[4];
    for (int l = 0; l < 4; l++) h[l] = x86_max(m[4 + l], m[l]);
    return x86_max(x86_max(h[0], h[2]), x86_max(h[1], h[3]));
}

/* Writes the 32 quants of one block; returns d. */
static float quantize_block_q8_act(const float *x, int8_t q[QK]) {
    const float amax = block_amax_x86_order(x);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < QK; j++) q[j] = sat_i8(x86_cvtn_i32(x[j] * id));
    return d;
}

void runner_from_float_q8_0_scalar(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_0_BYTES;
        int8_t q[QK];
        const float d = quantize_block_q8_act(x + b * QK, q);
        wr_u16(blk, runner_fp32_to_fp16(d));
        memcpy(blk + Q8_0_QS, q, QK);
    }
}

void runner_from_float_q8_1_scalar(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *blk = y + b * Q8_1_BYTES;
        int8_t q[QK];
        const float d = quantize_block_q8_act(x + b * QK, q);
        int32_t sum = 0;
        for (int j = 0; j < QK; j++) sum += q[j];
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q8_1_S, runner_fp32_to_fp16(d * (float)sum));
        memcpy(blk + Q8_1_QS, q, QK);
    }
}

/* ---- dot products ------------------------------------------------------------------------------- */

static float dot_q8_blocks(int64_t n, const uint8_t *x, const uint8_t *y, size_t bytes, size_t qs) {
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + (size_t)b * bytes, *yb = y + (size_t)b * bytes;
        int32_t isum = 0;
        for (size_t j = 0; j < QK; j++) isum += (int32_t)(int8_t)xb[qs + j] * (int32_t)(int8_t)yb[qs + j];
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf((float)isum, rd_half(xb) * rd_half(yb), acc[l]);
    }
    return reduce_block_lanes(acc);
}

void runner_vec_dot_q8_0_q8_0_scalar(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_q8_blocks(n, x, y, Q8_0_BYTES, Q8_0_QS);
}

void runner_vec_dot_q8_1_q8_1_scalar(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_q8_blocks(n, x, y, Q8_1_BYTES, Q8_1_QS);
}

/* ---- the tile layout of Q8_0 activations (runner_q8_0_tile_pack) -------------------------------- */

/* Block of a 16-block group whose scale sits in float lane L: the permutation block_avx512.h calls
 * perm_4x4 (its layout A), repeated here so the packer stays portable C. */
static const int tile_perm[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

#define TILE_GROUP_BYTES (16 * QK + 16 * 4)

/* Quant i and the scale of block b of a row of nb blocks; zeros past the row (the packers' padding). */
static uint8_t quant_or_zero(const uint8_t *y, int64_t nb, int64_t b, int i) {
    return b < nb ? y[b * Q8_0_BYTES + Q8_0_QS + i] : 0;
}

static float scale_or_zero(const uint8_t *y, int64_t nb, int64_t b) {
    return b < nb ? rd_half(y + b * Q8_0_BYTES) : 0.0f;
}

static size_t q8_0_tile_bytes(int64_t n) {
    return (size_t)((n / QK + 15) / 16) * TILE_GROUP_BYTES;
}

/*
 * Group g (16 blocks, TILE_GROUP_BYTES): for t < 8, 64 bytes whose 4-byte lane L holds values
 * 4t .. 4t+3 of block 16g + tile_perm[L], every byte q + 128, so one VPDPBUSD per t adds four products
 * into each block's own lane; then 16 floats, lane L the scale of that block. Blocks past the row
 * read as quants 0, scale 0.
 */
static void q8_0_tile_pack(const void *vy, void *vout, int64_t n) {
    const uint8_t *y = vy;
    uint8_t *out = vout;
    const int64_t nb = n / QK;
    for (int64_t g = 0; g * 16 < nb; g++) {
        uint8_t *o = out + g * TILE_GROUP_BYTES;
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * g + tile_perm[l];
            for (int i = 0; i < QK; i++) o[64 * (i / 4) + 4 * l + i % 4] = (uint8_t)(quant_or_zero(y, nb, b, i) ^ 0x80);
            const float d = scale_or_zero(y, nb, b);
            memcpy(o + 16 * QK + 4 * l, &d, sizeof d);
        }
    }
}

const runner_act_pack runner_q8_0_tile_pack = {q8_0_tile_pack, q8_0_tile_bytes};

/* ---- the decode layout of Q8_0 activations (runner_q8_0_mv_pack) -------------------------------- */

#define MV_GROUP_BYTES (16 * QK + 16 * 4 + 16 * 4)

static size_t q8_0_mv_bytes(int64_t n) {
    return (size_t)((n / QK + 15) / 16) * MV_GROUP_BYTES;
}

/*
 * Group g (16 blocks, MV_GROUP_BYTES): for k < 4, values 0..15 of blocks 16g + 4k + j (j = 0..3, 16
 * bytes each) then their values 16..31 (64 bytes each half, the quants as they are); then 16 int32,
 * lane L = 8 * sum(q) of block 16g + tile_perm[L]; then 16 floats, lane L that block's scale. Blocks
 * past the row read as quants 0, sum 0, scale 0.
 */
static void q8_0_mv_pack(const void *vy, void *vout, int64_t n) {
    const uint8_t *y = vy;
    uint8_t *out = vout;
    const int64_t nb = n / QK;
    for (int64_t g = 0; g * 16 < nb; g++) {
        uint8_t *o = out + g * MV_GROUP_BYTES;
        for (int k = 0; k < 4; k++) {
            for (int j = 0; j < 4; j++) {
                const int64_t b = 16 * g + 4 * k + j;
                for (int i = 0; i < QK; i++) o[128 * k + 64 * (i / 16) + 16 * j + i % 16] = quant_or_zero(y, nb, b, i);
            }
        }
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * g + tile_perm[l];
            int32_t sum = 0;
            for (int i = 0; i < QK; i++) sum += (int8_t)quant_or_zero(y, nb, b, i);
            const int32_t off = 8 * sum;
            const float d = scale_or_zero(y, nb, b);
            memcpy(o + 16 * QK + 4 * l, &off, sizeof off);
            memcpy(o + 16 * QK + 64 + 4 * l, &d, sizeof d);
        }
    }
}

const runner_act_pack runner_q8_0_mv_pack = {q8_0_mv_pack, q8_0_mv_bytes};
