/* Rotary position embeddings (ops/rope.c). */
#ifndef RUNNER_OPS_ROPE_H
#define RUNNER_OPS_ROPE_H

#include <stdint.h>

/* Rotate the first n_rot values of each of n_heads heads of x by the angles of one position
 * (cs, sn: n_rot / 2 each); neox pairs i with i + n_rot/2, else 2i with 2i + 1. */
void runner_rope_row(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int neox, const float *cs, const float *sn);

/* The angles of one position (any, negative too: a K-shift ropes cached keys by -n_discard, as
 * llama.cpp's does), as ggml_rope_cache_init forms them: cs, sn get n_rot / 2 each. */
void runner_rope_angles(float *cs, float *sn, int32_t pos, int32_t n_rot, float base, float freq_scale, const float *factors,
                        float mscale);

/* ggml's rope angles for positions [0, n_pos): theta_i = p * base^(-2i/n_rot), formed by repeated
 * multiplication in float (ggml_rope_cache_init), divided by factors[i] (longrope; NULL: none), times
 * freq_scale; cos and sin times mscale. cos_out and sin_out: [n_pos][n_rot / 2]. */
void runner_rope_cache_fill(float *cos_out, float *sin_out, int32_t n_pos, int32_t n_rot, float base, float freq_scale,
                            const float *factors, float mscale);

#endif
