#include "core/cpu_cap.h"

#include <stdlib.h>
#include <string.h>

#define BIT(f) ((runner_cpu_mask)1 << (unsigned)(f))

runner_cpu_mask runner_cpu_features_capped(void) {
    const runner_cpu_mask probed = runner_cpu_features();
    const char *cap = getenv("RUNNER_CPU_MAX");
    if (!cap || !*cap || strcmp(cap, "avx512") == 0) return probed;
    if (strcmp(cap, "scalar") == 0) return 0;
    if (strcmp(cap, "avx2") == 0) {
        const runner_cpu_mask above = BIT(RUNNER_CPU_AVX512F) | BIT(RUNNER_CPU_AVX512BW) | BIT(RUNNER_CPU_AVX512VL) |
                                      BIT(RUNNER_CPU_AVX512_VNNI) | BIT(RUNNER_CPU_AMX) | BIT(RUNNER_CPU_AMX_INT8) |
                                      BIT(RUNNER_CPU_AMX_BF16);
        return probed & ~above;
    }
    return probed; /* unreachable through the addon: the loader refuses unknown values */
}
