/* Rotary position embeddings (ops/rope.c). */
#ifndef RUNNER_OPS_ROPE_H
#define RUNNER_OPS_ROPE_H

#include <stdint.h>

/* Rotate the first n_rot values of each of n_heads heads of x by the angles of one position
 * (cs, sn: n_rot / 2 each); neox pairs i with i + n_rot/2, else 2i with 2i + 1. */
void runner_rope_row(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int neox, const float *cs, const float *sn);

/* YaRN's part of a rope cache (ggml's rope_yarn): ext_factor 0 is plain interpolation by freq_scale. */
typedef struct runner_rope_yarn {
    float ext_factor; /* how far dimensions below the ramp move back to their extrapolated (unscaled) angle */
    float corr_low;   /* ramp: dimension pairs i < corr_low keep the extrapolated angle, */
    float corr_high;  /* i > corr_high the interpolated one, linear in between */
} runner_rope_yarn;

/* ggml_rope_yarn_corr_dims: the ramp's ends for a context of n_ctx_orig positions, the dimension pairs
 * whose wavelength turns beta_fast (low end) and beta_slow (high end) times in it, clamped to [0, n_rot - 1]. */
runner_rope_yarn runner_rope_yarn_params(int32_t n_rot, int32_t n_ctx_orig, float base, float ext_factor, float beta_fast, float beta_slow);

/* The angles of one position (any, negative too: a K-shift ropes cached keys by -n_discard, as
 * llama.cpp's does), as ggml_rope_cache_init forms them, with YaRN's ramp when `yarn` is given
 * (NULL or ext_factor 0: none): cs, sn get n_rot / 2 each. */
void runner_rope_angles(float *cs, float *sn, int32_t pos, int32_t n_rot, float base, float freq_scale, const float *factors,
                        float mscale, const runner_rope_yarn *yarn);

/* ggml's rope angles for positions [0, n_pos): theta_i = p * base^(-2i/n_rot), formed by repeated
 * multiplication in float (ggml_rope_cache_init), divided by factors[i] (longrope; NULL: none), times
 * freq_scale; with yarn (NULL: none; or ext_factor 0) mixed per dimension with the unscaled angle and
 * mscale times 1 + 0.1 ln(1 / freq_scale), as ggml's rope_yarn does; cos and sin times mscale.
 * cos_out and sin_out: [n_pos][n_rot / 2]. */
void runner_rope_cache_fill(float *cos_out, float *sin_out, int32_t n_pos, int32_t n_rot, float base, float freq_scale,
                            const float *factors, float mscale, const runner_rope_yarn *yarn);

#endif
