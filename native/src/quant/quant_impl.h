/*
 * quant_impl.h: what the files of native/src/quant share and nothing outside them needs: ggml's
 * block layouts as byte offsets, unaligned field loads, the x86 float->integer conversions the
 * reference quantizers reproduce, the canonical reduction trees, and the per-variant kernels the
 * type table (type_table.c) points at.
 *
 * Blocks are read through byte pointers and memcpy, never through struct pointers: GGUF data is
 * only 32-byte aligned, a Q4_0 row starts every 18 bytes, and the test hooks run kernels at every
 * byte offset.
 */
#ifndef RUNNER_QUANT_IMPL_H
#define RUNNER_QUANT_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

/* ---- ggml block layouts (ggml-common.h), as byte offsets ---------------------------------------
 * block_q4_0 {half d; u8 qs[16]}                 value j = (qs[j] & 15) - 8, value 16+j = (qs[j] >> 4) - 8
 * block_q4_1 {half d; half m; u8 qs[16]}         value = nibble * d + m
 * block_q5_0 {half d; u8 qh[4]; u8 qs[16]}       5th bit of value j is bit j of qh (little-endian u32); minus 16
 * block_q5_1 {half d; half m; u8 qh[4]; u8 qs[16]}
 * block_q8_0 {half d; i8 qs[32]}
 * block_q8_1 {half d; half s; i8 qs[32]}         s = d * sum(qs), rounded to half */
#define QK 32 /* values per block, every block type here */

#define Q4_0_BYTES 18
#define Q4_0_QS 2
#define Q4_1_BYTES 20
#define Q4_1_M 2
#define Q4_1_QS 4
#define Q5_0_BYTES 22
#define Q5_0_QH 2
#define Q5_0_QS 6
#define Q5_1_BYTES 24
#define Q5_1_M 2
#define Q5_1_QH 4
#define Q5_1_QS 8
#define Q8_0_BYTES 34
#define Q8_0_QS 2
#define Q8_1_BYTES 36
#define Q8_1_S 2
#define Q8_1_QS 4

/* Number of float accumulator lanes in the canonical orders (see docs/kernels.md):
 * F32/F16/BF16: element i goes to lane i % RUNNER_FLOAT_LANES;
 * block types:  block b goes to lane b % RUNNER_BLOCK_LANES. */
#define RUNNER_FLOAT_LANES 64
#define RUNNER_BLOCK_LANES 16

static inline uint16_t rd_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t rd_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float rd_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void wr_u16(uint8_t *p, uint16_t v) {
    memcpy(p, &v, sizeof v);
}

static inline void wr_u32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, sizeof v);
}

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The half stored at p, as a float (exact). */
static inline float rd_half(const uint8_t *p) {
    return runner_fp16_to_fp32(rd_u16(p));
}

/*
 * x86's CVTTSS2SI: truncate toward zero; NaN and values outside int32 give INT32_MIN (the
 * "integer indefinite"). ggml's reference quantizers write `(int8_t)(x + 8.5f)` and
 * `(uint8_t)(x + 0.5f)`, which GCC compiles to this instruction followed by taking the low byte;
 * spelling it out keeps our C free of undefined behaviour and gives ggml's bytes for every input.
 */
static inline int32_t x86_cvtt_i32(float v) {
    if (!(v > -2147483904.0f && v < 2147483648.0f)) return INT32_MIN; /* NaN or out of range */
    return (int32_t)v;
}

/* x86's CVTSS2SI under the default rounding mode (nearest even), same out-of-range rule. */
static inline int32_t x86_cvtn_i32(float v) {
    const float r = nearbyintf(v);
    if (!(r >= -2147483648.0f && r < 2147483648.0f)) return INT32_MIN;
    return (int32_t)r;
}

/* The low byte of an int32 as int8 (what a C cast to int8_t does on every compiler we target). */
static inline int8_t low_i8(int32_t v) {
    return (int8_t)(uint8_t)((uint32_t)v & 0xffu);
}

static inline int8_t sat_i8(int32_t v) {
    return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/* x86 MAXPS/MAXSS operand rule: a > b ? a : b (so a NaN in either operand yields b). */
static inline float x86_max(float a, float b) {
    return a > b ? a : b;
}

/* Canonical tree over the block lanes: for w = 8, 4, 2, 1: lane[i] += lane[i + w] (i < w). */
static inline float reduce_block_lanes(float acc[RUNNER_BLOCK_LANES]) {
    for (int w = RUNNER_BLOCK_LANES / 2; w >= 1; w /= 2) {
        for (int i = 0; i < w; i++) acc[i] = acc[i] + acc[i + w];
    }
    return acc[0];
}

/* Canonical tree over the float lanes: for w = 32, 16, ..., 1: lane[i] += lane[i + w] (i < w). */
static inline float reduce_float_lanes(float acc[RUNNER_FLOAT_LANES]) {
    for (int w = RUNNER_FLOAT_LANES / 2; w >= 1; w /= 2) {
        for (int i = 0; i < w; i++) acc[i] = acc[i] + acc[i + w];
    }
    return acc[0];
}

/* ---- kernels, by variant ------------------------------------------------------------------------
 * Naming: runner_<what>_<type>[_<vec_dot_type>]_<variant>. The scalar ones are the spec. */
#define RUNNER_DECLARE_VEC_DOT(name) void name(int64_t n, float *s, const void *x, const void *y)
#define RUNNER_DECLARE_VEC_DOT2(name) void name(int64_t n, float *s, const void *x, size_t bx, const void *y)
#define RUNNER_DECLARE_VEC_DOT_TILE(name) void name(int64_t n, float *s, const void *x, size_t bx, const void *y, size_t by)
#define RUNNER_DECLARE_FROM_FLOAT(name) void name(const float *x, void *y, int64_t n)
#define RUNNER_DECLARE_TO_FLOAT(name) void name(const void *x, float *y, int64_t n)

/* float.c / float_avx2.c / float_avx512.c */
RUNNER_DECLARE_TO_FLOAT(runner_to_float_f32);
RUNNER_DECLARE_TO_FLOAT(runner_to_float_f16);
RUNNER_DECLARE_TO_FLOAT(runner_to_float_bf16);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_f32);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_f16_scalar);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_bf16_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f32_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_f16_scalar);
void runner_round_f16_scalar(int64_t n, float a, const float *x, float *y);
void runner_round_f16_avx2(int64_t n, float a, const float *x, float *y);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_bf16_scalar);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_f16_avx2);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_bf16_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f32_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_f16_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_bf16_avx2);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_f16_avx512);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_bf16_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f32_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_f16_f16_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_bf16_avx512);
/* float_tile_avx512.c: 2 x 3 prompt tiles, and the same on 1 or 2 activation rows */
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_f32_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_f16_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_bf16_avx512);
void runner_vec_dot_tile_few_f32_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc);
void runner_vec_dot_tile_few_f16_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc);
void runner_vec_dot_tile_few_bf16_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc);

/* q8.c / q8_avx2.c / q8_avx512.c */
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q8_0);
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q8_1);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q8_0);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q8_1);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_0_scalar);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_1_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_0_q8_0_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_1_q8_1_scalar);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_0_avx2);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_1_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_0_q8_0_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_1_q8_1_avx2);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_0_avx512);
RUNNER_DECLARE_FROM_FLOAT(runner_from_float_q8_1_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_0_q8_0_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q8_1_q8_1_avx512);
RUNNER_DECLARE_VEC_DOT2(runner_vec_dot2_q8_0_q8_0_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_q8_0_q8_0_avx512);
void runner_vec_dot_tile_few_q8_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc);
RUNNER_DECLARE_VEC_DOT2(runner_vec_dot2_q8_1_q8_1_avx512);

/* q4.c / q4_avx2.c / q4_avx512.c */
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q4_0);
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q4_1);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q4_0);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q4_1);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_0_q8_0_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_1_q8_1_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_0_q8_0_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_1_q8_1_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_0_q8_0_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q4_1_q8_1_avx512);
RUNNER_DECLARE_VEC_DOT2(runner_vec_dot2_q4_0_q8_0_avx512);
RUNNER_DECLARE_VEC_DOT_TILE(runner_vec_dot_tile_q4_0_q8_0_avx512);
void runner_vec_dot_tile_few_q4_0_q8_0_avx512(int64_t n, float *s, const void *vx, size_t bx, const void *vy, size_t by, int nc);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_mv_q4_0_avx512);
RUNNER_DECLARE_VEC_DOT2(runner_vec_dot2_mv_q4_0_avx512);
void runner_vec_dot_mvn_q4_0_avx512(int64_t n, float *s, const void *vx, const void *vy, size_t by, int nc);
RUNNER_DECLARE_VEC_DOT2(runner_vec_dot2_q4_1_q8_1_avx512);

/* q5.c / q5_avx2.c / q5_avx512.c */
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q5_0);
RUNNER_DECLARE_TO_FLOAT(runner_to_float_q5_1);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q5_0);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_q5_1);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_0_q8_0_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_1_q8_1_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_0_q8_0_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_1_q8_1_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_0_q8_0_avx512);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_q5_1_q8_1_avx512);


#endif /* RUNNER_QUANT_IMPL_H */
