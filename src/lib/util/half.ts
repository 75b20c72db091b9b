/**
 * IEEE half (F16) and bfloat16 conversions, bit-exact with ggml's (round to nearest, ties to even;
 * F16C's VCVTPS2PH and ggml_compute_fp32_to_bf16), so files we write hold the same bits llama.cpp's
 * converter writes.
 */
const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)

export function f32ToF16Bits(x: number): number {
  f32[0] = x
  const b = u32[0]!
  const sign = (b >>> 16) & 0x8000
  const exp = (b >>> 23) & 0xff
  const mant = b & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0)
  const e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    // Subnormal half: the value in units of 2^-24, rounded to nearest even.
    if (e < -10) return sign
    const m = mant | 0x800000
    const shift = 14 - e
    let h = m >>> shift
    const rem = m & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    if (rem > halfway || (rem === halfway && (h & 1) !== 0)) h++
    return sign | h
  }
  let h = (e << 10) | (mant >>> 13)
  const rem = mant & 0x1fff
  // A carry out of the mantissa correctly bumps the exponent (and reaches infinity at the top).
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) !== 0)) h++
  return sign | h
}

export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1
  const exp = (h >>> 10) & 0x1f
  const mant = h & 0x3ff
  if (exp === 0) return sign * mant * 2 ** -24
  if (exp === 0x1f) return mant ? NaN : sign * Infinity
  return sign * (1 + mant / 1024) * 2 ** (exp - 15)
}

export function f32ToBf16Bits(x: number): number {
  f32[0] = x
  const b = u32[0]!
  if ((b & 0x7fffffff) > 0x7f800000) return ((b >>> 16) | 64) & 0xffff // quiet the NaN, as ggml does
  return ((b + (0x7fff + ((b >>> 16) & 1))) >>> 16) & 0xffff
}

export function bf16BitsToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16
  return f32[0]!
}
