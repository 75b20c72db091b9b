// Helpers for engine tests: greedy sampling options and log-softmax in float64.
import {resolveSamplingOptions, type SamplingOptions} from '../../src/lib/sampling/index.js'

export function greedy(): SamplingOptions {
  return resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, repeatPenalty: 1, penaltyLastN: 0, seed: 0n})
}

/** log p(target) from one row of float32 logits, computed in float64 over the whole vocabulary. */
export function logprobOf(row: Float32Array, target: number): number {
  let max = -Infinity
  for (const v of row) if (v > max) max = v
  let sum = 0
  for (const v of row) sum += Math.exp(v - max)
  return row[target]! - max - Math.log(sum)
}

/** Bytes of a float array, for bitwise comparison. */
export function bits(a: Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength)
}
