/* Row norms (ops/norm.c). */
#ifndef RUNNER_OPS_NORM_H
#define RUNNER_OPS_NORM_H

#include <stdint.h>

/* y = x / sqrt(mean(x^2) + eps) * w over n values (y may be x); the sum of squares in double. */
void runner_rmsnorm_row(const float *x, const float *w, float *y, int64_t n, float eps);
/* The same over each of n_heads heads of head_dim values, in place, with one weight w[head_dim]. */
void runner_head_norm_row(float *x, int32_t n_heads, int32_t head_dim, const float *w, float eps);

#endif
