/* RMS norms of rows, summed in double as ggml's rms_norm does. */
#include "ops/norm.h"

#include <math.h>
#include <stddef.h>

void runner_rmsnorm_row(const float *x, const float *w, float *y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] * scale) * w[i];
}

/* RMS norm of each head of a row, in place (qwen3's q/k norms): the same arithmetic as runner_rmsnorm_row. */
void runner_head_norm_row(float *x, int32_t n_heads, int32_t head_dim, const float *w, float eps) {
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        runner_rmsnorm_row(v, w, v, head_dim, eps);
    }
}
