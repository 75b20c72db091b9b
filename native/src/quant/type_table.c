/*
 * The one table of weight types the engine computes with (ENGINE.md, "Kernels"). Block sizes and
 * byte sizes must agree with src/lib/gguf/types.ts; test/native/quant.test.ts checks that they do.
 *
 * A SIMD slot is filled only when this build compiled the variant (x86-64 with GCC or Clang); the
 * `needs` masks say what the CPU must have for the picker to choose it. AVX-512 variants are
 * compiled with -mavx512dq as well, but the engine's feature list has no DQ bit: every CPU with
 * AVX-512 BW and VL (Skylake-SP and later, Zen 4) also has DQ, so BW|VL stands for it.
 */
#include <stddef.h>

#include "quant/kquant.h"
#include "quant/nl.h"
#include "quant/quant_impl.h"

#define BIT(f) ((runner_cpu_mask)1 << (unsigned)(f))
#define NEEDS_AVX2 (BIT(RUNNER_CPU_AVX2) | BIT(RUNNER_CPU_FMA) | BIT(RUNNER_CPU_F16C))
#define NEEDS_AVX512 (NEEDS_AVX2 | BIT(RUNNER_CPU_AVX512F) | BIT(RUNNER_CPU_AVX512BW) | BIT(RUNNER_CPU_AVX512VL))
#define NEEDS_AVX512_VNNI (NEEDS_AVX512 | BIT(RUNNER_CPU_AVX512_VNNI))

#if defined(RUNNER_NO_X86_VARIANTS) || !(defined(__x86_64__) || defined(_M_X64))
#define X86(fn) NULL
#else
#define X86(fn) fn
#endif

/* Slots for a type that has no kernel in a position. */
#define NO_KERNELS {NULL, NULL, NULL}
#define NO_NEEDS {0, 0, 0}

static const runner_type_traits type_f32 = {
    .type = RUNNER_TYPE_F32,
    .name = "F32",
    .block_size = 1,
    .type_size = 4,
    .vec_dot_type = RUNNER_TYPE_F32,
    .to_float = runner_to_float_f32,
    .from_float_ref = runner_from_float_f32,
    .from_float = {runner_from_float_f32, NULL, NULL}, /* a copy: nothing for SIMD to do */
    .vec_dot = {runner_vec_dot_f32_scalar, X86(runner_vec_dot_f32_avx2), X86(runner_vec_dot_f32_avx512)},
    .vec_dot_tile = {NULL, NULL, X86(runner_vec_dot_tile_f32_avx512)},
    .vec_dot_tile_few = {NULL, NULL, X86(runner_vec_dot_tile_few_f32_avx512)},
    .tile_rows = {0, 0, 2},
    .tile_cols = {0, 0, 3},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512},
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_f16 = {
    .type = RUNNER_TYPE_F16,
    .name = "F16",
    .block_size = 1,
    .type_size = 2,
    .vec_dot_type = RUNNER_TYPE_F32, /* as llama.cpp computes F16 matmuls: see runner_vec_dot_f16_scalar */
    .to_float = runner_to_float_f16,
    .from_float_ref = runner_from_float_f16_scalar,
    .from_float = {runner_from_float_f16_scalar, X86(runner_from_float_f16_avx2), X86(runner_from_float_f16_avx512)},
    .vec_dot = {runner_vec_dot_f16_scalar, X86(runner_vec_dot_f16_avx2), X86(runner_vec_dot_f16_avx512)},
    /* the prompt tile (float_tile_avx512.c): each weight value widened once for three tokens */
    .vec_dot_tile = {NULL, NULL, X86(runner_vec_dot_tile_f16_avx512)},
    .vec_dot_tile_few = {NULL, NULL, X86(runner_vec_dot_tile_few_f16_avx512)},
    .tile_rows = {0, 0, 2},
    .tile_cols = {0, 0, 3},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512},
    .from_float_needs = {0, NEEDS_AVX2, NEEDS_AVX512},
};

/* Not a weight type: the dot of an F16 KV cache row with a query rounded to F16. */
static const runner_type_traits type_f16_kv = {
    .type = RUNNER_TYPE_F16,
    .name = "F16xF16",
    .block_size = 1,
    .type_size = 2,
    .vec_dot_type = RUNNER_TYPE_F16,
    .to_float = runner_to_float_f16,
    .from_float_ref = runner_from_float_f16_scalar,
    .from_float = {runner_from_float_f16_scalar, X86(runner_from_float_f16_avx2), X86(runner_from_float_f16_avx512)},
    .vec_dot = {runner_vec_dot_f16_f16_scalar, X86(runner_vec_dot_f16_f16_avx2), X86(runner_vec_dot_f16_f16_avx512)},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512},
    .from_float_needs = {0, NEEDS_AVX2, NEEDS_AVX512},
};

const runner_type_traits *runner_kv_f16_traits(void) {
    return &type_f16_kv;
}

static const runner_type_traits type_q4_0 = {
    .type = RUNNER_TYPE_Q4_0,
    .name = "Q4_0",
    .block_size = QK,
    .type_size = Q4_0_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_0,
    .to_float = runner_to_float_q4_0,
    .from_float_ref = runner_quantize_ref_q4_0,
    .from_float = NO_KERNELS,
    .vec_dot = {runner_vec_dot_q4_0_q8_0_scalar, X86(runner_vec_dot_q4_0_q8_0_avx2), X86(runner_vec_dot_q4_0_q8_0_avx512)},
    .vec_dot2 = {NULL, NULL, X86(runner_vec_dot2_q4_0_q8_0_avx512)},
    .vec_dot_tile = {NULL, NULL, X86(runner_vec_dot_tile_q4_0_q8_0_avx512)},
    .vec_dot_tile_few = {NULL, NULL, X86(runner_vec_dot_tile_few_q4_0_q8_0_avx512)},
    .tile_rows = {0, 0, 1},
    .tile_cols = {0, 0, 8},
    .tile_pack = {NULL, NULL, X86(&runner_q8_0_tile_pack)},
    .mv_pack = {NULL, NULL, X86(&runner_q8_0_mv_pack)},
    .vec_dot_mv = {NULL, NULL, X86(runner_vec_dot_mv_q4_0_avx512)},
    .vec_dot2_mv = {NULL, NULL, X86(runner_vec_dot2_mv_q4_0_avx512)},
    .vec_dot_mvn = {NULL, NULL, X86(runner_vec_dot_mvn_q4_0_avx512)},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_q4_1 = {
    .type = RUNNER_TYPE_Q4_1,
    .name = "Q4_1",
    .block_size = QK,
    .type_size = Q4_1_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_1,
    .to_float = runner_to_float_q4_1,
    .from_float_ref = runner_quantize_ref_q4_1,
    .from_float = NO_KERNELS,
    .vec_dot = {runner_vec_dot_q4_1_q8_1_scalar, X86(runner_vec_dot_q4_1_q8_1_avx2), X86(runner_vec_dot_q4_1_q8_1_avx512)},
    .vec_dot2 = {NULL, NULL, X86(runner_vec_dot2_q4_1_q8_1_avx512)},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_q5_0 = {
    .type = RUNNER_TYPE_Q5_0,
    .name = "Q5_0",
    .block_size = QK,
    .type_size = Q5_0_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_0,
    .to_float = runner_to_float_q5_0,
    .from_float_ref = runner_quantize_ref_q5_0,
    .from_float = NO_KERNELS,
    .vec_dot = {runner_vec_dot_q5_0_q8_0_scalar, X86(runner_vec_dot_q5_0_q8_0_avx2), X86(runner_vec_dot_q5_0_q8_0_avx512)},
    .vec_dot2 = {NULL, NULL, NULL}, /* measured no faster than two vec_dot calls (docs/kernels.md) */
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_q5_1 = {
    .type = RUNNER_TYPE_Q5_1,
    .name = "Q5_1",
    .block_size = QK,
    .type_size = Q5_1_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_1,
    .to_float = runner_to_float_q5_1,
    .from_float_ref = runner_quantize_ref_q5_1,
    .from_float = NO_KERNELS,
    .vec_dot = {runner_vec_dot_q5_1_q8_1_scalar, X86(runner_vec_dot_q5_1_q8_1_avx2), X86(runner_vec_dot_q5_1_q8_1_avx512)},
    .vec_dot2 = {NULL, NULL, NULL},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_q8_0 = {
    .type = RUNNER_TYPE_Q8_0,
    .name = "Q8_0",
    .block_size = QK,
    .type_size = Q8_0_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_0,
    .to_float = runner_to_float_q8_0,
    .from_float_ref = runner_quantize_ref_q8_0,
    .from_float = {runner_from_float_q8_0_scalar, X86(runner_from_float_q8_0_avx2), X86(runner_from_float_q8_0_avx512)},
    .vec_dot = {runner_vec_dot_q8_0_q8_0_scalar, X86(runner_vec_dot_q8_0_q8_0_avx2), X86(runner_vec_dot_q8_0_q8_0_avx512)},
    .vec_dot2 = {NULL, NULL, X86(runner_vec_dot2_q8_0_q8_0_avx512)},
    .vec_dot_tile = {NULL, NULL, X86(runner_vec_dot_tile_q8_0_q8_0_avx512)},
    .vec_dot_tile_few = {NULL, NULL, X86(runner_vec_dot_tile_few_q8_0_q8_0_avx512)},
    .tile_rows = {0, 0, 1},
    .tile_cols = {0, 0, 8},
    .tile_pack = {NULL, NULL, X86(&runner_q8_0_tile_pack)},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = {0, NEEDS_AVX2, NEEDS_AVX512},
};

/* Q8_1 is the activation type of Q4_1/Q5_1. As a weight (which llama.cpp itself never writes) it
 * dots against Q8_1 activations, ignoring their s. */
static const runner_type_traits type_q8_1 = {
    .type = RUNNER_TYPE_Q8_1,
    .name = "Q8_1",
    .block_size = QK,
    .type_size = Q8_1_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_1,
    .to_float = runner_to_float_q8_1,
    .from_float_ref = runner_quantize_ref_q8_1,
    .from_float = {runner_from_float_q8_1_scalar, X86(runner_from_float_q8_1_avx2), X86(runner_from_float_q8_1_avx512)},
    .vec_dot = {runner_vec_dot_q8_1_q8_1_scalar, X86(runner_vec_dot_q8_1_q8_1_avx2), X86(runner_vec_dot_q8_1_q8_1_avx512)},
    .vec_dot2 = {NULL, NULL, X86(runner_vec_dot2_q8_1_q8_1_avx512)},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},
    .from_float_needs = {0, NEEDS_AVX2, NEEDS_AVX512},
};

/* K-quants (kquant.h): super-blocks of 256 values against Q8_K activations. */
#define K_TYPE(T, NAME, BYTES, lower, TILE, TILE_R, TILE_C, PACK)                                     \
    static const runner_type_traits type_##lower = {                                                 \
        .type = T,                                                                                    \
        .name = NAME,                                                                                 \
        .block_size = QK_K,                                                                           \
        .type_size = BYTES,                                                                           \
        .vec_dot_type = RUNNER_TYPE_Q8_K,                                                             \
        .to_float = runner_to_float_##lower,                                                          \
        .from_float_ref = runner_quantize_ref_##lower,                                                \
        .from_float = NO_KERNELS,                                                                     \
        .vec_dot = {runner_vec_dot_##lower##_q8_K_scalar, X86(runner_vec_dot_##lower##_q8_K_avx2),    \
                    X86(runner_vec_dot_##lower##_q8_K_avx512)},                                       \
        .vec_dot2 = {NULL, NULL, NULL},                                                               \
        .vec_dot_tile = {NULL, NULL, X86(TILE)},                                                      \
        .tile_rows = {0, 0, TILE_R},                                                                  \
        .tile_cols = {0, 0, TILE_C},                                                                  \
        .tile_pack = {NULL, NULL, X86(PACK)},                                                         \
        .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},                                                  \
        .from_float_needs = NO_NEEDS,                                                                 \
    };

K_TYPE(RUNNER_TYPE_Q2_K, "Q2_K", Q2_K_BYTES, q2_K, NULL, 0, 0, NULL)
K_TYPE(RUNNER_TYPE_Q3_K, "Q3_K", Q3_K_BYTES, q3_K, NULL, 0, 0, NULL)
K_TYPE(RUNNER_TYPE_Q4_K, "Q4_K", Q4_K_BYTES, q4_K, runner_vec_dot_tile_q4_K_q8_K_avx512, 1, 8, &runner_q8_K_tile_pack)
K_TYPE(RUNNER_TYPE_Q5_K, "Q5_K", Q5_K_BYTES, q5_K, runner_vec_dot_tile_q5_K_q8_K_avx512, 1, 8, NULL)
K_TYPE(RUNNER_TYPE_Q6_K, "Q6_K", Q6_K_BYTES, q6_K, runner_vec_dot_tile_q6_K_q8_K_avx512, 1, 8, NULL)

/* IQ4_NL and MXFP4 (nl.h): 4-bit table lookups against Q8_0 activations, as ggml pairs them. */
#define NL_TYPE(T, NAME, BYTES, lower)                                                                \
    static const runner_type_traits type_##lower = {                                                 \
        .type = T,                                                                                    \
        .name = NAME,                                                                                 \
        .block_size = QK,                                                                             \
        .type_size = BYTES,                                                                           \
        .vec_dot_type = RUNNER_TYPE_Q8_0,                                                             \
        .to_float = runner_to_float_##lower,                                                          \
        .from_float_ref = runner_quantize_ref_##lower,                                                \
        .from_float = NO_KERNELS,                                                                     \
        .vec_dot = {runner_vec_dot_##lower##_q8_0_scalar, X86(runner_vec_dot_##lower##_q8_0_avx2),    \
                    X86(runner_vec_dot_##lower##_q8_0_avx512)},                                       \
        .vec_dot2 = {NULL, NULL, NULL},                                                               \
        .needs = {0, NEEDS_AVX2, NEEDS_AVX512_VNNI},                                                  \
        .from_float_needs = NO_NEEDS,                                                                 \
    };

NL_TYPE(RUNNER_TYPE_IQ4_NL, "IQ4_NL", IQ4_NL_BYTES, iq4_nl)
NL_TYPE(RUNNER_TYPE_MXFP4, "MXFP4", MXFP4_BYTES, mxfp4)

/* Q8_K is the K-quants' activation type. Its quantizer is ggml's quantize_row_q8_K_ref, which is
 * also what ggml-cpu runs for activations on x86; scalar only (it is a small share of a matmul).
 * As a weight (ggml never stores one) it dots against Q8_K, scalar only. */
static const runner_type_traits type_q8_K = {
    .type = RUNNER_TYPE_Q8_K,
    .name = "Q8_K",
    .block_size = QK_K,
    .type_size = Q8_K_BYTES,
    .vec_dot_type = RUNNER_TYPE_Q8_K,
    .to_float = runner_to_float_q8_K,
    .from_float_ref = runner_quantize_ref_q8_K,
    .from_float = {runner_quantize_ref_q8_K, NULL, NULL},
    .vec_dot = {runner_vec_dot_q8_K_q8_K_scalar, NULL, NULL},
    .vec_dot2 = {NULL, NULL, NULL},
    .needs = NO_NEEDS,
    .from_float_needs = NO_NEEDS,
};

static const runner_type_traits type_bf16 = {
    .type = RUNNER_TYPE_BF16,
    .name = "BF16",
    .block_size = 1,
    .type_size = 2,
    .vec_dot_type = RUNNER_TYPE_BF16,
    .to_float = runner_to_float_bf16,
    .from_float_ref = runner_from_float_bf16_scalar,
    .from_float = {runner_from_float_bf16_scalar, X86(runner_from_float_bf16_avx2), X86(runner_from_float_bf16_avx512)},
    .vec_dot = {runner_vec_dot_bf16_scalar, X86(runner_vec_dot_bf16_avx2), X86(runner_vec_dot_bf16_avx512)},
    .vec_dot_tile = {NULL, NULL, X86(runner_vec_dot_tile_bf16_avx512)},
    .vec_dot_tile_few = {NULL, NULL, X86(runner_vec_dot_tile_few_bf16_avx512)},
    .tile_rows = {0, 0, 2},
    .tile_cols = {0, 0, 3},
    .needs = {0, NEEDS_AVX2, NEEDS_AVX512},
    .from_float_needs = {0, NEEDS_AVX2, NEEDS_AVX512},
};

/* In type-id order. */
static const runner_type_traits *const all_types[] = {
    &type_f32, &type_f16, &type_q4_0, &type_q4_1, &type_q5_0, &type_q5_1, &type_q8_0, &type_q8_1, &type_q2_K, &type_q3_K, &type_q4_K, &type_q5_K, &type_q6_K, &type_q8_K, &type_iq4_nl, &type_bf16, &type_mxfp4,
};

#define TYPE_COUNT ((int32_t)(sizeof all_types / sizeof all_types[0]))

const runner_type_traits *runner_type_traits_get(int32_t type) {
    for (int32_t i = 0; i < TYPE_COUNT; i++) {
        if (all_types[i]->type == type) return all_types[i];
    }
    return NULL;
}

const runner_type_traits *const *runner_type_traits_all(int32_t *count) {
    if (count) *count = TYPE_COUNT;
    return all_types;
}

static const char *const variant_names[RUNNER_KERNEL_COUNT] = {"scalar", "avx2", "avx512"};

const char *runner_kernel_variant_name(int variant) {
    if (variant < 0 || variant >= RUNNER_KERNEL_COUNT) return NULL;
    return variant_names[variant];
}

static int has_all(runner_cpu_mask cpu, runner_cpu_mask needs) {
    return (cpu & needs) == needs;
}

int runner_kernel_vec_dot_usable(const runner_type_traits *t, runner_kernel_variant v, runner_cpu_mask cpu) {
    if (!t || (unsigned)v >= (unsigned)RUNNER_KERNEL_COUNT) return 0;
    return t->vec_dot[v] != NULL && has_all(cpu, t->needs[v]);
}

int runner_kernel_from_float_usable(const runner_type_traits *t, runner_kernel_variant v, runner_cpu_mask cpu) {
    if (!t || (unsigned)v >= (unsigned)RUNNER_KERNEL_COUNT) return 0;
    return t->from_float[v] != NULL && has_all(cpu, t->from_float_needs[v]);
}

/* Variants are listed slowest first, so the fastest usable one is the last usable one. */
runner_kernel_variant runner_kernel_pick_vec_dot(const runner_type_traits *t, runner_cpu_mask cpu) {
    for (int v = RUNNER_KERNEL_COUNT - 1; v > RUNNER_KERNEL_SCALAR; v--) {
        if (runner_kernel_vec_dot_usable(t, (runner_kernel_variant)v, cpu)) return (runner_kernel_variant)v;
    }
    return RUNNER_KERNEL_SCALAR;
}

runner_kernel_variant runner_kernel_pick_from_float(const runner_type_traits *t, runner_cpu_mask cpu) {
    for (int v = RUNNER_KERNEL_COUNT - 1; v > RUNNER_KERNEL_SCALAR; v--) {
        if (runner_kernel_from_float_usable(t, (runner_kernel_variant)v, cpu)) return (runner_kernel_variant)v;
    }
    return RUNNER_KERNEL_SCALAR;
}

void runner_vec_dot_rows(const runner_type_traits *t, runner_kernel_variant v, int64_t n, float *s, const void *x, size_t bx,
                         int64_t nrows, const void *y) {
    const uint8_t *rows = x;
    int64_t r = 0;
    if (t->vec_dot2[v] && nrows >= 2) {
        /* Pair row r with row r + half, not with r + 1: two long sequential streams keep the hardware
         * prefetcher ahead, while pairs of neighbours read 2-3 KiB runs that each start cold (Q4_0 on
         * Zen 4: 111 ns/row streamed from memory this way, 297 with neighbours, 128 one row at a time). */
        const int64_t half = nrows / 2;
        for (; r < half; r++) {
            float pair[2];
            t->vec_dot2[v](n, pair, rows + (size_t)r * bx, (size_t)half * bx, y);
            s[r] = pair[0];
            s[r + half] = pair[1];
        }
        r = 2 * half;
    }
    for (; r < nrows; r++) t->vec_dot[v](n, s + r, rows + (size_t)r * bx, y);
}

void runner_vec_dot_rows_packed(const runner_type_traits *t, runner_kernel_variant v, int64_t n, float *s, const void *x, size_t bx,
                                int64_t nrows, const void *y, const void *yp) {
    if (!yp || !t->vec_dot_mv[v] || !t->vec_dot2_mv[v]) {
        runner_vec_dot_rows(t, v, n, s, x, bx, nrows, y);
        return;
    }
    /* rows r and r + half, as runner_vec_dot_rows pairs them */
    const uint8_t *rows = x;
    const int64_t half = nrows / 2;
    for (int64_t r = 0; r < half; r++) {
        float pair[2];
        t->vec_dot2_mv[v](n, pair, rows + (size_t)r * bx, (size_t)half * bx, yp);
        s[r] = pair[0];
        s[r + half] = pair[1];
    }
    if (nrows % 2) t->vec_dot_mv[v](n, &s[nrows - 1], rows + (size_t)(nrows - 1) * bx, yp);
}

int runner_type_row_bytes(const runner_type_traits *t, int64_t n, size_t *bytes) {
    if (!t || n < 0 || n % t->block_size != 0) return -1;
    const uint64_t blocks = (uint64_t)(n / t->block_size);
    if (blocks != 0 && (uint64_t)t->type_size > (uint64_t)SIZE_MAX / blocks) return -2;
    if (bytes) *bytes = (size_t)(blocks * (uint64_t)t->type_size);
    return 0;
}

runner_round_f16_fn runner_round_f16_variant(runner_kernel_variant v) {
    static const runner_round_f16_fn fns[RUNNER_KERNEL_COUNT] = {runner_round_f16_scalar, X86(runner_round_f16_avx2), NULL};
    return (int)v < 0 || v >= RUNNER_KERNEL_COUNT ? NULL : fns[v];
}

runner_round_f16_fn runner_round_f16_pick(runner_cpu_mask cpu) {
    const runner_round_f16_fn avx2 = runner_round_f16_variant(RUNNER_KERNEL_AVX2);
    return avx2 && (cpu & NEEDS_AVX2) == NEEDS_AVX2 ? avx2 : runner_round_f16_scalar;
}
