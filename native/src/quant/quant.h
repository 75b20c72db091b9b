/*
 * quant.h: the weight-type table the engine computes with. One entry per ggml type the engine
 * supports; each entry has a scalar reference (the spec, written to read top to bottom) and SIMD
 * variants that must give bitwise the same results on every input, blocking and tail.
 *
 * How a quantized matmul works (as llama.cpp does it): the activations of one token (a row of
 * n floats) are quantized once per matmul with `from_float` of the weight's `vec_dot_type`
 * (Q8_0 blocks for Q4_0/Q5_0/Q8_0 weights, Q8_1 blocks for Q4_1/Q5_1, F16 for F16 weights, BF16 for
 * BF16, plain F32 for F32), then every output element is one `vec_dot(n, &out, weight_row, act_row)`.
 * Integer block sums are exact; the float part has ONE order, fixed in the scalar reference
 * (docs/kernels.md, "Canonical orders").
 *
 * Layouts are ggml's (ggml-common.h), so GGUF tensor bytes are used in place. Kernels accept any
 * byte alignment of x and y (GGUF data is only 32-byte aligned and block rows are 18, 20, ... bytes);
 * float arrays (`const float *`) must be naturally aligned.
 */
#ifndef RUNNER_QUANT_H
#define RUNNER_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids the engine implements (a subset of src/lib/gguf/types.ts). */
enum {
    RUNNER_TYPE_F32 = 0,
    RUNNER_TYPE_F16 = 1,
    RUNNER_TYPE_Q4_0 = 2,
    RUNNER_TYPE_Q4_1 = 3,
    RUNNER_TYPE_Q5_0 = 6,
    RUNNER_TYPE_Q5_1 = 7,
    RUNNER_TYPE_Q8_0 = 8,
    RUNNER_TYPE_Q8_1 = 9,
    RUNNER_TYPE_Q2_K = 10,
    RUNNER_TYPE_Q3_K = 11,
    RUNNER_TYPE_Q4_K = 12,
    RUNNER_TYPE_Q5_K = 13,
    RUNNER_TYPE_Q6_K = 14,
    RUNNER_TYPE_Q8_K = 15,
    RUNNER_TYPE_IQ4_NL = 20,
    RUNNER_TYPE_BF16 = 30,
    RUNNER_TYPE_MXFP4 = 39,
};

/* Kernel variants (runner_kernel_variant) are declared in runner.h; a NULL slot means "not implemented". */

/* *s = dot(x, y) over n values: x is n values of the weight type, y n values of its vec_dot_type.
 * n is a multiple of the block size (n = 0 gives +0). */
typedef void (*runner_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
/* s[0] = dot(x, y) and s[1] = dot(x + bx, y): two weight rows (bx bytes apart) against one
 * activation row, each result bitwise what vec_dot gives for that row. Where it exists it does the
 * activation's share of the work (loads, sums, scales) once for both rows. */
typedef void (*runner_vec_dot2_fn)(int64_t n, float *s, const void *x, size_t bx, const void *y);
/* A register tile for prompt matmuls: R weight rows (x + r*bx) against C activation rows (y + c*by),
 * R and C the type's tile_rows / tile_cols for the variant: s[R*c + r] = dot(x_r, y_c), each bitwise
 * what vec_dot gives. Each weight block is unpacked once for all C activations and each activation
 * block loaded once for all R rows. */
typedef void (*runner_vec_dot_tile_fn)(int64_t n, float *s, const void *x, size_t bx, const void *y, size_t by);
/* One weight row against nc (1..RUNNER_MVN_MAX) activations packed by mv_pack, by bytes apart. */
typedef void (*runner_vec_dot_mvn_fn)(int64_t n, float *s, const void *x, const void *y, size_t by, int nc);
#define RUNNER_MVN_MAX 4
/* The tile against its first nc (1 <= nc < tile_cols) activation rows only. */
typedef void (*runner_vec_dot_tile_few_fn)(int64_t n, float *s, const void *x, size_t bx, const void *y, size_t by, int nc);
#define RUNNER_TILE_MAX 16 /* R * C never exceeds this */
/* An activation layout a kernel reads instead of vec_dot_type rows (see tile_pack, mv_pack): pack
 * writes bytes(n) bytes for one row of n values of the vec_dot_type at y. The kernels load it
 * unaligned: the engine's rows are 64-byte aligned, but the test hooks' buffers are not. */
typedef struct runner_act_pack {
    void (*pack)(const void *y, void *out, int64_t n);
    size_t (*bytes)(int64_t n);
} runner_act_pack;
/* y[0..n) = the n values x holds, as floats (n a multiple of the block size). */
typedef void (*runner_to_float_fn)(const void *x, float *y, int64_t n);
/* y = x[0..n) encoded in the type (n a multiple of the block size). */
typedef void (*runner_from_float_fn)(const float *x, void *y, int64_t n);

typedef struct runner_type_traits {
    int32_t type;           /* ggml type id */
    const char *name;       /* ggml's name: "Q4_0" */
    int64_t block_size;     /* values per block */
    size_t type_size;       /* bytes per block */
    int32_t vec_dot_type;   /* type the activations are converted to before vec_dot */
    runner_to_float_fn to_float;                         /* scalar reference dequantizer */
    /* Quantizer used for WEIGHTS: bit-identical to llama.cpp's quantize_row_*_ref (what
     * llama_model_quantize writes without an importance matrix); for F16/BF16 ggml's row
     * conversion, for F32 a copy. NULL where not provided. */
    runner_from_float_fn from_float_ref;
    /* Quantizer used for ACTIVATIONS (only on types that are some type's vec_dot_type), per
     * variant; every variant gives the same bytes as [RUNNER_KERNEL_SCALAR]. For Q8_0/Q8_1 this is
     * ggml's x86 activation path (d = amax/127, multiply by 127/amax, round half to even), which
     * differs from from_float_ref in the last bit of some values. */
    runner_from_float_fn from_float[RUNNER_KERNEL_COUNT];
    runner_vec_dot_fn vec_dot[RUNNER_KERNEL_COUNT];      /* NULL where the variant is absent */
    /* Two rows per call, where that pays (AVX-512 block types); NULL elsewhere: call vec_dot per row,
     * or use runner_vec_dot_rows(), which does either. Needs what vec_dot[v] needs. */
    runner_vec_dot2_fn vec_dot2[RUNNER_KERNEL_COUNT];
    /* The prompt tile and its shape (AVX-512 Q4_0 and Q8_0: 1 x 8 on packed activations, Q4_K, Q5_K, Q6_K: 1 x 8); NULL and 0 elsewhere.
     * Needs what vec_dot[v] needs. */
    runner_vec_dot_tile_fn vec_dot_tile[RUNNER_KERNEL_COUNT];
    /* The same tile on fewer activation rows (AVX-512 Q4_0 and Q8_0): a decode group's step of a few
     * sequences, a prompt's last tokens. NULL elsewhere. */
    runner_vec_dot_tile_few_fn vec_dot_tile_few[RUNNER_KERNEL_COUNT];
    uint8_t tile_rows[RUNNER_KERNEL_COUNT];
    uint8_t tile_cols[RUNNER_KERNEL_COUNT];
    /* The layout the tile's activation rows are in: NULL for vec_dot_type rows as they are, else
     * each row packed once per token (the same bytes for every weight that shares it). */
    const runner_act_pack *tile_pack[RUNNER_KERNEL_COUNT];
    /* Decode (one token): kernels that read the activation row packed by mv_pack, once per token,
     * instead of the vec_dot_type row (AVX-512 Q4_0); NULL elsewhere. Bitwise vec_dot[v] and vec_dot2[v]. */
    const runner_act_pack *mv_pack[RUNNER_KERNEL_COUNT];
    runner_vec_dot_fn vec_dot_mv[RUNNER_KERNEL_COUNT];
    runner_vec_dot2_fn vec_dot2_mv[RUNNER_KERNEL_COUNT];
    /* A few tokens at once (a decode group's step) on mv_pack rows, the weight unpacked once for all
     * (AVX-512 Q4_0); NULL elsewhere. Bitwise vec_dot[v] per token. */
    runner_vec_dot_mvn_fn vec_dot_mvn[RUNNER_KERNEL_COUNT];
    runner_cpu_mask needs[RUNNER_KERNEL_COUNT];          /* features each vec_dot variant requires */
    runner_cpu_mask from_float_needs[RUNNER_KERNEL_COUNT]; /* features each from_float variant requires */
} runner_type_traits;

/* F16 x F16 (an F16 KV cache row against a query rounded to F16, as ggml does): not in the weight
 * table, since F16 weights dot against F32 activations. Its vec_dot variants obey the same contract. */
const runner_type_traits *runner_kv_f16_traits(void);

/* y[i] = the float of the half nearest x[i] * a (the product rounded to float first; halves round to
 * nearest even, as runner_fp32_to_fp16): the attention's query against an F16 cache.
 * Every variant is bitwise the scalar one. NULL where a variant is absent. */
typedef void (*runner_round_f16_fn)(int64_t n, float a, const float *x, float *y);
runner_round_f16_fn runner_round_f16_variant(runner_kernel_variant v);
runner_round_f16_fn runner_round_f16_pick(runner_cpu_mask cpu);

/* Q8_0 rows regrouped for the AVX-512 Q4_0 and Q8_0 tiles (q8.c): per group of 16 blocks, the
 * quants offset to unsigned (y + 128) in the tiles' layout-A order, then the 16 scales as floats in
 * that order; a short last group is padded with zero activations. */
extern const runner_act_pack runner_q8_0_tile_pack;
/* Q8_0 rows regrouped for the AVX-512 Q4_0 decode kernels (q8.c): per group of 16 blocks, the quants
 * in layout A (values 0..15 of four blocks, then 16..31), then 8 * sum(q) and the scale of each block
 * in lane order (int32, float). */
extern const runner_act_pack runner_q8_0_mv_pack;
/* Q8_K rows regrouped for the AVX-512 Q4_K tile (q8k.c): per pair of super-blocks, the quants as
 * four-value words with each 32-value sub-block in its own lane, and the sub-blocks' bsum pairs as
 * int32; then every super-block's d. */
extern const runner_act_pack runner_q8_K_tile_pack;

/* The entry for a ggml type id, or NULL when the engine does not implement it. */
const runner_type_traits *runner_type_traits_get(int32_t type);

/* Every implemented entry, in type-id order; *count receives how many. */
const runner_type_traits *const *runner_type_traits_all(int32_t *count);

/* Whether variant v of the slot exists in this build and `cpu` has everything it needs. */
int runner_kernel_vec_dot_usable(const runner_type_traits *t, runner_kernel_variant v, runner_cpu_mask cpu);
int runner_kernel_from_float_usable(const runner_type_traits *t, runner_kernel_variant v, runner_cpu_mask cpu);

/* The fastest variant of `slot` (vec_dot or from_float) this CPU can run for the type;
 * RUNNER_KERNEL_SCALAR when the slot has no usable SIMD variant (check the slot for NULL). */
runner_kernel_variant runner_kernel_pick_vec_dot(const runner_type_traits *t, runner_cpu_mask cpu);
runner_kernel_variant runner_kernel_pick_from_float(const runner_type_traits *t, runner_cpu_mask cpu);

/* s[r] = dot(x + r*bx, y) for r < nrows with variant v (which the caller checked is usable): rows r
 * and r + nrows/2 through vec_dot2[v] where it exists (two long streams for the prefetcher), vec_dot[v]
 * for the rest. Bitwise equal to calling vec_dot[v] row by row. The way for a matvec to use vec_dot2. */
void runner_vec_dot_rows(const runner_type_traits *t, runner_kernel_variant v, int64_t n, float *s, const void *x, size_t bx,
                         int64_t nrows, const void *y);
/* runner_vec_dot_rows with the activation also packed by t->mv_pack[v] at yp (NULL: not packed), for
 * the vec_dot_mv / vec_dot2_mv kernels where the variant has them. Bitwise the same results. */
void runner_vec_dot_rows_packed(const runner_type_traits *t, runner_kernel_variant v, int64_t n, float *s, const void *x, size_t bx,
                                int64_t nrows, const void *y, const void *yp);

/* Bytes that n values of the type take: 0 and *bytes set on success; -1 when n is negative or not
 * a multiple of the block size, -2 when the size does not fit in size_t. */
int runner_type_row_bytes(const runner_type_traits *t, int64_t n, size_t *bytes);

/* IEEE half and bfloat16 conversions, ties to even, as ggml (F16C) does them. */
float runner_fp16_to_fp32(uint16_t h);
uint16_t runner_fp32_to_fp16(float f);
float runner_bf16_to_fp32(uint16_t h);
uint16_t runner_fp32_to_bf16(float f);

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_QUANT_H */
