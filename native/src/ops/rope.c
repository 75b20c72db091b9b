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

/* ggml_rope_yarn_corr_dim, in float as ggml forms it: the pair index whose wavelength fits n_ctx_orig / beta times. */
static float yarn_corr_dim(int32_t n_rot, int32_t n_ctx_orig, float beta, float base) {
    const float two_pi = 2.0f * 3.14159265358979323846f;
    return (float)n_rot * logf((float)n_ctx_orig / (beta * two_pi)) / (2.0f * logf(base));
}

runner_rope_yarn runner_rope_yarn_params(int32_t n_rot, int32_t n_ctx_orig, float base, float ext_factor, float beta_fast, float beta_slow) {
    const float lo = floorf(yarn_corr_dim(n_rot, n_ctx_orig, beta_fast, base));
    const float hi = ceilf(yarn_corr_dim(n_rot, n_ctx_orig, beta_slow, base));
    runner_rope_yarn y = {ext_factor, lo > 0.0f ? lo : 0.0f, hi < (float)(n_rot - 1) ? hi : (float)(n_rot - 1)};
    return y;
}

/* 1 at pair i <= low, 0 at i >= high, linear between (ggml's rope_yarn_ramp; a zero-width ramp is 0.001 wide). */
static float yarn_ramp(const runner_rope_yarn *y, int32_t i) {
    const float width = y->corr_high - y->corr_low > 0.001f ? y->corr_high - y->corr_low : 0.001f;
    const float t = ((float)i - y->corr_low) / width;
    return 1.0f - (t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t);
}

void runner_rope_angles(float *cs, float *sn, int32_t pos, int32_t n_rot, float base, float freq_scale, const float *factors,
                        float mscale, const runner_rope_yarn *yarn) {
    const int32_t half = n_rot / 2;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const int mix = yarn && yarn->ext_factor != 0.0f;
    /* YaRN's magnitude correction for the interpolated angles, as ggml applies it inside the op. */
    const float ms = mix ? mscale * (1.0f + 0.1f * logf(1.0f / freq_scale)) : mscale;
    float theta = (float)pos;
    for (int32_t i = 0; i < half; i++) {
        const float extrap = factors ? theta / factors[i] : theta;
        const float interp = freq_scale * extrap;
        float t = interp;
        if (mix) {
            const float r = yarn_ramp(yarn, i) * yarn->ext_factor;
            t = interp * (1.0f - r) + extrap * r;
        }
        cs[i] = cosf(t) * ms;
        sn[i] = sinf(t) * ms;
        theta *= theta_scale;
    }
}

void runner_rope_cache_fill(float *cos_out, float *sin_out, int32_t n_pos, int32_t n_rot, float base, float freq_scale,
                            const float *factors, float mscale, const runner_rope_yarn *yarn) {
    const size_t half = (size_t)(n_rot / 2);
    for (int32_t p = 0; p < n_pos; p++)
        runner_rope_angles(cos_out + (size_t)p * half, sin_out + (size_t)p * half, p, n_rot, base, freq_scale, factors, mscale, yarn);
}
