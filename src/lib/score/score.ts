import type {Context} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {type WindowScheme, windowScheme, windowTokens} from './windows.js'

export interface ScoreOptions {
  readonly ctx: number
  readonly stride?: number
  /** Token that replaces the first token of every window (llama-perplexity uses BOS). */
  readonly bos: number | undefined
  /** After each window: windows done, windows in all, and the perplexity of every position scored so far. */
  readonly onProgress?: (windowsDone: number, windows: number, runningPpl: number) => void
  /**
   * Ctrl+C: the window being evaluated is dropped and the windows scored so far are the result,
   * marked partial; before the first window ends it rejects as the engine does (aborted).
   */
  readonly signal?: AbortSignal
  /** Called for every scored position in order: its logits row, log-sum-exp, target and argmax. */
  readonly onPosition?: (row: Float32Array, lse: number, target: number, argmax: number) => void
}

export interface WindowResult {
  readonly start: number
  readonly nllSum: number
  readonly nScored: number
}

export interface ScoreResult {
  readonly scheme: WindowScheme
  readonly nScored: number
  readonly nllMean: number
  /** Standard deviation of the per-token NLL. */
  readonly nllStd: number
  /** Standard error of nll_mean, as llama-perplexity reports it: sqrt((E[x²] - mean²) / (n - 1)). */
  readonly nllStdError: number
  readonly ppl: number
  /** exp(nll_mean ± 1.96 standard errors). */
  readonly pplCi95: readonly [number, number]
  readonly nVocab: number
  /** Positions where the actual token was the argmax. */
  readonly top1: number
  readonly top1Rate: number
  readonly windows: readonly WindowResult[]
  /** Interrupted: `windows` holds fewer than scheme.starts.length, and every figure is over those. */
  readonly partial: boolean
  readonly ms: number
}

/** log-sum-exp of a row in double precision, and its argmax (ties: lowest id). */
function rowStats(row: Float32Array): {lse: number; argmax: number} {
  let max = -Infinity
  let argmax = 0
  for (let i = 0; i < row.length; i++) {
    if (row[i]! > max) {
      max = row[i]!
      argmax = i
    }
  }
  let sum = 0
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max)
  return {lse: max + Math.log(sum), argmax}
}

function selfCheckFailed(detail: string): never {
  throw new RunnerError(
    'SCORE_SELF_CHECK',
    `the scorer's own numbers contradict probability theory: ${detail}; nothing is reported`,
    ExitCode.verificationFailed,
  )
}

/**
 * Teacher-forced scoring over windows (src/lib/score/windows.ts). Every probability is a full-
 * vocabulary log-softmax in double precision. Two facts that do not depend on this code are checked
 * at every position: a token with probability above 0.5 must be the argmax, and the argmax must
 * carry at least 1/n_vocab; a contradiction refuses the whole result.
 */
export async function scoreTokens(ctx: Context, tokens: readonly number[], options: ScoreOptions): Promise<ScoreResult> {
  const t0 = performance.now()
  const scheme = windowScheme(tokens.length, options.ctx, options.stride)
  if (scheme.starts.length === 0) {
    throw new RunnerError(
      'SCORE_TOO_SHORT',
      `the corpus has ${tokens.length} tokens, fewer than one window of ${options.ctx}; give more text or a smaller --ctx`,
      ExitCode.usage,
    )
  }
  const nVocab = ctx.model.config.nVocab
  const windows: WindowResult[] = []
  let n = 0
  let sum = 0
  let sum2 = 0
  let top1 = 0
  for (const [w, start] of scheme.starts.entries()) {
    if (options.signal?.aborted && windows.length > 0) break
    const ids = windowTokens(tokens, start, options.ctx, options.bos)
    ctx.kvTruncate(0)
    let logits: Float32Array
    try {
      logits = (await ctx.decode(ids, {pos: 0, logits: 'all', signal: options.signal}))!
    } catch (error) {
      // Interrupted inside a window: the whole windows before it are the (partial) result.
      if (options.signal?.aborted && windows.length > 0) break
      throw error
    }
    let nllSum = 0
    for (let i = scheme.first; i < options.ctx - 1; i++) {
      const row = logits.subarray(i * nVocab, (i + 1) * nVocab)
      const target = tokens[start + i + 1]!
      const {lse, argmax} = rowStats(row)
      const logp = row[target]! - lse
      const pArgmax = Math.exp(row[argmax]! - lse)
      if (Math.exp(logp) > 0.5 && target !== argmax)
        selfCheckFailed(`at token ${start + i + 1}, p = ${Math.exp(logp)} > 0.5 but ${argmax} has a higher logit`)
      if (pArgmax < 1 / nVocab) selfCheckFailed(`at token ${start + i + 1}, the argmax has p = ${pArgmax} < 1/${nVocab}`)
      if (!Number.isFinite(logp)) selfCheckFailed(`at token ${start + i + 1}, log p = ${logp}`)
      options.onPosition?.(row, lse, target, argmax)
      if (target === argmax) top1++
      nllSum += -logp
      sum2 += logp * logp
      n++
    }
    sum += nllSum
    windows.push({start, nllSum, nScored: options.ctx - 1 - scheme.first})
    options.onProgress?.(w + 1, scheme.starts.length, Math.exp(sum / n))
  }
  const mean = sum / n
  const variance = Math.max(0, sum2 / n - mean * mean)
  const stdError = n > 1 ? Math.sqrt(variance / (n - 1)) : NaN
  return {
    scheme,
    nScored: n,
    nllMean: mean,
    nllStd: Math.sqrt(variance),
    nllStdError: stdError,
    ppl: Math.exp(mean),
    pplCi95: [Math.exp(mean - 1.96 * stdError), Math.exp(mean + 1.96 * stdError)],
    nVocab,
    top1,
    top1Rate: top1 / n,
    windows,
    partial: windows.length < scheme.starts.length,
    ms: performance.now() - t0,
  }
}
