/* The tiled attention's kernel table: which variants this build has and which one a CPU gets. Apart
 * from attn_tile.c so that the variants, which call its exp_ref, are not a dependency cycle. */
#include "ops/attn_tile.h"

#if defined(RUNNER_NO_X86_VARIANTS) || !(defined(__x86_64__) || defined(_M_X64))
#define X86(fn) NULL
#else
#define X86(fn) fn
#endif

static const runner_attn_kernels KERNELS[RUNNER_KERNEL_COUNT] = {
    {runner_attn_widen_scalar, runner_attn_scores_scalar, runner_attn_softmax_scalar, runner_attn_accum_scalar},
    {X86(runner_attn_widen_avx2), X86(runner_attn_scores_avx2), X86(runner_attn_softmax_avx2), X86(runner_attn_accum_avx2)},
    {X86(runner_attn_widen_avx512), X86(runner_attn_scores_avx512), X86(runner_attn_softmax_avx512), X86(runner_attn_accum_avx512)},
};

const runner_attn_kernels *runner_attn_kernels_variant(runner_kernel_variant v) {
    return (int)v < 0 || v >= RUNNER_KERNEL_COUNT || !KERNELS[v].scores ? NULL : &KERNELS[v];
}

#define BIT(f) ((runner_cpu_mask)1 << (unsigned)(f))
/* What each variant's file is compiled for (native/CMakeLists.txt); DQ comes with BW and VL. */
static const runner_cpu_mask NEEDS[RUNNER_KERNEL_COUNT] = {
    0,
    BIT(RUNNER_CPU_AVX2) | BIT(RUNNER_CPU_FMA) | BIT(RUNNER_CPU_F16C),
    BIT(RUNNER_CPU_AVX2) | BIT(RUNNER_CPU_FMA) | BIT(RUNNER_CPU_F16C) | BIT(RUNNER_CPU_AVX512F) | BIT(RUNNER_CPU_AVX512BW) |
        BIT(RUNNER_CPU_AVX512VL),
};

const runner_attn_kernels *runner_attn_kernels_pick(runner_cpu_mask cpu) {
    for (int v = RUNNER_KERNEL_COUNT - 1; v > 0; v--)
        if (runner_attn_kernels_variant((runner_kernel_variant)v) && (cpu & NEEDS[v]) == NEEDS[v]) return &KERNELS[v];
    return &KERNELS[RUNNER_KERNEL_SCALAR];
}
