/* The gated FFN's activations: SiLU, and ggml's GELU through its F16 table. */
#include "ops/activation.h"

#include <math.h>
#include <pthread.h>

#include "quant/quant.h"

static float silu(float x) {
    return x / (1.0f + expf(-x));
}

/* ggml's CPU GELU (GGML_GELU_FP16, on in every ggml CPU build): the tanh form evaluated once per
 * F16 value into a table of F16 results; the input is rounded to F16 to index it. */
static uint16_t gelu_table[1 << 16];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static float gelu_f32(float x) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

static void gelu_table_fill(void) {
    for (uint32_t i = 0; i < (1u << 16); i++) gelu_table[i] = runner_fp32_to_fp16(gelu_f32(runner_fp16_to_fp32((uint16_t)i)));
}

void runner_gelu_table_init(void) {
    pthread_once(&gelu_once, gelu_table_fill);
}

/* gelu(x) * g as ggml_vec_geglu_f32: 0 below -10, x above 10, else the table. */
static float geglu(float x, float g) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x * g;
    return runner_fp16_to_fp32(gelu_table[runner_fp32_to_fp16(x)]) * g;
}

void runner_gated_act_row(int32_t act, float *g, const float *u, int64_t n) {
    if (act == RUNNER_FFN_GELU)
        for (int64_t i = 0; i < n; i++) g[i] = geglu(g[i], u[i]);
    else
        for (int64_t i = 0; i < n; i++) g[i] = silu(g[i]) * u[i];
}
