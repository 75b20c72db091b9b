/*
 * F32, F16 and BF16: the scalar references (the spec the SIMD variants in float_avx2.c and
 * float_avx512.c are tested against, bitwise).
 *
 * Canonical order of vec_dot (all three types; y is of the same type as x):
 *   acc[0..63] = +0
 *   for i in 0..n-1:  acc[lane(i)] = fmaf(float(x[i]), float(y[i]), acc[lane(i)])
 *   for w in 32, 16, 8, 4, 2, 1:  for l < w:  acc[l] = acc[l] + acc[l + w]
 *   result = acc[0]
 * with lane(i) = i % 64 for F32 and F16, and for BF16, writing r = i % 64:
 *   lane(i) = 32 * (r / 32) + 16 * (r % 2) + (r % 32) / 2
 * i.e. within each 32 values the even ones fill 16 lanes and the odd ones the next 16. That is the
 * order in which SIMD code finds bfloat16 values without a shuffle: a 32-bit word holding two of
 * them becomes the even one by a shift left of 16 and the odd one by masking the low half.
 * 64 lanes are four AVX-512 or eight AVX2 accumulators: enough independent FMA chains to hide the
 * FMA latency on both. Lanes a tail does not reach are left untouched (not added +0 to: that would
 * turn a -0 lane into +0).
 */
#include "quant/quant_impl.h"

void runner_to_float_f32(const void *vx, float *y, int64_t n) {
    memcpy(y, vx, (size_t)n * sizeof(float));
}

void runner_to_float_f16(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = runner_fp16_to_fp32(rd_u16(x + 2 * i));
}

void runner_to_float_bf16(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = runner_bf16_to_fp32(rd_u16(x + 2 * i));
}

void runner_from_float_f32(const float *x, void *y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof(float));
}

/* Also the weight conversion: ggml_fp32_to_fp16_row (round to nearest even). */
void runner_from_float_f16_scalar(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n; i++) wr_u16(y + 2 * i, runner_fp32_to_fp16(x[i]));
}

/* Also the weight conversion: ggml_fp32_to_bf16_row_ref. */
void runner_from_float_bf16_scalar(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n; i++) wr_u16(y + 2 * i, runner_fp32_to_bf16(x[i]));
}

void runner_vec_dot_f32_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_FLOAT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        const int l = (int)(i % RUNNER_FLOAT_LANES);
        acc[l] = fmaf(rd_f32(x + 4 * i), rd_f32(y + 4 * i), acc[l]);
    }
    *s = reduce_float_lanes(acc);
}

/* F16 x F16: attention scores against an F16 KV cache (ggml rounds the query to F16 there). */
void runner_vec_dot_f16_f16_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_FLOAT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        const int l = (int)(i % RUNNER_FLOAT_LANES);
        acc[l] = fmaf(runner_fp16_to_fp32(rd_u16(x + 2 * i)), runner_fp16_to_fp32(rd_u16(y + 2 * i)), acc[l]);
    }
    *s = reduce_float_lanes(acc);
}

/* F16 weights x F32 activations. llama.cpp's F16 matmuls keep the activations in F32 (measured:
 * shared/reference/llama-f16.json's dequantized_f32 section equals the F16 results exactly), so ours
 * do too; rounding them to F16 had put our log-probabilities 0.006 away from llama.cpp's. */
void runner_vec_dot_f16_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_FLOAT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        const int l = (int)(i % RUNNER_FLOAT_LANES);
        acc[l] = fmaf(runner_fp16_to_fp32(rd_u16(x + 2 * i)), rd_f32(y + 4 * i), acc[l]);
    }
    *s = reduce_float_lanes(acc);
}

/* BF16's lane for value i (see the canonical order above). */
static int bf16_lane(int64_t i) {
    const int r = (int)(i % RUNNER_FLOAT_LANES);
    return 32 * (r / 32) + 16 * (r % 2) + (r % 32) / 2;
}

void runner_vec_dot_bf16_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float acc[RUNNER_FLOAT_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        const int l = bf16_lane(i);
        acc[l] = fmaf(runner_bf16_to_fp32(rd_u16(x + 2 * i)), runner_bf16_to_fp32(rd_u16(y + 2 * i)), acc[l]);
    }
    *s = reduce_float_lanes(acc);
}

void runner_round_f16_scalar(int64_t n, float a, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = runner_fp16_to_fp32(runner_fp32_to_fp16(x[i] * a));
}
