/*
 * Q4_K: scalar references (dequantize, ggml's quantize_row_q4_K_ref, dot against Q8_K).
 * Value 64c + l of a block (c < 4, l < 32) is the low nibble of qs[32c + l] (sub-block 2c), value
 * 64c + 32 + l its high nibble (sub-block 2c + 1); value = d * sc_j * q - dmin * m_j with the 6-bit
 * sc_j, m_j of k4_scale_min. Canonical dot order: kquant.h.
 */
#include "quant/kquant.h"

void runner_to_float_q4_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q4_K_BYTES;
        const uint8_t *q = blk + Q4_K_QS;
        const float d = rd_half(blk), min = rd_half(blk + Q4_K_DMIN);
        for (int c = 0; c < 4; c++, q += 32) {
            uint8_t sc, m;
            k4_scale_min(2 * c, blk + Q4_K_SCALES, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            k4_scale_min(2 * c + 1, blk + Q4_K_SCALES, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

/* Packs 6-bit scale ls and min lm of sub-block j the way quantize_row_q4_K_ref / q5_K_ref do. */
static void pack_k4(uint8_t *scales, int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        scales[j] = ls;
        scales[j + 4] = lm;
    } else {
        scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
        scales[j - 0] |= (uint8_t)((lm >> 4) << 6);
    }
}

void runner_k4_quantize_block(const float *x, uint8_t *blk, uint8_t L[QK_K], int nmax, float rmin, float rdelta, int nstep) {
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = runner_k_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t *sc12 = blk + Q4_K_SCALES; /* same offset in Q5_K */
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)k_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)k_nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        pack_k4(sc12, j, ls, lm);
    }
    wr_u16(blk, runner_fp32_to_fp16(max_scale / 63.f));
    wr_u16(blk + Q4_K_DMIN, runner_fp32_to_fp16(max_min / 63.f));
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        k4_scale_min(j, sc12, &sc, &m);
        const float d = rd_half(blk) * sc;
        if (!d) continue;
        const float dm = rd_half(blk + Q4_K_DMIN) * m;
        for (int ii = 0; ii < 32; ++ii) {
            int l = k_nearest_int((x[32 * j + ii] + dm) / d);
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            L[32 * j + ii] = (uint8_t)l;
        }
    }
}

void runner_quantize_ref_q4_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q4_K_BYTES;
        uint8_t L[QK_K];
        memset(blk + Q4_K_SCALES, 0, 12);
        runner_k4_quantize_block(x, blk, L, 15, -1.f, 0.1f, 20);
        uint8_t *q = blk + Q4_K_QS;
        for (int j = 0; j < QK_K; j += 64, q += 32) {
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void runner_vec_dot_q4_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q4_K_BYTES, *yb = y + b * Q8_K_BYTES;
        const int8_t *q8 = (const int8_t *)(yb + Q8_K_QS);
        int32_t isum = 0, msum = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            k4_scale_min(j, xb + Q4_K_SCALES, &sc, &m);
            const uint8_t *q = xb + Q4_K_QS + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            int32_t sub = 0;
            for (int l = 0; l < 32; l++) sub += ((q[l] >> shift) & 0xF) * q8[32 * j + l];
            isum += sc * sub;
            msum += m * (rd_i16(yb + Q8_K_BSUMS + 4 * j) + rd_i16(yb + Q8_K_BSUMS + 4 * j + 2));
        }
        k_acc_min(acc, b, isum, msum, rd_f32(yb), xb);
    }
    *s = k_reduce(acc);
}
