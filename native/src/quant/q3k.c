/*
 * Q3_K: scalar references (dequantize, ggml's quantize_row_q3_K_ref, dot against Q8_K).
 * Value v = 128n + 32j + l (n < 2, j < 4, l < 32) of a block: q2 = (qs[32n + l] >> 2j) & 3, h = bit
 * (4n + j) of hmask[l]; value = d * (sc6[v / 16] - 32) * (q2 + 4h - 4), sc6 from k3_scales.
 * Canonical dot order: kquant.h.
 */
#include "quant/kquant.h"

static inline int q3_at(const uint8_t *blk, int v) { /* q2 + 4h, 0..7 */
    const int nh = v / 128, j = (v % 128) / 32, l = v % 32;
    const int q2 = (blk[Q3_K_QS + 32 * nh + l] >> (2 * j)) & 3;
    const int h = (blk[Q3_K_HMASK + l] >> (4 * nh + j)) & 1;
    return q2 + 4 * h;
}

void runner_to_float_q3_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q3_K_BYTES;
        const float d_all = rd_half(blk + Q3_K_D);
        int8_t sc[16];
        k3_scales(blk + Q3_K_SCALES, sc);
        for (int v = 0; v < QK_K; v++) {
            const float dl = d_all * (sc[v / 16] - 32);
            y[b * QK_K + v] = dl * (q3_at(blk, v) - 4);
        }
    }
}

void runner_quantize_ref_q3_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q3_K_BYTES;
        uint8_t *s = blk + Q3_K_SCALES;
        int8_t L[QK_K];
        float scales[QK_K / 16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = runner_k_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        memset(s, 0, 12);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = low_i8(k_nearest_int(iscale * scales[j]));
                l = (int8_t)((l < -32 ? -32 : l > 31 ? 31 : l) + 32);
                if (j < 8) {
                    s[j] = (uint8_t)(l & 0xF);
                } else {
                    s[j - 8] |= (uint8_t)((l & 0xF) << 4);
                }
                l = (int8_t)(l >> 4);
                s[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
            }
            wr_u16(blk + Q3_K_D, runner_fp32_to_fp16(1 / iscale));
        } else {
            wr_u16(blk + Q3_K_D, runner_fp32_to_fp16(0.f));
        }
        int8_t sc6[16];
        k3_scales(s, sc6);
        for (int j = 0; j < QK_K / 16; ++j) {
            const int8_t sc = (int8_t)(sc6[j] - 32);
            const float d = rd_half(blk + Q3_K_D) * sc;
            if (!d) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = k_nearest_int(x[16 * j + ii] / d);
                l = l < -4 ? -4 : l > 3 ? 3 : l;
                L[16 * j + ii] = (int8_t)(l + 4);
            }
        }
        uint8_t *hmask = blk + Q3_K_HMASK;
        memset(hmask, 0, QK_K / 8);
        int m = 0;
        uint8_t hm = 1;
        for (int j = 0; j < QK_K; ++j) {
            if (L[j] > 3) {
                hmask[m] |= hm;
                L[j] = (int8_t)(L[j] - 4);
            }
            if (++m == QK_K / 8) {
                m = 0;
                hm = (uint8_t)(hm << 1);
            }
        }
        uint8_t *qs = blk + Q3_K_QS;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; ++l)
                qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
        }
    }
}

void runner_vec_dot_q3_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q3_K_BYTES, *yb = y + b * Q8_K_BYTES;
        const int8_t *q8 = (const int8_t *)(yb + Q8_K_QS);
        int8_t sc[16];
        k3_scales(xb + Q3_K_SCALES, sc);
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            int32_t sub = 0;
            for (int l = 0; l < 16; l++) sub += q3_at(xb, 16 * j + l) * q8[16 * j + l];
            isum += (sc[j] - 32) * (sub - 4 * rd_i16(yb + Q8_K_BSUMS + 2 * j));
        }
        k_acc(acc, b, isum, rd_f32(yb), xb + Q3_K_D);
    }
    *s = k_reduce(acc);
}
