/*
 * Merging a LoRA pair into its weight (runner.h runner_lora_merge_rows; `runner quantize
 * --merge-lora`). The weight's rows arrive dequantized to F32 in chunks of whole rows; each row o
 * becomes w[o] + s * sum_r b[o][r] a[r], the sum over the rank in double in ascending r, added to the
 * row in double and rounded to float once. Each row is computed alone, so the bytes do not depend on
 * how the rows were chunked or which thread ran a chunk.
 */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/status.h"
#include "runner.h"

runner_status runner_lora_merge_rows(float *w, int64_t rows, int64_t n_in, const float *a, const float *b, int64_t rank, float alpha,
                                     float scale, char *err, int32_t err_len) {
    if (!w || !a || !b || rows < 0 || n_in < 1)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "lora merge: rows %lld, n_in %lld and the buffers must be given",
                           (long long)rows, (long long)n_in);
    if (rank < 1 || rank > 65536)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "lora merge: rank %lld out of range [1, 65536]", (long long)rank);
    if (!isfinite(scale) || !isfinite(alpha))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "lora merge: scale and alpha must be finite");
    /* The same s the forward pass uses (model/lora.c: llama.cpp's get_scale, in float). */
    const float s = alpha != 0.0f ? scale * alpha / (float)rank : scale;
    double *acc = runner_alloc_array((size_t)n_in, sizeof *acc);
    if (!acc) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "lora merge: no memory for a row of %lld values", (long long)n_in);
    for (int64_t o = 0; o < rows; o++) {
        for (int64_t i = 0; i < n_in; i++) acc[i] = 0.0;
        const float *bo = b + o * rank;
        for (int64_t r = 0; r < rank; r++) {
            const double br = (double)bo[r];
            const float *ar = a + r * n_in;
            for (int64_t i = 0; i < n_in; i++) acc[i] += br * (double)ar[i];
        }
        float *wo = w + o * n_in;
        for (int64_t i = 0; i < n_in; i++) wo[i] = (float)((double)wo[i] + (double)s * acc[i]);
    }
    free(acc);
    return RUNNER_OK;
}
