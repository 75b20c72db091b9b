/*
 * Q6_K: scalar references (dequantize, ggml's quantize_row_q6_K_ref, dot against Q8_K).
 * In half h (128 values) of a block, with ql = ql + 64h, qh = qh + 32h, for l < 32:
 *   value 128h + l      = (ql[l] & 15)      | ((qh[l] >> 0) & 3) << 4
 *   value 128h + 32 + l = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4
 *   value 128h + 64 + l = (ql[l] >> 4)      | ((qh[l] >> 4) & 3) << 4
 *   value 128h + 96 + l = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4
 * and value v = d * scales[v / 16] * (q6 - 32). Canonical dot order: kquant.h.
 */
#include "quant/kquant.h"

/* The 6-bit quant of value v (0..255) of a block. */
static inline int q6_at(const uint8_t *blk, int v) {
    const int h = v / 128, r = v % 128, k = r / 32, l = r % 32;
    const uint8_t ql = blk[Q6_K_QL + 64 * h + l + 32 * (k & 1)];
    const uint8_t qh = blk[Q6_K_QH + 32 * h + l];
    return ((k < 2 ? ql & 0xF : ql >> 4) | (((qh >> (2 * k)) & 3) << 4));
}

void runner_to_float_q6_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q6_K_BYTES;
        const float d = rd_half(blk + Q6_K_D);
        for (int v = 0; v < QK_K; v++) {
            const int8_t q = (int8_t)(q6_at(blk, v) - 32);
            y[b * QK_K + v] = d * (int8_t)blk[Q6_K_SCALES + v / 16] * q;
        }
    }
}

void runner_quantize_ref_q6_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q6_K_BYTES;
        int8_t L[QK_K];
        float scales[QK_K / 16];
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = runner_k_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1);
            scales[ib] = scale;
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }
        if (max_abs_scale < 1e-15f) {
            memset(blk, 0, Q6_K_BYTES);
            continue;
        }
        const float iscale = -128.f / max_scale;
        wr_u16(blk + Q6_K_D, runner_fp32_to_fp16(1 / iscale));
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int v = k_nearest_int(iscale * scales[ib]);
            blk[Q6_K_SCALES + ib] = (uint8_t)low_i8(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = rd_half(blk + Q6_K_D) * (int8_t)blk[Q6_K_SCALES + j];
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = k_nearest_int(x[16 * j + ii] / d);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }
        uint8_t *ql = blk + Q6_K_QL, *qh = blk + Q6_K_QH;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l + 0] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)(((uint8_t)L[j + l] >> 4) | (((uint8_t)L[j + l + 32] >> 4) << 2) | (((uint8_t)L[j + l + 64] >> 4) << 4) |
                                  (((uint8_t)L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

void runner_vec_dot_q6_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q6_K_BYTES, *yb = y + b * Q8_K_BYTES;
        const int8_t *q8 = (const int8_t *)(yb + Q8_K_QS);
        /* Summed modulo 2^32 (as the SIMD lanes do): only bsums no quantizer writes can take it past 2^31. */
        uint32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q6_at(xb, 16 * j + l) * q8[16 * j + l];
            isum += (uint32_t)((int8_t)xb[Q6_K_SCALES + j] * (sub - 32 * rd_i16(yb + Q8_K_BSUMS + 2 * j)));
        }
        k_acc(acc, b, (int32_t)isum, rd_f32(yb), xb + Q6_K_D);
    }
    *s = k_reduce(acc);
}
