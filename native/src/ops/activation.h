/* The gated FFN's activations (ops/activation.c). */
#ifndef RUNNER_OPS_ACTIVATION_H
#define RUNNER_OPS_ACTIVATION_H

#include <stdint.h>

/* Fill ggml's F16 GELU table once per process (thread-safe); models with RUNNER_FFN_GELU call it at load. */
void runner_gelu_table_init(void);

/* g[i] = act(g[i]) * u[i] over n values: act is RUNNER_FFN_SILU (x / (1 + e^-x)) or RUNNER_FFN_GELU
 * (ggml's table: 0 below -10, x above 10). */
void runner_gated_act_row(int32_t act, float *g, const float *u, int64_t n);

#endif
