/*
 * Run-time CPU feature detection. Kernels pick their SIMD variant from this mask
 * once at load; nothing here depends on the flags this file was compiled with.
 *
 * x86: a feature counts only when the CPU has it (cpuid) AND the OS saves the
 * register state it uses (XCR0 via xgetbv); otherwise the first instruction
 * would fault. This is also the rule Linux applies before listing a flag in
 * /proc/cpuinfo, which is what test/native/cpu-features.test.ts compares against.
 */
#include "runner.h"

#include <stddef.h>

/* Indexed by runner_cpu_feature; the addon exports these names as object keys. */
static const char *const feature_names[RUNNER_CPU_FEATURE_COUNT] = {
    [RUNNER_CPU_SSE4_2] = "sse4_2",
    [RUNNER_CPU_AVX2] = "avx2",
    [RUNNER_CPU_FMA] = "fma",
    [RUNNER_CPU_F16C] = "f16c",
    [RUNNER_CPU_AVX512F] = "avx512f",
    [RUNNER_CPU_AVX512BW] = "avx512bw",
    [RUNNER_CPU_AVX512VL] = "avx512vl",
    [RUNNER_CPU_AVX512_VNNI] = "avx512_vnni",
    [RUNNER_CPU_AVX_VNNI] = "avx_vnni",
    [RUNNER_CPU_AMX] = "amx",
    [RUNNER_CPU_AMX_INT8] = "amx_int8",
    [RUNNER_CPU_AMX_BF16] = "amx_bf16",
    [RUNNER_CPU_NEON] = "neon",
};

const char *runner_cpu_feature_name(int feature) {
    if (feature < 0 || feature >= RUNNER_CPU_FEATURE_COUNT) return NULL;
    return feature_names[feature];
}

static runner_cpu_mask bit_if(int present, runner_cpu_feature feature) {
    return present ? ((runner_cpu_mask)1 << (unsigned)feature) : 0;
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* XCR0 state components (Intel SDM vol. 1, 13.1). */
#define XCR0_SSE_AVX ((uint64_t)0x6)          /* bit 1 XMM, bit 2 YMM upper halves */
#define XCR0_AVX512 ((uint64_t)0xE0)          /* bit 5 opmask, 6 ZMM_Hi256, 7 Hi16_ZMM */
#define XCR0_AMX ((uint64_t)((1u << 17) | (1u << 18))) /* XTILECFG, XTILEDATA */

typedef struct cpuid_regs {
    unsigned eax, ebx, ecx, edx;
} cpuid_regs;

/* Leaves above the CPU's maximum read as zero, i.e. "feature absent". */
static cpuid_regs cpuid_leaf(unsigned leaf, unsigned subleaf) {
    cpuid_regs r = {0, 0, 0, 0};
    if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) {
        r.eax = r.ebx = r.ecx = r.edx = 0;
    }
    return r;
}

/* Only valid when CPUID.1:ECX.OSXSAVE is set (otherwise xgetbv faults). The mnemonic
 * instead of _xgetbv() keeps this file free of -mxsave. */
static uint64_t read_xcr0(void) {
    unsigned lo = 0, hi = 0;
    __asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    return ((uint64_t)hi << 32) | lo;
}

static int has_bit(unsigned reg, unsigned bit) {
    return (reg >> bit) & 1u;
}

runner_cpu_mask runner_cpu_features(void) {
    const cpuid_regs l1 = cpuid_leaf(1, 0);
    const cpuid_regs l7 = cpuid_leaf(7, 0);
    /* Subleaf 1 exists only when leaf 7 subleaf 0 reports a max subleaf >= 1. */
    const cpuid_regs l7s1 = l7.eax >= 1 ? cpuid_leaf(7, 1) : (cpuid_regs){0, 0, 0, 0};

    const int osxsave = has_bit(l1.ecx, 27);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const int os_avx = (xcr0 & XCR0_SSE_AVX) == XCR0_SSE_AVX;
    const int os_avx512 = os_avx && (xcr0 & XCR0_AVX512) == XCR0_AVX512;
    const int os_amx = (xcr0 & XCR0_AMX) == XCR0_AMX;

    /* VEX-encoded extensions (FMA, F16C, AVX2, AVX-VNNI) need AVX itself and its OS state. */
    const int avx = os_avx && has_bit(l1.ecx, 28);
    const int avx512f = os_avx512 && has_bit(l7.ebx, 16);
    const int amx_tile = os_amx && has_bit(l7.edx, 24);

    runner_cpu_mask mask = 0;
    mask |= bit_if(has_bit(l1.ecx, 20), RUNNER_CPU_SSE4_2);
    mask |= bit_if(avx && has_bit(l1.ecx, 12), RUNNER_CPU_FMA);
    mask |= bit_if(avx && has_bit(l1.ecx, 29), RUNNER_CPU_F16C);
    mask |= bit_if(avx && has_bit(l7.ebx, 5), RUNNER_CPU_AVX2);
    mask |= bit_if(avx512f, RUNNER_CPU_AVX512F);
    mask |= bit_if(avx512f && has_bit(l7.ebx, 30), RUNNER_CPU_AVX512BW);
    mask |= bit_if(avx512f && has_bit(l7.ebx, 31), RUNNER_CPU_AVX512VL);
    mask |= bit_if(avx512f && has_bit(l7.ecx, 11), RUNNER_CPU_AVX512_VNNI);
    mask |= bit_if(avx && has_bit(l7s1.eax, 4), RUNNER_CPU_AVX_VNNI);
    mask |= bit_if(amx_tile, RUNNER_CPU_AMX);
    mask |= bit_if(amx_tile && has_bit(l7.edx, 25), RUNNER_CPU_AMX_INT8);
    mask |= bit_if(amx_tile && has_bit(l7.edx, 22), RUNNER_CPU_AMX_BF16);
    return mask;
}

#elif defined(__aarch64__) || defined(_M_ARM64)

/* Advanced SIMD is mandatory in AArch64 (Arm ARM A1.5), so no probe is needed. */
runner_cpu_mask runner_cpu_features(void) {
    return bit_if(1, RUNNER_CPU_NEON);
}

#else

/* Unknown architecture or compiler: report nothing, so only scalar kernels run. */
runner_cpu_mask runner_cpu_features(void) {
    (void)bit_if; /* only the probing branches use it */
    return 0;
}

#endif
