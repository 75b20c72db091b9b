/**
 * `runner run` as a library call: check the receipt's inputs, load the model, tokenize the prompt,
 * refuse a prompt that does not fit, generate (streaming text to `onText`), write the receipt, and
 * report what the command prints. The command only parses flags and renders this report.
 */
import {basename} from 'node:path'

import type {RopeOverrides} from '../arch/index.js'
import {
  type AdapterSummary,
  adapterSummary,
  contextSize,
  type Draft,
  type KvCacheSize,
  Model,
  Session,
  verifySignatureBeforeLoad,
} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {fitPrompt, type FinishReason, generate, keptTokens} from '../generate/index.js'
import {readGgufModel} from '../gguf/index.js'
import {prepareReceipt, type ReceiptBody, type ReceiptOptions, writeReceipt} from '../receipt/index.js'
import type {Constraint} from '../grammar/index.js'
import {type LoraSpec, readLoraAdapter} from '../lora/index.js'
import type {SamplingOptions} from '../sampling/index.js'
import {openDrafts, type SpeculationOptions, type SpeculationReport, speculationReport} from '../speculative/index.js'
import {modelSignatureSummary, type ModelSignatureSummary, type SignaturePolicy} from '../signing/index.js'
import {encodePrompt} from '../tokenizer/index.js'
import {decodeRate} from '../util/index.js'

export interface RunOptions {
  readonly modelPath: string
  readonly prompt: string
  /** Tokens to generate; -1: until end of text or a full context. */
  readonly nPredict: number
  /** Default: the model's training context, at most 4096. */
  readonly nCtx?: number
  /** A context size given beyond the model's training context runs, with this warning (engine contextSize). */
  readonly onWarning?: (message: string) => void
  readonly nBatch: number
  readonly threads?: number
  readonly kvType: 'f16' | 'f32'
  /** Sliding-window layers keep every position (llama.cpp's --swa-full) instead of a ring. */
  readonly swaFull?: boolean
  /**
   * llama.cpp's --context-shift with its --keep N (prompt tokens after BOS; -1: the whole prompt): a full
   * context drops half of what follows them and generation goes on.
   */
  readonly contextShift?: {readonly keep: number}
  readonly addBos: boolean
  readonly parseSpecial: boolean
  readonly sampling: SamplingOptions
  /** Constrain the output (a JSON schema, a grammar, JSON mode): compiled before the model loads. */
  readonly constraint?: Constraint
  /** LoRA adapters applied to the model, in order (recorded in the receipt). */
  readonly lora?: readonly LoraSpec[]
  /** llama.cpp's rope overrides (--rope-scaling, --yarn-*: docs/long-context.md), recorded in the receipt. */
  readonly rope?: RopeOverrides
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md); recorded in the receipt. */
  readonly signature?: SignaturePolicy
  /** Write a receipt of the run (its inputs are checked before the model loads). */
  readonly receipt?: ReceiptOptions
  /** Speculative decoding (docs/speculative.md): the output is the same, only the speed differs. */
  readonly speculation?: SpeculationOptions
  readonly onProgress?: (done: number, total: number) => void
  /** The text as it is generated. */
  readonly onText?: (text: string) => void
  /** Ctrl+C: ends the generation with finish reason "aborted", keeping what was generated. */
  readonly signal?: AbortSignal
}

export interface RunTimings {
  readonly loadMs: number
  readonly promptMs: number
  readonly decodeMs: number
  readonly promptTokensPerSecond: number
  /** Null below two generated tokens (util decodeRate: n tokens are n - 1 decode steps). */
  readonly decodeTokensPerSecond: number | null
}

export interface RunReport {
  readonly text: string
  readonly tokens: readonly number[]
  readonly promptTokens: readonly number[]
  /** Prompt tokens the engine evaluated. */
  readonly evaluatedTokens: number
  readonly finishReason: FinishReason
  readonly seed: bigint
  readonly timings: RunTimings
  /** With a constraint: what it was, what compiling it and its masks cost, and the tokens it forced. */
  readonly constraint?: {
    readonly kind: string
    readonly sha256: string
    readonly compileMs: number
    readonly maskMs: number
    readonly forcedTokens: number
  }
  readonly peakRssBytes: number
  /** The KV cache: bytes as allocated, as a flat cache (--swa-full) would take, and its sliding-window rings. */
  readonly kv: KvCacheSize
  /** With --context-shift: the tokens kept, the shifts made and the tokens they dropped in all. */
  readonly contextShift?: {readonly keep: number; readonly shifts: number; readonly discarded: number}
  /** The LoRA adapters applied, in order. */
  readonly adapters: readonly AdapterSummary[]
  readonly receipt?: {readonly path: string; readonly chain: string; readonly signed: boolean}
  /** The model signature verified at load (--model-sig). */
  readonly signature?: ModelSignatureSummary
  /** With speculation asked for: the source in use (and what it drafted and the model accepted), or why it was refused. */
  readonly speculation?: SpeculationReport
}

export async function runPrompt(options: RunOptions): Promise<RunReport> {
  // A receipt records each token's log-probability; reporting them does not change sampling.
  const sampling = options.receipt ? {...options.sampling, logprobs: true} : options.sampling
  const t0 = performance.now()
  const lora = options.lora ?? []
  // The signature before the receipt reads the header: a refused model is not parsed at all.
  const signed = await verifySignatureBeforeLoad(options.modelPath, options.signature)
  const setup = options.receipt
    ? await prepareReceipt(
        readGgufModel(options.modelPath),
        options.receipt,
        lora.map((spec) => ({spec, adapter: readLoraAdapter(spec.path)})),
      )
    : undefined
  // Ctrl+C while a large model loads cancels the load (ENGINE_ABORTED, exit 130): nothing is written.
  const model = await Model.load(options.modelPath, {
    onProgress: options.onProgress,
    signal: options.signal,
    lora,
    rope: options.rope,
    ...(signed ? {verifiedSignature: signed} : {}),
  })
  try {
    const loadMs = performance.now() - t0
    const tokenizer = model.tokenizer
    const ids = encodePrompt(tokenizer, options.prompt, {addBos: options.addBos, parseSpecial: options.parseSpecial})
    const nCtx = contextSize(options.nCtx, model.config, {name: '-c/--ctx-size', onWarning: options.onWarning})
    if (!fitPrompt(ids.length, nCtx, 1).fits) {
      throw new RunnerError(
        'PROMPT_TOO_LONG',
        `the prompt is ${ids.length} tokens but the context holds ${nCtx}; raise -c (the model was trained on ${model.config.nCtxTrain}) or shorten the prompt`,
        ExitCode.usage,
      )
    }
    const ctx = await model.createContext({
      nCtx,
      nBatch: options.nBatch,
      threads: options.threads,
      kvType: options.kvType,
      swaFull: options.swaFull ?? false,
    })
    const opened = options.speculation
      ? await openDrafts(model, options.speculation, {
          nCtx,
          kvType: options.kvType,
          threads: ctx.options.threads,
          onWarning: options.onWarning,
          signal: options.signal,
        }).catch((error: unknown) => {
          ctx.dispose()
          throw error
        })
      : undefined
    const draft = opened?.drafts[0]
    try {
      // Refused by name before anything runs where a shift could not be exact (a sliding-window ring).
      if (options.contextShift) ctx.assertCanShift('--context-shift')
      const shift = options.contextShift ? {keep: keptTokens(ids, options.contextShift.keep, tokenizer.bos)} : undefined
      // Interrupted before the first token: nothing ran, so there is no run to report or receipt to write.
      if (options.signal?.aborted) throw new RunnerError('INTERRUPTED', 'interrupted before the generation started', ExitCode.interrupted)
      // -1: no cap of our own; the engine stops when the context is full and says so (finish reason "context"),
      // or, shifting, at the end of text (llama.cpp's infinite generation).
      const maxTokens = options.nPredict >= 0 ? options.nPredict : shift ? UNBOUNDED : nCtx
      const stopTokens = [...tokenizer.eogTokens]
      const started = new Date()
      const constraint = options.constraint
      const generation = generate(new Session(ctx), {
        prompt: ids,
        maxTokens,
        sampling,
        signal: options.signal,
        stopTokens,
        ...(constraint ? {constraint} : {}),
        ...(draft ? {draft} : {}),
        ...(shift ? {contextShift: shift} : {}),
      })
      for await (const e of generation.events) if (e.text) options.onText?.(e.text)
      const o = await generation.result
      const finished = new Date()
      let receipt: RunReport['receipt']
      if (setup && options.receipt) {
        const written = await writeReceipt(options.receipt.path, setup, {
          architecture: model.config.architecture,
          ...(model.signature ? {signature: model.signature} : {}),
          started,
          finished,
          config: {
            maxTokens,
            nCtx,
            nBatch: ctx.options.nBatch,
            threads: ctx.options.threads,
            kvType: ctx.options.kvType,
            addBos: options.addBos,
            parseSpecial: options.parseSpecial,
            stopTokens,
            sampling,
            ...(constraint ? {constraint: {kind: constraint.kind, sha256: constraint.sha256, text: constraint.text}} : {}),
            ...(options.rope ? {rope: options.rope} : {}),
            ...(draft ? {draft: receiptDraft(draft.settings)} : {}),
            ...(shift ? {contextShift: {keep: ctx.shiftKeep(shift.keep)}} : {}),
          },
          prompt: {text: options.prompt, tokens: ids},
          output: {
            tokens: [...o.tokenIds],
            text: o.text,
            bytes: tokenizer.decodeBytes(o.tokenIds),
            finishReason: o.finishReason,
            logprobs: o.tokens.map((t) => t.logprob),
          },
        })
        receipt = {path: options.receipt.path, chain: written.chain, signed: setup.key !== undefined}
      }
      const {promptMs, decodeMs} = o.timings
      return {
        text: o.text,
        tokens: o.tokenIds,
        promptTokens: ids,
        evaluatedTokens: o.usage.evaluatedTokens,
        finishReason: o.finishReason,
        seed: sampling.seed,
        adapters: model.adapters.map(adapterSummary),
        timings: {
          loadMs: round(loadMs),
          promptMs: round(promptMs),
          decodeMs: round(decodeMs),
          promptTokensPerSecond: round((1000 * o.usage.evaluatedTokens) / Math.max(promptMs, 1e-9)),
          decodeTokensPerSecond: decodeRate(o.tokenIds.length, decodeMs),
        },
        ...(constraint
          ? {
              constraint: {
                kind: constraint.kind,
                sha256: constraint.sha256,
                compileMs: round(constraint.compileMs),
                maskMs: round(o.timings.maskMs),
                forcedTokens: o.usage.forcedTokens,
              },
            }
          : {}),
        peakRssBytes: process.resourceUsage().maxRSS * 1024,
        kv: ctx.kvInfo,
        ...(shift ? {contextShift: {keep: ctx.shiftKeep(shift.keep), shifts: o.shifts.count, discarded: o.shifts.discarded}} : {}),
        ...(receipt ? {receipt} : {}),
        ...(model.signature ? {signature: modelSignatureSummary(model.signature)} : {}),
        ...(opened ? {speculation: speculationReport(opened.status, o.draft)} : {}),
      }
    } finally {
      opened?.dispose()
      ctx.dispose()
    }
  } finally {
    model.dispose()
  }
}

/** The receipt's record of a draft (the model by file name: the receipt does not carry its bytes). */
function receiptDraft(settings: Draft['settings']): NonNullable<ReceiptBody['config']['draft']> {
  if (settings.source === 'lookup') return {source: 'lookup', nMax: settings.nMax, ngramMin: settings.ngramMin, ngramMax: settings.ngramMax}
  if (settings.source === 'mtp') return {source: 'mtp', nMax: settings.nMax, pMin: settings.pMin}
  return {source: 'model', nMax: settings.nMax, pMin: settings.pMin, model: basename(settings.model)}
}
/** The most tokens one generation may make (the engine counts them in an int32). */
const UNBOUNDED = 2 ** 31 - 1

function round(x: number): number {
  return Math.round(x * 10) / 10
}
