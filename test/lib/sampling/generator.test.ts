/**
 * The sampler's generator (native/src/sample/rng.c), checked against outside facts:
 *  - SplitMix64's published outputs for seed 1234567 (Rosetta Code "Pseudo-random numbers/Splitmix64":
 *    6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431,
 *    16408922859458223821);
 *  - xoshiro256**'s reference outputs for the state {1, 2, 3, 4} (xoshiro256starstar.c, as quoted by
 *    rand_xoshiro's tests: 11520, 0, 1509978240, 1215971899390074240, 1216172134540287360,
 *    607988272756665600);
 *  - an independent BigInt implementation of the algorithm as docs/sampling.md writes it, for the
 *    seeded stream and for the token the sampler draws with it.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'

import {createNativeSampler} from '../../../src/lib/engine/index.js'
import {loadTestAddon} from '../../../src/lib/engine/test-addon.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'

const M64 = (1n << 64n) - 1n

function splitmix64(seed: bigint): () => bigint {
  let z = seed
  return () => {
    z = (z + 0x9e3779b97f4a7c15n) & M64
    let x = z
    x = ((x ^ (x >> 30n)) * 0xbf58476d1ce4e5b9n) & M64
    x = ((x ^ (x >> 27n)) * 0x94d049bb133111ebn) & M64
    return x ^ (x >> 31n)
  }
}

const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (64n - k))) & M64

function xoshiro256ss(state: readonly bigint[]): () => bigint {
  const s = [...state]
  return () => {
    const [s0, s1, s2, s3] = s as [bigint, bigint, bigint, bigint]
    const result = (rotl((s1 * 5n) & M64, 7n) * 9n) & M64
    const t = (s1 << 17n) & M64
    let n2 = s2 ^ s0
    let n3 = s3 ^ s1
    const n1 = s1 ^ n2
    const n0 = s0 ^ n3
    n2 ^= t
    n3 = rotl(n3, 45n)
    s[0] = n0
    s[1] = n1
    s[2] = n2
    s[3] = n3
    return result
  }
}

/** The documented generator: xoshiro256** seeded with the first four SplitMix64 outputs. */
function generator(seed: bigint): () => bigint {
  const sm = splitmix64(seed)
  return xoshiro256ss([sm(), sm(), sm(), sm()])
}

describe('sampler generator', () => {
  const addon = loadTestAddon()

  it('SplitMix64 gives the published outputs for seed 1234567 (Rosetta Code)', () => {
    const want = [6457827717110365317n, 3203168211198807973n, 9817491932198370423n, 4593380528125082431n, 16408922859458223821n]
    assert.deepEqual([...addon.samplerTestSplitMix64(1234567n, 5)], want)
    const ours = splitmix64(1234567n)
    assert.deepEqual(
      want.map(() => ours()),
      want,
      'the test implementation agrees with the published vector too',
    )
  })

  it('xoshiro256** gives the reference outputs for state {1, 2, 3, 4}', () => {
    const want = [11520n, 0n, 1509978240n, 1215971899390074240n, 1216172134540287360n, 607988272756665600n]
    assert.deepEqual([...addon.samplerTestXoshiro256ss([1n, 2n, 3n, 4n], 6)], want)
    const ours = xoshiro256ss([1n, 2n, 3n, 4n])
    assert.deepEqual(
      want.map(() => ours()),
      want,
    )
  })

  it('the seeded stream equals the documented composition for several seeds, 0 and 2^64-1 included', () => {
    for (const seed of [0n, 1n, 42n, 1234567n, M64]) {
      const ours = generator(seed)
      const want = Array.from({length: 64}, () => ours())
      assert.deepEqual([...addon.samplerTestGenerator(seed, 64)], want, `seed ${seed}`)
    }
  })

  it('a draw equals the documented rule: u = (next >> 11) * 2^-53, first id whose running weight sum exceeds u * total', () => {
    const logits = Float32Array.from([0.3, -1.2, 2.0, 0.0, 1.1, -0.4, 0.9, 1.7])
    const temperature = 0.7
    for (const seed of [0n, 7n, 987654321987654321n]) {
      const opts = resolveSamplingOptions({seed, temperature, topK: 0, topP: 1, minP: 0})
      const sampler = createNativeSampler(opts, logits.length)
      const next = generator(seed)
      const lmax = Math.max(...logits)
      // The sampler holds the temperature as a float32 and divides in double.
      const w = [...logits].map((l) => Math.exp((l - lmax) / Math.fround(temperature)))
      const total = w.reduce((a, b) => a + b, 0)
      try {
        for (let i = 0; i < 500; i++) {
          const u = Number(next() >> 11n) * 2 ** -53
          let run = 0
          let want = -1
          for (let j = 0; j < w.length; j++) {
            run += w[j]!
            if (run > u * total) {
              want = j
              break
            }
          }
          assert.equal(sampler.sample(logits).token, want, `seed ${seed}, draw ${i}`)
        }
      } finally {
        sampler.dispose()
      }
    }
  })
})
