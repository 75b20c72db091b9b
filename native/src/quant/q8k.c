/*
 * Q8_K: the activation type of the K-quants (block_q8_K {float d; i8 qs[256]; i16 bsums[16]}).
 *
 * The quantizer is ggml's quantize_row_q8_K_ref, which is also what ggml-cpu runs for activations on
 * x86 (quantize_row_q8_K there calls the reference): max = the value of largest |x| (first on ties),
 * iscale = -127/max, q = MIN(127, nearest_int(iscale*x)), bsums[j] = sum of q[16j..16j+15],
 * d = 1/iscale (a float, not a half). An all-zero block stores d = 0 and q = 0; ggml leaves its
 * bsums unwritten there, we write 0 (d = 0 makes them irrelevant to every dot).
 *
 * As a weight (ggml never stores one) Q8_K dots against Q8_K: isum = sum q_x*q_y per block (exact),
 * acc[b % 8] = fmaf((float)isum, d_x*d_y, acc[b % 8]), then the K-quant tree (kquant.h).
 */
#include "quant/kquant.h"

void runner_to_float_q8_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *blk = x + b * Q8_K_BYTES;
        const float d = rd_f32(blk);
        for (int j = 0; j < QK_K; j++) y[b * QK_K + j] = d * (float)(int8_t)blk[Q8_K_QS + j];
    }
}

void runner_quantize_ref_q8_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        uint8_t *blk = y + b * Q8_K_BYTES;
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            memset(blk, 0, Q8_K_BYTES);
            continue;
        }
        const float iscale = -127.f / max;
        int8_t *q = (int8_t *)(blk + Q8_K_QS);
        for (int j = 0; j < QK_K; ++j) {
            const int v = k_nearest_int(iscale * x[j]);
            q[j] = low_i8(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += q[16 * j + i];
            const int16_t s = (int16_t)sum;
            memcpy(blk + Q8_K_BSUMS + 2 * j, &s, 2);
        }
        const float d = 1 / iscale;
        memcpy(blk, &d, 4);
    }
}

void runner_vec_dot_q8_K_q8_K_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[K_LANES] = {0};
    for (int64_t b = 0; b < n / QK_K; b++) {
        const uint8_t *xb = x + b * Q8_K_BYTES, *yb = y + b * Q8_K_BYTES;
        int32_t isum = 0;
        for (int j = 0; j < QK_K; j++) isum += (int32_t)(int8_t)xb[Q8_K_QS + j] * (int8_t)yb[Q8_K_QS + j];
        const int l = (int)(b % K_LANES);
        acc[l] = fmaf((float)isum, rd_f32(xb) * rd_f32(yb), acc[l]);
    }
    *s = k_reduce(acc);
}

/* ---- the tile layout of Q8_K activations (runner_q8_K_tile_pack) --------------------------------- */

/* Sub-block of a super-block pair in lane L (0-7: the first super-block's, 8-15: the second's, minus 8),
 * the order the Q4_K tile's word transpose leaves the weight row in (k_avx512.c). */
static const int k_tile_order[16] = {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15};

#define K_PAIR_BYTES (2 * QK_K + 16 * 4)

static size_t q8_K_tile_bytes(int64_t n) {
    const int64_t nb = n / QK_K;
    return (size_t)((nb + 1) / 2) * K_PAIR_BYTES + (size_t)((nb + 7) / 8) * 8 * 4;
}

/*
 * Per pair of super-blocks p (K_PAIR_BYTES): for t < 8, 64 bytes whose 4-byte lane L holds values
 * 4t .. 4t+3 of 32-value sub-block k_tile_order[L] of the pair (the quants as they are); then 16 int32,
 * lane L the sum of that sub-block's two bsums. After the last pair, d of every super-block as a float,
 * padded with zeros to a multiple of eight. A missing second super-block reads as zeros.
 */
static void q8_K_tile_pack(const void *vy, void *vout, int64_t n) {
    const uint8_t *y = vy;
    uint8_t *out = vout;
    const int64_t nb = n / QK_K, npairs = (nb + 1) / 2;
    for (int64_t p = 0; p < npairs; p++) {
        uint8_t *o = out + p * K_PAIR_BYTES;
        for (int l = 0; l < 16; l++) {
            const int64_t b = 2 * p + k_tile_order[l] / 8;
            const int j = k_tile_order[l] % 8;
            const uint8_t *blk = y + b * Q8_K_BYTES;
            for (int t = 0; t < 8; t++)
                for (int i = 0; i < 4; i++) o[64 * t + 4 * l + i] = b < nb ? blk[Q8_K_QS + 32 * j + 4 * t + i] : 0;
            const int32_t bs = b < nb ? (int32_t)rd_i16(blk + Q8_K_BSUMS + 4 * j) + (int32_t)rd_i16(blk + Q8_K_BSUMS + 4 * j + 2) : 0;
            memcpy(o + 2 * QK_K + 4 * l, &bs, sizeof bs);
        }
    }
    for (int64_t b = 0; b < (nb + 7) / 8 * 8; b++) {
        const float v = b < nb ? rd_f32(y + b * Q8_K_BYTES) : 0.0f;
        memcpy(out + npairs * K_PAIR_BYTES + 4 * b, &v, sizeof v);
    }
}

const runner_act_pack runner_q8_K_tile_pack = {q8_K_tile_pack, q8_K_tile_bytes};
