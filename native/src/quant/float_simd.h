/*
 * Shared by float_avx2.c and float_avx512.c (both compiled with AVX2 enabled): the one SIMD form of
 * float.c's canonical lane tree, and the F16 load, so the two variants cannot drift apart.
 */
#ifndef RUNNER_FLOAT_SIMD_H
#define RUNNER_FLOAT_SIMD_H

#include <immintrin.h>
#include <stdint.h>

/* Canonical tree over eight ymm accumulators (lanes 0..63): w = 32, 16, 8 across registers, then 4, 2, 1. */
static inline float reduce_lanes_8x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
    a0 = _mm256_add_ps(a0, a4); /* w = 32 */
    a1 = _mm256_add_ps(a1, a5);
    a2 = _mm256_add_ps(a2, a6);
    a3 = _mm256_add_ps(a3, a7);
    a0 = _mm256_add_ps(a0, a2); /* w = 16 */
    a1 = _mm256_add_ps(a1, a3);
    a0 = _mm256_add_ps(a0, a1); /* w = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1)); /* w = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));                                           /* w = 2 */
    v = _mm_add_ss(v, _mm_movehdup_ps(v));                                            /* w = 1 */
    return _mm_cvtss_f32(v);
}

static inline __m256 load_f16x8(const uint8_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

#endif
