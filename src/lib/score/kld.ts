import {ExitCode, RunnerError} from '../errors.js'
import type {BaseLogits, BasePosition} from './base-logits.js'

/** Positions whose base top-1 leads its top-2 by more than this (nats) count for the qualified agreement. */
export const KLD_MARGIN = 0.5

/** Top-k of a row of log-probabilities (descending, ties by lower id), and the log of the rest. */
export function topK(row: Float32Array, lse: number, k: number): {tokens: Int32Array; logprobs: Float32Array; logRest: number} {
  const ids: number[] = []
  for (let i = 0; i < row.length; i++) {
    if (ids.length < k) {
      ids.push(i)
      if (ids.length === k) ids.sort((a, b) => row[b]! - row[a]! || a - b)
      continue
    }
    if (row[i]! <= row[ids[k - 1]!]!) continue
    let j = k - 1
    while (j > 0 && row[i]! > row[ids[j - 1]!]!) j--
    ids.splice(j, 0, i)
    ids.pop()
  }
  if (ids.length < k) ids.sort((a, b) => row[b]! - row[a]! || a - b)
  const inTop = new Set(ids)
  let rest = 0
  for (let i = 0; i < row.length; i++) if (!inTop.has(i)) rest += Math.exp(row[i]! - lse)
  return {
    tokens: Int32Array.from(ids),
    logprobs: Float32Array.from(ids, (i) => row[i]! - lse),
    logRest: Math.fround(rest > 0 ? Math.log(rest) : -Infinity),
  }
}

export function basePosition(row: Float32Array, lse: number, target: number, k: number): BasePosition {
  return {target, targetLogprob: Math.fround(row[target]! - lse), ...topK(row, lse, k)}
}

/**
 * KL(base ‖ current) over k + 1 bins: the base's top-k tokens and "everything else". Both sides'
 * log-probabilities are rounded to float32 as the file stores them, so a model against itself gives
 * exactly 0. Coarsening can only lower a KL divergence, so this is a lower bound of the full one.
 */
export function positionKld(base: BasePosition, row: Float32Array, lse: number): number {
  const inTop = new Set(base.tokens)
  let kl = 0
  for (let i = 0; i < base.tokens.length; i++) {
    const lp = base.logprobs[i]!
    const lq = Math.fround(row[base.tokens[i]!]! - lse)
    kl += Math.exp(lp) * (lp - lq)
  }
  if (base.logRest > -Infinity) {
    let rest = 0
    for (let i = 0; i < row.length; i++) if (!inTop.has(i)) rest += Math.exp(row[i]! - lse)
    const lq = Math.fround(rest > 0 ? Math.log(rest) : -Infinity)
    kl += Math.exp(base.logRest) * (base.logRest - lq)
  }
  return Math.max(0, kl)
}

export interface KldResult {
  readonly mean: number
  readonly median: number
  readonly p99: number
  readonly max: number
  readonly top1Agreement: number
  /** Agreement on positions where the base's top-1 leads its top-2 by more than KLD_MARGIN. */
  readonly top1AgreementMargin: number
  readonly marginPositions: number
  readonly basePpl: number
}

/** Checks that the base file scored the same tokens with the same windows. */
export function checkBaseMatches(
  base: BaseLogits,
  tokens: readonly number[],
  scheme: {ctx: number; stride: number; first: number},
  corpusSha256: string,
  file: string,
): void {
  const why =
    base.corpusSha256 !== corpusSha256
      ? 'it was saved on another corpus (sha256 differs)'
      : base.tokens.length !== tokens.length || base.tokens.some((t, i) => t !== tokens[i])
        ? 'it was saved on other tokens (another tokenizer)'
        : base.ctx !== scheme.ctx || base.stride !== scheme.stride || base.first !== scheme.first
          ? `its windows (ctx ${base.ctx}, stride ${base.stride}) differ from these (ctx ${scheme.ctx}, stride ${scheme.stride})`
          : undefined
  if (why) throw new RunnerError('KLD_BASE_MISMATCH', `${file}: ${why}; score the base model again on this corpus`, ExitCode.usage)
}

export function summarizeKld(klds: readonly number[], agree: readonly boolean[], base: BaseLogits): KldResult {
  const sorted = [...klds].sort((a, b) => a - b)
  const q = (f: number) => sorted[Math.min(sorted.length - 1, Math.floor(f * (sorted.length - 1) + 0.5))]!
  const margins = base.positions.map((p) => p.logprobs[0]! - p.logprobs[1]! > KLD_MARGIN)
  const marginPositions = margins.filter(Boolean).length
  const baseNll = base.positions.reduce((n, p) => n - p.targetLogprob, 0) / base.positions.length
  return {
    mean: klds.reduce((a, b) => a + b, 0) / klds.length,
    median: q(0.5),
    p99: q(0.99),
    max: sorted[sorted.length - 1]!,
    top1Agreement: agree.filter(Boolean).length / agree.length,
    top1AgreementMargin: marginPositions ? agree.filter((a, i) => a && margins[i]).length / marginPositions : NaN,
    marginPositions,
    basePpl: Math.exp(baseNll),
  }
}
