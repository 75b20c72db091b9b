/*
 * Q4_0 and Q4_1: scalar references (dequantize, weight quantizers, dot).
 *
 * Weight quantizers are ggml's quantize_row_q4_0_ref / _q4_1_ref:
 *   Q4_0: max = the value of largest |x| (first one on ties), d = max / -8, id = d ? 1/d : 0,
 *         q = min(15, (int8)(x*id + 8.5))
 *   Q4_1: min, max over the block, d = (max - min) / 15, id = d ? 1/d : 0, m = min,
 *         q = min(15, (int8)((x - min)*id + 0.5))
 * with the float->int8 conversion done as x86 does it (x86_cvtt_i32, then the low byte).
 *
 * Canonical order of vec_dot:
 *   Q4_0 x Q8_0: isum_b = sum_j (q_j - 8) * y_j                          exact int32
 *                acc[b % 16] = fmaf((float)isum_b, d_x*d_y, acc[b % 16])
 *   Q4_1 x Q8_1: isum_b = sum_j q_j * y_j                                exact int32
 *                acc[b % 16] = fmaf(m_x, s_y, acc[b % 16])
 *                acc[b % 16] = fmaf((float)isum_b, d_x*d_y, acc[b % 16])
 *   then the tree: for w in 8, 4, 2, 1: acc[l] = acc[l] + acc[l + w]; result acc[0].
 * (Products of two halves, d_x*d_y and m_x*s_y, are exact in float.)
 */
#include <float.h>

#include "quant/quant_impl.h"

/* Value j (0..31) of a 16-byte nibble array: low nibbles are values 0..15, high nibbles 16..31. */
static inline int nibble(const uint8_t *qs, int j) {
    return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
}

void runner_to_float_q4_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q4_0_BYTES;
        const float d = rd_half(blk);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)(nibble(blk + Q4_0_QS, j) - 8) * d;
    }
}

void runner_to_float_q4_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q4_1_BYTES;
        const float d = rd_half(blk), m = rd_half(blk + Q4_1_M);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)nibble(blk + Q4_1_QS, j) * d + m;
    }
}

static inline uint8_t min15(int32_t v) {
    const int8_t q = low_i8(v);
    return (uint8_t)(q < 15 ? q : 15);
}

void runner_quantize_ref_q4_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * Q4_0_BYTES;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr_u16(blk, runner_fp32_to_fp16(d));
        for (int j = 0; j < QK / 2; j++) {
            const uint8_t q0 = min15(x86_cvtt_i32(xb[j] * id + 8.5f));
            const uint8_t q1 = min15(x86_cvtt_i32(xb[QK / 2 + j] * id + 8.5f));
            blk[Q4_0_QS + j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void runner_quantize_ref_q4_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * Q4_1_BYTES;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q4_1_M, runner_fp32_to_fp16(min));
        for (int j = 0; j < QK / 2; j++) {
            const uint8_t q0 = min15(x86_cvtt_i32((xb[j] - min) * id + 0.5f));
            const uint8_t q1 = min15(x86_cvtt_i32((xb[QK / 2 + j] - min) * id + 0.5f));
            blk[Q4_1_QS + j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void runner_vec_dot_q4_0_q8_0_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + b * Q4_0_BYTES, *yb = y + b * Q8_0_BYTES;
        int32_t isum = 0;
        for (int j = 0; j < QK; j++) isum += (nibble(xb + Q4_0_QS, j) - 8) * (int32_t)(int8_t)yb[Q8_0_QS + j];
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf((float)isum, rd_half(xb) * rd_half(yb), acc[l]);
    }
    *s = reduce_block_lanes(acc);
}

void runner_vec_dot_q4_1_q8_1_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + b * Q4_1_BYTES, *yb = y + b * Q8_1_BYTES;
        int32_t isum = 0;
        for (int j = 0; j < QK; j++) isum += nibble(xb + Q4_1_QS, j) * (int32_t)(int8_t)yb[Q8_1_QS + j];
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf(rd_half(xb + Q4_1_M), rd_half(yb + Q8_1_S), acc[l]);
        acc[l] = fmaf((float)isum, rd_half(xb) * rd_half(yb), acc[l]);
    }
    *s = reduce_block_lanes(acc);
}
