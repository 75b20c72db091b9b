/* Overflow-checked array sizes and the engine's aligned buffers. */
#ifndef RUNNER_CORE_ALLOC_H
#define RUNNER_CORE_ALLOC_H

#include <stddef.h>

/* *out = a * b; returns 0 (and leaves *out alone) when the product does not fit in size_t. */
int runner_mul_ok(size_t a, size_t b, size_t *out);

/* count * elem bytes, 64-byte aligned for SIMD loads, NOT zeroed; NULL on overflow, 0 bytes or no
 * memory. Free with free(). Every buffer is written before it is read, and pages never touched stay
 * unresident (a 512-token logits buffer of a 32k vocabulary is 62 MiB a decode-only run never uses). */
void *runner_alloc_array(size_t count, size_t elem);

#endif
