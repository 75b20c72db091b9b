/*
 * IQ4_NL and MXFP4: 32-value blocks of 4-bit indices into a table of int8 values, dotted against
 * Q8_0 activations (ggml's vec_dot_type for both).
 *   block_iq4_nl {half d; u8 qs[16]}   value j = d * kvalues_iq4nl[qs[j] & 15], value 16+j the high nibble
 *   block_mxfp4  {u8 e; u8 qs[16]}     value j = e8m0_half(e) * kvalues_mxfp4[...], same nibble order
 * (kvalues_mxfp4 are the E2M1 values doubled; e8m0_half(e) = 2^(e - 128) compensates.)
 *
 * Weight quantizers are what ggml_quantize_chunk runs without an importance matrix:
 *  - IQ4_NL: quantize_iq4_nl, i.e. quantize_row_iq4_nl_impl with ntry = 7 and weights x^2 (not the
 *    quantize_row_iq4_nl_ref entry point, which skips the scale search);
 *  - MXFP4: quantize_row_mxfp4_ref (e = floor(log2(amax)) - 2 + 127, nearest table value, first on ties).
 *
 * Canonical order of vec_dot (as the other block types, docs/kernels.md):
 *   isum_b = sum_j table[q_j] * y_j (exact int32); acc[b % 16] = fmaf((float)isum_b, s_x * d_y, acc[b % 16])
 *   with s_x = half(d) (IQ4_NL) or e8m0_half(e) (MXFP4); then the 16-lane tree.
 */
#include "quant/nl.h"

const int8_t runner_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t runner_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static inline int nib(const uint8_t *qs, int j) {
    return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
}

void runner_to_float_iq4_nl(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * IQ4_NL_BYTES;
        const float d = rd_half(blk);
        for (int j = 0; j < QK; j++) y[b * QK + j] = d * runner_kvalues_iq4nl[nib(blk + IQ4_NL_QS, j)];
    }
}

void runner_to_float_mxfp4(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *blk = x + b * MXFP4_BYTES;
        const float d = runner_e8m0_half(blk[0]);
        for (int j = 0; j < QK; j++) y[b * QK + j] = runner_kvalues_mxfp4[nib(blk + MXFP4_QS, j)] * d;
    }
}

/* ggml's best_index_int8: the index of the nearest table value (val sorted), the upper one on ties. */
static int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

void runner_quantize_ref_iq4_nl(const float *x, void *vy, int64_t n) {
    const int8_t *values = runner_kvalues_iq4nl;
    const int ntry = 7;
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * IQ4_NL_BYTES;
        uint8_t L[QK];
        float weight[QK];
        for (int j = 0; j < QK; ++j) weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < QK; ++j) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        float scale;
        if (amax < 1e-15f) {
            scale = 0;
        } else {
            float d = -max / values[0];
            float id = 1 / d;
            float sumqx = 0, sumq2 = 0;
            for (int j = 0; j < QK; ++j) {
                const float al = id * xb[j];
                const int l = best_index_int8(16, values, al);
                const float q = values[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
            float best = d * sumqx;
            for (int itry = -ntry; itry <= ntry; ++itry) {
                id = (itry + values[0]) / max;
                sumqx = sumq2 = 0;
                for (int j = 0; j < QK; ++j) {
                    const float al = id * xb[j];
                    const int l = best_index_int8(16, values, al);
                    const float q = values[l];
                    const float w = weight[j];
                    sumqx += w * q * xb[j];
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
            scale = d;
        }
        wr_u16(blk, runner_fp32_to_fp16(scale));
        const float id = scale ? 1 / scale : 0;
        for (int j = 0; j < QK; ++j) L[j] = (uint8_t)best_index_int8(16, values, id * xb[j]);
        for (int j = 0; j < 16; ++j) blk[IQ4_NL_QS + j] = (uint8_t)(L[j] | (L[16 + j] << 4));
    }
}

static int best_index_mxfp4(float x, float e) {
    int best_index = 0;
    float best_err = fabsf(runner_kvalues_mxfp4[0] * e - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(runner_kvalues_mxfp4[i] * e - x);
        if (err < best_err) {
            best_index = i;
            best_err = err;
        }
    }
    return best_index;
}

void runner_quantize_ref_mxfp4(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK; b++) {
        const float *xb = x + b * QK;
        uint8_t *blk = y + b * MXFP4_BYTES;
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) {
            if (amax < fabsf(xb[j])) amax = fabsf(xb[j]);
        }
        /* (uint8_t) of a float is CVTTSS2SI and the low byte on x86, as ggml's build does it */
        const uint8_t e = amax > 0.0f ? (uint8_t)low_i8(x86_cvtt_i32(floorf(log2f(amax)) - 2 + 127)) : 0;
        const float d = runner_e8m0_half(e);
        blk[0] = e;
        for (int j = 0; j < QK / 2; ++j) {
            const int x0 = best_index_mxfp4(xb[j], d), x1 = best_index_mxfp4(xb[QK / 2 + j], d);
            blk[MXFP4_QS + j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

static void nl_dot(int64_t n, float *s, const uint8_t *x, const uint8_t *y, const int8_t *table, int is_mxfp4) {
    const int xbytes = is_mxfp4 ? MXFP4_BYTES : IQ4_NL_BYTES;
    float acc[RUNNER_BLOCK_LANES] = {0};
    for (int64_t b = 0; b < n / QK; b++) {
        const uint8_t *xb = x + b * xbytes, *yb = y + b * Q8_0_BYTES;
        int32_t isum = 0;
        for (int j = 0; j < QK; j++) isum += table[nib(xb + (is_mxfp4 ? MXFP4_QS : IQ4_NL_QS), j)] * (int32_t)(int8_t)yb[Q8_0_QS + j];
        const float sx = is_mxfp4 ? runner_e8m0_half(xb[0]) : rd_half(xb);
        const int l = (int)(b % RUNNER_BLOCK_LANES);
        acc[l] = fmaf((float)isum, sx * rd_half(yb), acc[l]);
    }
    *s = reduce_block_lanes(acc);
}

void runner_vec_dot_iq4_nl_q8_0_scalar(int64_t n, float *s, const void *x, const void *y) {
    nl_dot(n, s, x, y, runner_kvalues_iq4nl, 0);
}

void runner_vec_dot_mxfp4_q8_0_scalar(int64_t n, float *s, const void *x, const void *y) {
    nl_dot(n, s, x, y, runner_kvalues_mxfp4, 1);
}
