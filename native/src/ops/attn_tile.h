/*
 * The kernels of tiled attention (ops/attention.c drives them): a block of queries against one block
 * of RUNNER_ATTN_BLOCK cached positions of one KV head at a time, the queries of a GQA group (and of
 * several tokens) sharing every K and V load, with an online softmax over the blocks in ascending
 * order.
 *
 * Canonical order (the scalar variant in attn_tile.c is the spec; the AVX2 and AVX-512 variants are
 * bitwise equal to it, whatever the tiling of queries, because each query's arithmetic is its own):
 *   for each block b of positions [32b, 32b + 32) that holds a key the query sees, ascending:
 *     s[j]  = +0; for d in 0..hd-1: s[j] = fmaf(q[d], k_j[d], s[j])          (sequential over d)
 *     s[j]  = soft-capped (cap * tanhf(s / cap), libm, when the model has a cap), then s[j] * scale
 *     masked keys (after the query, or before its sliding window) are -inf
 *     m'    = max(m, max_j s[j]);  c = m' > m ? exp_ref(m - m') : 1
 *     e[j]  = exp_ref(s[j] - m')                                             (masked: exactly 0)
 *     l     = l * c + tree(e)      tree: t[i] = e[i] + e[i + 16], then halves 8, 4, 2, 1
 *     acc[d] = acc[d] * c (when c != 1); for the query's keys j ascending: acc[d] = fmaf(e[j], v_j[d], acc[d])
 *   out[d] = acc[d] * (1 / l)
 * exp_ref is a Cephes-style expf written in fmaf, adds and bit operations (attn_tile.c), so every
 * variant evaluates it the same; libm's expf could not be vectorised bitwise.
 *
 * The tile loads the V rows any of its queries sees, but each query's sum takes only its own keys
 * (a masked FMA, not e = 0: 0 * Inf, from an F16 value past 65504, would be NaN), so a query's
 * output is bitwise the same alone or in any tile.
 */
#ifndef RUNNER_OPS_ATTN_TILE_H
#define RUNNER_OPS_ATTN_TILE_H

#include <stddef.h>
#include <stdint.h>

#include "runner.h"

/* Positions per key block; the K cache is stored transposed in blocks of this many (kv/kv_cache.h). */
#define RUNNER_ATTN_BLOCK 32

/* exp_ref's constants, shared by every variant: Cephes' expf split of ln 2 (C1 has 9 significant bits,
 * so n * C1 is exact) and its polynomial for e^r - 1 - r on |r| <= ln2 / 2; adding MAGIC = 1.5 * 2^23
 * rounds to an integer (ties to even); below MIN, e^x < 2^-125 is taken as 0 (never a subnormal). */
#define RUNNER_EXP_LOG2E 1.44269504088896341f
#define RUNNER_EXP_C1 0.693359375f
#define RUNNER_EXP_C2 (-2.12194440e-4f)
#define RUNNER_EXP_MAGIC 12582912.0f
#define RUNNER_EXP_MIN (-87.0f)
#define RUNNER_EXP_P0 1.9875691500e-4f
#define RUNNER_EXP_P1 1.3981999507e-3f
#define RUNNER_EXP_P2 8.3334519073e-3f
#define RUNNER_EXP_P3 4.1665795894e-2f
#define RUNNER_EXP_P4 1.6666665459e-1f
#define RUNNER_EXP_P5 5.0000001201e-1f

/* Queries per tile the driver hands the kernels at most. */
#define RUNNER_ATTN_MAX_QUERIES 64

/* An F16 cache's block is widened to F32 once per tile (exact), so the kernels below read only F32. */
typedef void (*runner_attn_widen_fn)(size_t n, const uint16_t *src, float *dst);

/* s[i][j] = q_i . k_j for nq queries (rows of hd floats at q + i * hd) and the 32 keys of one block,
 * kt = the block's transposed K ([hd][32] floats). */
typedef void (*runner_attn_scores_fn)(int nq, int hd, const float *q, const float *kt, float *s);

/* One block's online-softmax step for nq queries: s[i][0..31] (scores, not yet scaled) is scaled,
 * masked to [lo[i], hi[i]] (block-relative; lo > hi: the query sees nothing here and its state is
 * left alone, e = 0, c = 1), and turned into e[i][0..31]; m[i], l[i] are updated and c[i] is the factor
 * the accumulator must be multiplied by. */
typedef void (*runner_attn_softmax_fn)(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l,
                                       float *c, float *e);

/* acc[i][d] = acc[i][d] * c[i] (when c[i] != 1), then for j in [lo[i], hi[i]] ascending:
 * acc[i][d] = fmaf(e[i][j], v_j[d], acc[i][d]); v_j = v + j * hd (the block's rows, F32, valid for j in
 * [j_lo, j_hi], the union of the queries' ranges). */
typedef void (*runner_attn_accum_fn)(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e,
                                     const float *v, const float *c, float *acc);

typedef struct runner_attn_kernels {
    runner_attn_widen_fn widen;
    runner_attn_scores_fn scores;
    runner_attn_softmax_fn softmax;
    runner_attn_accum_fn accum;
} runner_attn_kernels;

/* The scalar reference (the spec), and its SIMD variants. */
float runner_attn_exp_ref(float x);
void runner_attn_widen_scalar(size_t n, const uint16_t *src, float *dst);
void runner_attn_scores_scalar(int nq, int hd, const float *q, const float *kt, float *s);
void runner_attn_softmax_scalar(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l, float *c,
                                float *e);
void runner_attn_accum_scalar(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                              const float *c, float *acc);

void runner_attn_widen_avx2(size_t n, const uint16_t *src, float *dst);
void runner_attn_scores_avx2(int nq, int hd, const float *q, const float *kt, float *s);
void runner_attn_softmax_avx2(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l, float *c,
                              float *e);
void runner_attn_accum_avx2(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                            const float *c, float *acc);

void runner_attn_widen_avx512(size_t n, const uint16_t *src, float *dst);
void runner_attn_scores_avx512(int nq, int hd, const float *q, const float *kt, float *s);
void runner_attn_softmax_avx512(int nq, float scale, const float *s, const int32_t *lo, const int32_t *hi, float *m, float *l, float *c,
                                float *e);
void runner_attn_accum_avx512(int nq, int hd, int j_lo, int j_hi, const int32_t *lo, const int32_t *hi, const float *e, const float *v,
                              const float *c, float *acc);

/* The variant's kernels (NULL members where this build lacks it), and the best one this CPU mask allows. */
const runner_attn_kernels *runner_attn_kernels_variant(runner_kernel_variant v);
const runner_attn_kernels *runner_attn_kernels_pick(runner_cpu_mask cpu);

#endif
