#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>

int runner_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

void *runner_alloc_array(size_t count, size_t elem) {
    size_t bytes;
    if (!runner_mul_ok(count, elem, &bytes) || bytes == 0) return NULL;
    size_t padded = (bytes + 63) & ~(size_t)63;
    if (padded < bytes) return NULL;
    return aligned_alloc(64, padded);
}
