/*
 * Q5_K: scalar references (dequantize, ggml's quantize_row_q5_K_ref, dot against Q8_K).
 * As Q4_K, with a fifth bit: value 64c + l adds 16 * bit 2c of qh[l], value 64c + 32 + l adds
 * 16 * bit 2c + 1 of qh[l]. Canonical dot order: kquant.h.
 */
#include "quant/kquant.h"

static inline int q5_at(const uint8_t *blk, int v) {
    const int c = v / 64, r = v % 64, l = r % 32, hi = r / 32;
    const uint8_t q = blk[Q5_K_QS + 32 * c + l];
    return (hi ? q >> 4 : q & 0xF) + (((blk[Q5_K_QH + l] >> (2 * c + hi)) & 1) << 4);
}

void runner_to_float_q5_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q5_K_BYTES;
        const float d = rd_half(blk), min = rd_half(blk + Q5_K_DMIN);
        for (int c = 0; c < 4; c++) {
            uint8_t sc, m;
            k4_scale_min(2 * c, blk + Q5_K_SCALES, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            k4_scale_min(2 * c + 1, blk + Q5_K_SCALES, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * q5_at(blk, 64 * c + l) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * q5_at(blk, 64 * c + 32 + l) - m2;
        }
    }
}

void runner_quantize_ref_q5_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q5_K_BYTES;
        uint8_t L[QK_K];
        memset(blk + Q5_K_SCALES, 0, 12);
        runner_k4_quantize_block(x, blk, L, 31, -0.5f, 0.1f, 15);
        uint8_t *qh = blk + Q5_K_QH, *ql = blk + Q5_K_QS;
        memset(qh, 0, 32);
        uint8_t m1 = 1, m2 = 2;
        for (int nn = 0; nn < QK_K; nn += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[nn + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[nn + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

void runner_vec_dot_q5_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q5_K_BYTES, *yb = y + b * Q8_K_BYTES;
        const int8_t *q8 = (const int8_t *)(yb + Q8_K_QS);
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            k4_scale_min(j, xb + Q5_K_SCALES, &sc, &m);
            int32_t sub = 0;
            for (int l = 0; l < 32; l++) sub += q5_at(xb, 32 * j + l) * q8[32 * j + l];
            isum += sc * sub;
            msum += m * (rd_i16(yb + Q8_K_BSUMS + 4 * j) + rd_i16(yb + Q8_K_BSUMS + 4 * j + 2));
        }
        k_acc_min(acc, b, isum, msum, rd_f32(yb), xb);
    }
    *s = k_reduce(acc);
}
