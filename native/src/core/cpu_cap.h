/* The CPU features the engine may use: the probed ones, capped by RUNNER_CPU_MAX. */
#ifndef RUNNER_CPU_CAP_H
#define RUNNER_CPU_CAP_H

#include "runner.h"

/*
 * RUNNER_CPU_MAX=scalar|avx2|avx512 caps the kernel level (unset: the best the CPU has). Every SIMD
 * kernel is bitwise equal to its scalar reference, so a cap changes speed, never results; receipts
 * and their tests use it to show replay is exact across feature levels. The TypeScript loader
 * refuses any other value by name before a model loads (src/lib/engine/addon.ts).
 */
runner_cpu_mask runner_cpu_features_capped(void);

#endif
