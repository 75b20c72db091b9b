/*
 * IEEE binary16 (half) and bfloat16 <-> binary32, exact and independent of compile flags.
 *
 * fp32 -> fp16 rounds to nearest, ties to even, with subnormal halves, overflow to infinity at
 * 65520, and NaN kept quiet with its top payload bits: bit for bit what F16C's VCVTPS2PH (imm 0)
 * does, which is how ggml converts on x86 (GGML_CPU_FP32_TO_FP16) and what the SIMD variants use.
 * ggml's portable fallback differs only for NaN (it writes 0x7E00).
 *
 * fp32 -> bf16 is ggml_compute_fp32_to_bf16: round to nearest even on the top 16 bits, NaN forced
 * quiet by setting bit 6 of the result (no flush of subnormals).
 */
#include "quant/quant_impl.h"

float runner_fp16_to_fp32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13)); /* inf, NaN (payload kept) */
    if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return f32_from_bits(sign); /* +-0 */
    /* Subnormal half: normalise. value = mant * 2^-24. */
    uint32_t e = 113; /* biased fp32 exponent of 2^-14 */
    while ((mant & 0x400u) == 0) {
        mant <<= 1;
        e--;
    }
    return f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

uint16_t runner_fp32_to_fp16(float f) {
    const uint32_t x = f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN: quiet */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (and inf) round to inf */
    if (ax >= 0x38800000u) {
        /* Normal half (>= 2^-14): rebias the exponent (127 -> 15), round the 13 dropped bits to
         * nearest even; a carry out of the mantissa correctly bumps the exponent. */
        const uint32_t rebased = ax - (112u << 23);
        return (uint16_t)(sign | ((rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13));
    }
    if (ax < 0x33000000u) return sign; /* below 2^-25: rounds to zero (2^-25 itself ties to 0) */
    /* Subnormal half: the value in units of 2^-24, rounded to nearest even; rounding up to 0x400
     * gives the smallest normal, which is the right encoding. */
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (ax >> 23); /* 14..24 */
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u) != 0)) h++;
    return (uint16_t)(sign | h);
}

float runner_bf16_to_fp32(uint16_t h) {
    return f32_from_bits((uint32_t)h << 16);
}

uint16_t runner_fp32_to_bf16(float f) {
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64u); /* NaN: force quiet */
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}
