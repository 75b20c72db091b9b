/*
 * runner.h: the engine's whole C API (C11). The Node addon (native/addon/) calls
 * nothing else, so everything the TypeScript side can reach is declared here.
 *
 * Conventions every later addition follows:
 *  - Plain C types only: fixed-width integers, const char *, opaque handles.
 *  - Functions never abort, exit or print; failures come back as a status code
 *    plus a message naming the thing that was refused (ARCHITECTURE.md, rules 7 and 13).
 *  - Bump RUNNER_ABI_VERSION whenever a declaration here changes meaning, and the
 *    matching constant in src/lib/engine/addon.ts, so a stale build is refused by name.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------ */

/* Version of this C API; the TypeScript loader refuses an addon built against another. */
#define RUNNER_ABI_VERSION 1

/* The package version (package.json "version", injected by CMake), e.g. "0.1.0". Static storage. */
const char *runner_version(void);

/* RUNNER_ABI_VERSION as compiled into this build. */
int runner_abi_version(void);

/* ---- CPU features -------------------------------------------------------- */

/*
 * Instruction-set features the kernels may dispatch on. Detected at run time
 * (cpuid plus the OS's XCR0 state on x86), never assumed from compile flags.
 * Each value is a bit index into the mask that runner_cpu_features() returns;
 * runner_cpu_feature_name() gives the stable snake_case name the addon exports.
 * Append new features before RUNNER_CPU_FEATURE_COUNT; never renumber.
 */
typedef enum runner_cpu_feature {
    RUNNER_CPU_SSE4_2 = 0,
    RUNNER_CPU_AVX2,
    RUNNER_CPU_FMA,
    RUNNER_CPU_F16C,
    RUNNER_CPU_AVX512F,
    RUNNER_CPU_AVX512BW,
    RUNNER_CPU_AVX512VL,
    RUNNER_CPU_AVX512_VNNI,
    RUNNER_CPU_AVX_VNNI,
    RUNNER_CPU_AMX, /* AMX-TILE: tile registers usable (CPU and OS state) */
    RUNNER_CPU_AMX_INT8,
    RUNNER_CPU_AMX_BF16,
    RUNNER_CPU_NEON,
    RUNNER_CPU_FEATURE_COUNT
} runner_cpu_feature;

typedef uint64_t runner_cpu_mask;

/*
 * Bit i set <=> feature i is usable by this process. On Linux, AMX additionally
 * needs a one-time arch_prctl(ARCH_REQ_XCOMP_PERM) before the first tile
 * instruction; this call reports CPU+OS support and requests nothing.
 */
runner_cpu_mask runner_cpu_features(void);

/* Stable name of a feature ("sse4_2", "avx512_vnni", ...), or NULL when out of range. */
const char *runner_cpu_feature_name(int feature);

static inline int runner_cpu_has(runner_cpu_mask mask, runner_cpu_feature feature) {
    return (unsigned)feature < (unsigned)RUNNER_CPU_FEATURE_COUNT && ((mask >> (unsigned)feature) & 1u) != 0;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RUNNER_H */
