/*
 * Q2_K: scalar references (dequantize, ggml's quantize_row_q2_K_ref, dot against Q8_K).
 * Value v = 128n + 32j + l: q = (qs[32n + l] >> 2j) & 3; value = d * (scales[v/16] & 15) * q -
 * dmin * (scales[v/16] >> 4). Canonical dot order: kquant.h.
 */
#include "quant/kquant.h"

static inline int q2_at(const uint8_t *blk, int v) {
    return (blk[Q2_K_QS + 32 * (v / 128) + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

void runner_to_float_q2_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q2_K_BYTES;
        const float d = rd_half(blk + Q2_K_D), min = rd_half(blk + Q2_K_DMIN);
        for (int v = 0; v < QK_K; v++) {
            const uint8_t sc = blk[Q2_K_SCALES + v / 16];
            const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
            y[b * QK_K + v] = dl * q2_at(blk, v) - ml;
        }
    }
}

void runner_quantize_ref_q2_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    const float q4scale = 15.f;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q2_K_BYTES;
        uint8_t *sc = blk + Q2_K_SCALES;
        uint8_t L[QK_K], Laux[16];
        float weights[16], mins[QK_K / 16], scales[QK_K / 16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = runner_k_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) sc[j] = (uint8_t)k_nearest_int(iscale * scales[j]);
            wr_u16(blk + Q2_K_D, runner_fp32_to_fp16(max_scale / q4scale));
        } else {
            for (int j = 0; j < QK_K / 16; ++j) sc[j] = 0;
            wr_u16(blk + Q2_K_D, runner_fp32_to_fp16(0.f));
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) sc[j] = (uint8_t)(sc[j] | (k_nearest_int(iscale * mins[j]) << 4));
            wr_u16(blk + Q2_K_DMIN, runner_fp32_to_fp16(max_min / q4scale));
        } else {
            wr_u16(blk + Q2_K_DMIN, runner_fp32_to_fp16(0.f));
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = rd_half(blk + Q2_K_D) * (sc[j] & 0xF);
            if (!d) continue;
            const float dm = rd_half(blk + Q2_K_DMIN) * (sc[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                int l = k_nearest_int((x[16 * j + ii] + dm) / d);
                l = l < 0 ? 0 : l > 3 ? 3 : l;
                L[16 * j + ii] = (uint8_t)l;
            }
        }
        uint8_t *qs = blk + Q2_K_QS;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l)
                qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

void runner_vec_dot_q2_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q2_K_BYTES, *yb = y + b * Q8_K_BYTES;
        const int8_t *q8 = (const int8_t *)(yb + Q8_K_QS);
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t sc = xb[Q2_K_SCALES + j];
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q2_at(xb, 16 * j + l) * q8[16 * j + l];
            isum += (sc & 0xF) * sub;
            msum += (sc >> 4) * rd_i16(yb + Q8_K_BSUMS + 2 * j);
        }
        k_acc_min(acc, b, isum, msum, rd_f32(yb), xb + Q2_K_D);
    }
    *s = k_reduce(acc);
}
