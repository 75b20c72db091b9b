/**
 * `runner score` as a library call: tokenize the corpus, score it window by window (score.ts), and
 * alongside, per scored position, save this model's distribution (--save-logits) and/or its
 * KL-divergence and top-1 agreement against a saved base (--kld). Returns the report document the
 * command prints (its fields are the --json output).
 */
import type {RopeOverrides} from '../arch/index.js'
import {contextSize, Model} from '../engine/index.js'
import type {SignaturePolicy} from '../signing/index.js'
import type {LoraSpec} from '../lora/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {checkOutputPath, sha256File, sha256Text} from '../util/index.js'
import {type BaseLogits, type BasePosition, readBaseLogits, writeBaseLogits} from './base-logits.js'
import {basePosition, checkBaseMatches, KLD_MARGIN, positionKld, summarizeKld} from './kld.js'
import type {ScoreProgress} from './progress.js'
import {scoreTokens} from './score.js'
import {windowScheme} from './windows.js'

export interface CorpusScoreOptions {
  readonly modelPath: string
  /** LoRA adapters applied to the model, in order (named with their sha256 in the report). */
  readonly lora?: readonly LoraSpec[]
  /** llama.cpp's rope overrides (docs/long-context.md). */
  readonly rope?: RopeOverrides
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
  readonly corpus: string
  /** The corpus file, for the report (null: standard input). */
  readonly corpusFile: string | null
  /** The window; default: 512 (llama-perplexity's), at most the model's training context. */
  readonly ctx?: number
  /** A window given beyond the model's training context runs, with this warning (engine contextSize). */
  readonly onWarning?: (message: string) => void
  readonly stride?: number
  readonly threads?: number
  readonly nBatch: number
  readonly kvType: 'f16' | 'f32'
  /** Save this model's per-position distributions (top-k + the rest) here. */
  readonly saveLogits?: string
  readonly saveTopK: number
  /** Compare against the base saved in this file. */
  readonly kld?: string
  /**
   * Ctrl+C: scoring stops at the next layer; INTERRUPTED (exit 130) says what was not written. With
   * keepPartial, once a window is scored the report of the windows so far comes back instead, marked
   * `partial` (--save-logits is then not written: a base must cover every window).
   */
  readonly signal?: AbortSignal
  /** Ctrl+C during scoring returns the windows so far (the command); without it, INTERRUPTED (compat checks). */
  readonly keepPartial?: boolean
  /** Running figures as each window ends (./progress.ts); ended however scoring ends. */
  readonly progress?: ScoreProgress
}

/** The window when none is given: llama-perplexity's default n_ctx. */
export const SCORE_CTX_DEFAULT = 512

export const SCHEME_DESCRIPTION =
  'llama-perplexity: tokens = [BOS] + tokenize(corpus); window c = tokens[c*stride, c*stride + ctx) with its first token replaced by BOS, from an empty cache; logits at first..ctx-2 score tokens first+1..ctx-1, first = floor(ctx/2)'

/** KL-divergence against the base and top-1 agreement, as the report states them. */
class KldTally {
  readonly klds: number[] = []
  readonly agree: boolean[] = []

  constructor(
    private readonly base: BaseLogits,
    private readonly file: string,
  ) {}

  add(row: Float32Array, lse: number, target: number, argmax: number): void {
    const b = this.base.positions[this.klds.length]!
    if (b.target !== target)
      throw new RunnerError('KLD_BASE_MISMATCH', `${this.file}: position ${this.klds.length} scores another token`, ExitCode.usage)
    this.klds.push(positionKld(b, row, lse))
    this.agree.push(argmax === b.tokens[0])
  }

  report(ppl: number) {
    // A partial run compares the positions it scored with the same positions of the base.
    const k = summarizeKld(this.klds, this.agree, {...this.base, positions: this.base.positions.slice(0, this.klds.length)})
    return {
      mean: k.mean,
      median: k.median,
      p99: k.p99,
      max: k.max,
      top1_agreement: k.top1Agreement,
      top1_agreement_margin: k.top1AgreementMargin,
      margin: KLD_MARGIN,
      margin_positions: k.marginPositions,
      base_ppl: k.basePpl,
      ppl_ratio: ppl / k.basePpl,
    }
  }
}

export type ScoreDocument = Awaited<ReturnType<typeof scoreCorpus>>

/** Windows scored so far, for the message of an interrupted run. */
interface Progress {
  done: number
  /** Set once the corpus is tokenized. */
  total?: number
}

function interrupted(p: Progress, saveLogits: string | undefined): RunnerError {
  const where = p.total === undefined ? 'before scoring began' : `after ${p.done} of ${p.total} windows`
  const unsaved = saveLogits === undefined ? '' : `; ${saveLogits} was not written`
  return new RunnerError('INTERRUPTED', `interrupted ${where}: no report${unsaved}`, ExitCode.interrupted)
}

export async function scoreCorpus(o: CorpusScoreOptions) {
  if (o.corpus.length === 0) throw new RunnerError('SCORE_EMPTY_CORPUS', 'the corpus is empty', ExitCode.usage)
  // Before the model loads: a --save-logits path that cannot take the file must not cost a whole run.
  if (o.saveLogits !== undefined) await checkOutputPath(o.saveLogits, {replace: true})
  const progress: Progress = {done: 0}
  try {
    return await scoreWithModel(o, progress)
  } catch (error) {
    if (o.signal?.aborted) throw interrupted(progress, o.saveLogits)
    throw error
  } finally {
    o.progress?.end()
  }
}

async function scoreWithModel(options: CorpusScoreOptions, progress: Progress) {
  const model = await Model.load(options.modelPath, {
    signal: options.signal,
    lora: options.lora,
    rope: options.rope,
    ...(options.signature ? {signature: options.signature} : {}),
  })
  try {
    // A window is a context like run's: the same policy (beyond the training context: a warning).
    const ctx = contextSize(options.ctx, model.config, {name: '--ctx', cap: SCORE_CTX_DEFAULT, onWarning: options.onWarning})
    const o = {...options, ctx}
    const tok = model.tokenizer
    const tokens = tok.encode(o.corpus, {addSpecial: true, parseSpecial: false})
    progress.total = windowScheme(tokens.length, o.ctx, o.stride).starts.length
    const context = await model.createContext({nCtx: o.ctx, nBatch: Math.min(o.nBatch, o.ctx), threads: o.threads, kvType: o.kvType})
    try {
      const corpusSha = sha256Text(o.corpus)
      const base = o.kld === undefined ? undefined : await readBaseLogits(o.kld)
      const stride = o.stride ?? o.ctx
      if (base) checkBaseMatches(base, tokens, {ctx: o.ctx, stride, first: Math.floor(o.ctx / 2)}, corpusSha, o.kld!)
      const tally = base ? new KldTally(base, o.kld!) : undefined
      const saved: BasePosition[] = []
      const started = performance.now()
      const result = await scoreTokens(context, tokens, {
        ctx: o.ctx,
        stride: o.stride,
        bos: tok.addBos ? tok.bos : undefined,
        signal: o.signal,
        onPosition: (row, lse, target, argmax) => {
          if (o.saveLogits !== undefined) saved.push(basePosition(row, lse, target, Math.min(o.saveTopK, row.length)))
          tally?.add(row, lse, target, argmax)
        },
        onProgress: (done, total, ppl) => {
          progress.done = done
          o.progress?.window(done, total, performance.now() - started, ppl)
        },
      })
      if (result.partial && !o.keepPartial) o.signal?.throwIfAborted()
      o.progress?.end()
      // Ctrl+C after the last window (while a large model is hashed) still means no report and no file.
      if (!result.partial) o.signal?.throwIfAborted()
      const modelSha = await sha256File(model.gguf.path)
      const adapters = await Promise.all(
        model.adapters.map(async (a) => ({
          file: a.spec.path,
          sha256: await sha256File(a.spec.path),
          alpha: a.adapter.alpha,
          scale: a.spec.scale,
        })),
      )
      if (!result.partial) o.signal?.throwIfAborted()
      const scored = result.windows.length
      const doc = {
        model: {file: o.modelPath, sha256: modelSha, shards: model.gguf.shards.length, ...(adapters.length > 0 ? {adapters} : {})},
        corpus: {file: o.corpusFile, sha256: corpusSha, tokens: tokens.length},
        scheme: {
          description: SCHEME_DESCRIPTION,
          ctx: o.ctx,
          stride: result.scheme.stride,
          first: result.scheme.first,
          windows: result.scheme.starts.length,
          scoredPerWindow: result.scheme.scoredPerWindow,
          bosReplacesFirst: tok.addBos,
        },
        /** Interrupted (Ctrl+C): every figure is over the first windows_scored windows only. */
        partial: result.partial,
        windows_scored: scored,
        ...(result.partial && o.saveLogits !== undefined ? {not_written: o.saveLogits} : {}),
        n_scored: result.nScored,
        nll_mean: result.nllMean,
        nll_std: result.nllStd,
        nll_std_error: result.nllStdError,
        ppl: result.ppl,
        ppl_ci95: result.pplCi95,
        n_vocab: result.nVocab,
        top1: result.top1,
        top1_rate: result.top1Rate,
        windows: result.windows,
        timings: {
          ms: Math.round(result.ms * 10) / 10,
          tokensPerSecond: Math.round((scored * o.ctx * 1000) / result.ms),
          scoredPerSecond: Math.round((result.nScored * 1000) / result.ms),
        },
        kvType: o.kvType,
        ...(tally ? {kld: tally.report(result.ppl)} : {}),
      }
      if (o.saveLogits !== undefined && !result.partial) {
        await writeBaseLogits(o.saveLogits, {
          k: Math.min(o.saveTopK, result.nVocab),
          nVocab: result.nVocab,
          ctx: o.ctx,
          stride,
          first: result.scheme.first,
          corpusSha256: corpusSha,
          tokens: Int32Array.from(tokens),
          positions: saved,
        })
      }
      return doc
    } finally {
      context.dispose()
    }
  } finally {
    model.dispose()
  }
}
