/**
 * A small seeded generator (SplitMix64 → xoshiro128**), so that test models are the same bytes on
 * every machine and Node version. Math.random is never used for anything that must be reproducible.
 */
export class SeededRandom {
  private s0: number
  private s1: number
  private s2: number
  private s3: number
  private spare: number | undefined

  constructor(seed: bigint) {
    let x = BigInt.asUintN(64, seed)
    const next = () => {
      x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n)
      let z = x
      z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n)
      z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn)
      return z ^ (z >> 31n)
    }
    const a = next()
    const b = next()
    this.s0 = Number(a & 0xffffffffn) | 0
    this.s1 = Number(a >> 32n) | 0
    this.s2 = Number(b & 0xffffffffn) | 0
    this.s3 = Number(b >> 32n) | 0
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1
  }

  /** Uniform 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9)
    const t = this.s1 << 9
    this.s2 ^= this.s0
    this.s3 ^= this.s1
    this.s1 ^= this.s2
    this.s0 ^= this.s3
    this.s2 ^= t
    this.s3 = rotl(this.s3, 11)
    return result >>> 0
  }

  /** Uniform in [0, 1) with 32 bits of resolution. */
  uniform(): number {
    return this.nextU32() / 4294967296
  }

  /** Standard normal (Box-Muller; pairs are cached so each call costs half a transform). */
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare
      this.spare = undefined
      return s
    }
    const u1 = (this.nextU32() + 1) / 4294967297
    const u2 = this.uniform()
    const r = Math.sqrt(-2 * Math.log(u1))
    this.spare = r * Math.sin(2 * Math.PI * u2)
    return r * Math.cos(2 * Math.PI * u2)
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k))
}

/** FNV-1a of a string, widened with a seed: independent streams per tensor name. */
export function deriveSeed(seed: bigint, name: string): bigint {
  let h = 0xcbf29ce484222325n
  for (const byte of Buffer.from(name, 'utf8')) h = BigInt.asUintN(64, (h ^ BigInt(byte)) * 0x100000001b3n)
  return BigInt.asUintN(64, h ^ BigInt.asUintN(64, seed))
}
