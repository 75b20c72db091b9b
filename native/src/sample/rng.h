/*
 * rng.h: the sampler's random number generator. Fixed and documented (docs/sampling.md) so that
 * anyone can reproduce a draw from a seed with a few lines of code in any language:
 *
 *   SplitMix64 (Vigna's splitmix64.c): state z0 = seed; each output:
 *       z += 0x9E3779B97F4A7C15; x = z;
 *       x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9;
 *       x = (x ^ (x >> 27)) * 0x94D049BB133111EB;
 *       return x ^ (x >> 31);                        (all arithmetic mod 2^64)
 *   xoshiro256** (Blackman & Vigna, xoshiro256starstar.c): s[0..3] = the first four SplitMix64
 *       outputs for the seed; each output:
 *       r = rotl(s1 * 5, 7) * 9; t = s1 << 17;
 *       s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 45); return r;
 *   uniform = (next() >> 11) * 2^-53, a double in [0, 1) with 53 random bits.
 *
 * Every 64-bit seed is valid, 0 included: SplitMix64's output function is a bijection of its
 * counter, so four consecutive outputs are never all zero (xoshiro's one forbidden state).
 */
#ifndef RUNNER_SAMPLE_RNG_H
#define RUNNER_SAMPLE_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct runner_rng {
    uint64_t s[4];
} runner_rng;

/* One SplitMix64 step: advances *state and returns the output. */
uint64_t runner_splitmix64_next(uint64_t *state);

/* Seed xoshiro256** from a 64-bit seed through SplitMix64 (see above). */
void runner_rng_seed(runner_rng *rng, uint64_t seed);

/* Next raw 64-bit xoshiro256** output. */
uint64_t runner_rng_next(runner_rng *rng);

/* (next() >> 11) * 2^-53: uniform in [0, 1). */
double runner_rng_uniform(runner_rng *rng);

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_SAMPLE_RNG_H */
