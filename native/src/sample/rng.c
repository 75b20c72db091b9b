/* rng.c: SplitMix64-seeded xoshiro256**; the algorithm is spelled out in rng.h. */
#include "sample/rng.h"

uint64_t runner_splitmix64_next(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void runner_rng_seed(runner_rng *rng, uint64_t seed) {
    uint64_t sm = seed;
    for (int i = 0; i < 4; ++i) rng->s[i] = runner_splitmix64_next(&sm);
}

static uint64_t rotl64(uint64_t x, unsigned k) {
    return (x << k) | (x >> (64u - k));
}

uint64_t runner_rng_next(runner_rng *rng) {
    uint64_t *s = rng->s;
    const uint64_t result = rotl64(s[1] * 5u, 7) * 9u;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

double runner_rng_uniform(runner_rng *rng) {
    /* 0x1.0p-53 written as a product of exact constants to stay within C11 without hex floats. */
    return (double)(runner_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}
