/* Rotary position embeddings: the per-context angle cache and the rotation of a row. */
#include "ops/rope.h"

#include <math.h>
#include <stddef.h>

void runner_rope_row(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int neox, const float *cs,
                     const float *sn) {
    const int32_t half = n_rot / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int32_t i = 0; i < half; i++) {
            const int32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
            const float x0 = v[a], x1 = v[b];
            v[a] = x0 * cs[i] - x1 * sn[i];
            v[b] = x0 * sn[i] + x1 * cs[i];
        }
    }
}

void runner_rope_angles(float *cs, float *sn, int32_t pos, int32_t n_rot, float base, float freq_scale, const float *factors,
                        float mscale) {
    const int32_t half = n_rot / 2;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int32_t i = 0; i < half; i++) {
        const float t = freq_scale * (factors ? theta / factors[i] : theta);
        cs[i] = cosf(t) * mscale;
        sn[i] = sinf(t) * mscale;
        theta *= theta_scale;
    }
}

void runner_rope_cache_fill(float *cos_out, float *sin_out, int32_t n_pos, int32_t n_rot, float base, float freq_scale,
                            const float *factors, float mscale) {
    const size_t half = (size_t)(n_rot / 2);
    for (int32_t p = 0; p < n_pos; p++)
        runner_rope_angles(cos_out + (size_t)p * half, sin_out + (size_t)p * half, p, n_rot, base, freq_scale, factors, mscale);
}
