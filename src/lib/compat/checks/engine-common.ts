/**
 * What the engine-agreement checks (greedy_reference, cross_engine) share: the tolerance on
 * |Δ log p| by weight type, greedy sampling, a float64 log-softmax, and the margin rule of
 * ../shared/reference/README.md for comparing greedy continuations.
 */
import {closeSync, copyFileSync, openSync, readSync, writeSync} from 'node:fs'

import {readGgufModel} from '../../gguf/index.js'
import {resolveSamplingOptions, type SamplingOptions} from '../../sampling/index.js'
import {type CheckParams, numberParam, type ParamSpec, type RosterRow} from '../types.js'

export interface Tolerances {
  /** Largest |Δ log p| allowed on one teacher-forced target; also the margin below which greedy may diverge. */
  readonly tol: number
  /** Largest mean |Δ log p| over the targets. */
  readonly meanTol: number
}

/**
 * The defaults of test/lib/engine/reference.test.ts, by the roster's weight type. F32/F16: the
 * README's "within about 1e-3" (gemma2/gemma3: a mean of 5e-4, since ggml's F16 GELU table amplifies
 * a 1-ulp difference). BF16: llama.cpp rounds activations to BF16. Quantized: llama.cpp quantizes
 * activations, which makes its output discontinuous (0.07 to 0.28 in the README). Live (cross_engine),
 * F16 gets 0.01 / 2e-3 as in test/differential/llama-cpp.test.ts: llama.cpp's F16 matmul depends on its
 * CPU backend (the reference machine's keeps F32 activations; others round them to F16, about 5e-3).
 */
export function defaultTolerances(row: RosterRow, options: {live?: boolean} = {}): Tolerances {
  const type = row.type.toUpperCase()
  if (type === 'F16' && options.live) return {tol: 0.01, meanTol: 2e-3}
  if (type === 'F32' || type === 'F16') return {tol: 1e-3, meanTol: /^gemma[23]$/.test(row.architecture) ? 5e-4 : 2e-4}
  if (type === 'BF16') return {tol: 0.05, meanTol: 0.01}
  return {tol: 0.25, meanTol: 0.05}
}

export const TOLERANCE_PARAMS: Readonly<Record<string, ParamSpec>> = {
  tolerance: {
    type: 'number',
    description:
      'largest |Δ logprob| on one teacher-forced target, and the margin below which greedy tokens may diverge (default by weight type: F32/F16 1e-3 (cross_engine F16 0.01), BF16 0.05, quantized 0.25)',
  },
  meanTolerance: {
    type: 'number',
    description:
      'largest mean |Δ logprob| (default by weight type: F32/F16 2e-4 (gemma2/gemma3 5e-4; cross_engine F16 2e-3), BF16 0.01, quantized 0.05)',
  },
}

export function tolerances(row: RosterRow, params: CheckParams, options: {live?: boolean} = {}): Tolerances {
  const d = defaultTolerances(row, options)
  return {tol: numberParam(params, 'tolerance', d.tol), meanTol: numberParam(params, 'meanTolerance', d.meanTol)}
}

/** Greedy decoding: temperature 0, no penalties, no truncation. */
export function greedySampling(): SamplingOptions {
  return resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, repeatPenalty: 1, penaltyLastN: 0, seed: 0n})
}

/** log p(target) from one row of float32 logits, in float64 over the whole vocabulary. */
export function logprobOf(row: ArrayLike<number>, target: number): number {
  let max = -Infinity
  for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!
  let sum = 0
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max)
  return row[target]! - max - Math.log(sum)
}

export interface GreedyComparison {
  /** Tokens equal before the first divergence. */
  readonly matched: number
  readonly total: number
  /** The first step where the tokens differ (ours or theirs undefined: one sequence ended there). */
  readonly divergence?: {readonly step: number; readonly ours?: number; readonly theirs?: number; readonly margin?: number}
  /** The first step at or before the divergence whose margin is below the tolerance (it excuses the divergence). */
  readonly excusedBy?: {readonly step: number; readonly margin: number}
}

/**
 * The README's margin rule: once the engine's error can exceed llama.cpp's top-1/top-2 margin,
 * another token is legitimate. A divergence is accepted only if some step up to it has a margin
 * below `tol`; before that every token must be llama.cpp's, and the lengths must agree.
 */
export function compareGreedy(
  ours: readonly number[],
  theirs: readonly number[],
  margins: readonly number[],
  tol: number,
): GreedyComparison {
  let first = 0
  while (first < theirs.length && first < ours.length && ours[first] === theirs[first]) first++
  if (first === theirs.length && first === ours.length) return {matched: first, total: theirs.length}
  const divergence = {step: first, ours: ours[first], theirs: theirs[first], margin: margins[first]}
  const low = margins.slice(0, first + 1).findIndex((m) => m < tol)
  return {matched: first, total: theirs.length, divergence, ...(low >= 0 ? {excusedBy: {step: low, margin: margins[low]!}} : {})}
}

const tok = (t: number | undefined) => (t === undefined ? 'end' : String(t))

/** "step 3: ours 410, llama.cpp 259, margin 1.2e-1" */
export function describeDivergence(c: GreedyComparison): string {
  const d = c.divergence
  if (!d) return 'no divergence'
  const margin = d.margin === undefined ? 'margin unknown' : `margin ${d.margin.toExponential(2)}`
  return `step ${d.step}: ours ${tok(d.ours)}, llama.cpp ${tok(d.theirs)}, ${margin}`
}

/** Max and mean of |Δ| over pairs of log-probabilities, and where the max is. */
export function logprobDiffs(pairs: ReadonlyArray<readonly [number, number]>): {max: number; mean: number; at: number} {
  let max = 0
  let at = 0
  let sum = 0
  pairs.forEach(([a, b], i) => {
    const d = Math.abs(a - b)
    // NaN (a non-finite logit) must not pass as small.
    if (!(d <= max)) {
      max = Number.isNaN(d) ? Infinity : d
      at = i
    }
    sum += Number.isNaN(d) ? Infinity : d
  })
  return {max, mean: pairs.length > 0 ? sum / pairs.length : 0, at}
}

export const fmt = (x: number) => (Number.isFinite(x) ? x.toExponential(2) : String(x))

/**
 * A copy of a one-file F32 model with one weight changed: the largest-magnitude element of `tensor`
 * set to `value` (a broken model for the mutation tests, and cross_engine's test-only hook). Returns
 * the element's index and its old value.
 */
export function flipWeight(src: string, dst: string, tensor = 'output.weight', value = 1e4): {index: number; old: number} {
  const info = readGgufModel(src).tensors.find((t) => t.name === tensor)
  if (!info || info.type.name !== 'F32' || info.file !== src) throw new Error(`${src} has no one-file F32 tensor ${tensor}`)
  copyFileSync(src, dst)
  const bytes = Buffer.alloc(info.byteSize)
  const fd = openSync(dst, 'r+')
  try {
    readSync(fd, bytes, 0, bytes.length, info.offset)
    const w = new Float32Array(bytes.buffer, bytes.byteOffset, info.nElements)
    let index = 0
    for (let i = 1; i < w.length; i++) if (Math.abs(w[i]!) > Math.abs(w[index]!)) index = i
    const old = w[index]!
    const out = Buffer.alloc(4)
    out.writeFloatLE(value)
    writeSync(fd, out, 0, 4, info.offset + 4 * index)
    return {index, old}
  } finally {
    closeSync(fd)
  }
}
