/*
 * Q5_0 and Q5_1: scalar references (dequantize, weight quantizers, dot).
 *
 * Value j of a block is its nibble (low nibbles of qs are values 0..15, high nibbles 16..31)
 * plus 16 * bit j of qh (a little-endian u32).
 *
 * Weight quantizers are ggml's quantize_row_q5_0_ref / _q5_1_ref:
 *   Q5_0: max = the value of largest |x| (first one on ties), d = max / -16, id = d ? 1/d : 0,
 *         q = min(31, (int8)(x*id + 16.5))
 *   Q5_1: min, max, d = (max - min) / 31, id = d ? 1/d : 0, m = min, q = (uint8)((x - min)*id + 0.5)
 * with the float->integer conversions done as x86 does them (x86_cvtt_i32, then the low byte).
 *
 * Canonical order of vec_dot:
 *   Q5_0 x Q8_0: isum_b = sum_j (q_j - 16) * y_j;  acc[b % 16] = fmaf((float)isum_b, d_x*d_y, acc[b % 16])
 *   Q5_1 x Q8_1: isum_b = sum_j q_j * y_j;         acc[b % 16] = fmaf(m_x, s_y, acc[b % 16]);
 *                                                  acc[b % 16] = fmaf((float)isum_b, d_x*d_y, acc[b % 16])
 *   then the tree: for w in 8, 4, 2, 1: acc[l] = acc[l] + acc[l + w]; result acc[0].
 */
#include <float.h>

#include "quant/quant_impl.h"

/* Value j (0..31): nibble plus the high bit from qh. */
static inline int q5_value(const uint8_t *qs, uint32_t qh, int j) {
    const int nib = j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
    return nib | (int)(((qh >> j) & 1u) << 4);
}

void runner_to_float_q5_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q5_0_BYTES;
        const float d = rd_half(blk);
        const uint32_t qh = rd_u32(blk + Q5_0_QH);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)(q5_value(blk + Q5_0_QS, qh, j) - 16) * d;
    }
}

void runner_to_float_q5_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * Q5_1_BYTES;
        const float d = rd_half(blk), m = rd_half(blk + Q5_1_M);
        const uint32_t qh = rd_u32(blk + Q5_1_QH);
        for (int j = 0; j < QK; j++) y[b * QK + j] = (float)q5_value(blk + Q5_1_QS, qh, j) * d + m;
    }
}

/* Pack 32 five-bit values (each given as a byte whose low 5 bits count) into qs and qh. */
static void pack_q5(const uint8_t q[QK], uint8_t *qs, uint8_t *qh_out) {
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[QK / 2 + j] & 0x0f) << 4));
        qh |= (uint32_t)((q[j] & 0x10u) >> 4) << j;
        qh |= (uint32_t)((q[QK / 2 + j] & 0x10u) >> 4) << (j + QK / 2);
    }
    wr_u32(qh_out, qh);
}

void runner_quantize_ref_q5_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * Q5_0_BYTES;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr_u16(blk, runner_fp32_to_fp16(d));
        uint8_t q[QK];
        for (int j = 0; j < QK; j++) {
            const int8_t v = low_i8(x86_cvtt_i32(xb[j] * id + 16.5f));
            q[j] = (uint8_t)(v < 31 ? v : 31);
        }
        pack_q5(q, blk + Q5_0_QS, blk + Q5_0_QH);
    }
}

void runner_quantize_ref_q5_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * Q5_1_BYTES;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < QK; j++) {
            if (xb[j] < min) min = xb[j];
            if (xb[j] > max) max = xb[j];
        }
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        wr_u16(blk, runner_fp32_to_fp16(d));
        wr_u16(blk + Q5_1_M, runner_fp32_to_fp16(min));
        uint8_t q[QK];
        for (int j = 0; j < QK; j++) q[j] = (uint8_t)low_i8(x86_cvtt_i32((xb[j] - min) * id + 0.5f));
        pack_q5(q, blk + Q5_1_QS, blk + Q5_1_QH);
    }
}

void runner_vec_dot_q5_0_q8_0_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + b * Q5_0_BYTES, *yb = y + b * Q8_0_BYTES;
        const uint32_t qh = rd_u32(xb + Q5_0_QH);
        int32_t isum = 0;
        for (int j = 0; j < QK; j++) isum += (q5_value(xb + Q5_0_QS, qh, j) - 16) * (int32_t)(int8_t)yb[Q8_0_QS + j];
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf((float)isum, rd_half(xb) * rd_half(yb), acc[l]);
    }
    *s = reduce_block_lanes(acc);
}

void runner_vec_dot_q5_1_q8_1_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + b * Q5_1_BYTES, *yb = y + b * Q8_1_BYTES;
        const uint32_t qh = rd_u32(xb + Q5_1_QH);
        int32_t isum = 0;
        for (int j = 0; j < QK; j++) isum += q5_value(xb + Q5_1_QS, qh, j) * (int32_t)(int8_t)yb[Q8_1_QS + j];
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf(rd_half(xb + Q5_1_M), rd_half(yb + Q8_1_S), acc[l]);
        acc[l] = fmaf((float)isum, rd_half(xb) * rd_half(yb), acc[l]);
    }
    *s = reduce_block_lanes(acc);
}
