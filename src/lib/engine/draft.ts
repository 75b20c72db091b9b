/**
 * Draft sources of speculative decoding (native/src/model/draft.c): prompt lookup (n-gram matches in
 * the sequence so far), a draft model (a smaller model of the same vocabulary, in its own
 * context and threads) and the model's own MTP (NextN) head, in a context of the target's model. A
 * draft only proposes; the generation verifies every token with the target's own sampler, so the
 * output is the one plain decoding gives (docs/speculative.md).
 */
import {ExitCode, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {loadAddon, type NativeDraftHandle} from './addon.js'
import type {Context} from './context.js'
import {engineError} from './errors.js'
import type {Model} from './model.js'

export type DraftSource = 'lookup' | 'model' | 'mtp'

/** runner_draft_kind by source. */
const DRAFT_KIND: Readonly<Record<DraftSource, number>> = {lookup: 1, model: 2, mtp: 3}

/** runner.h RUNNER_DRAFT_MAX and RUNNER_DRAFT_NGRAM_MAX. */
export const MAX_DRAFT_TOKENS = 64
export const MAX_LOOKUP_NGRAM = 16

export interface LookupDraftOptions {
  /** Most tokens drafted per step (default 10). */
  readonly nMax?: number
  /** The shortest suffix matched (default 2). */
  readonly ngramMin?: number
  /** The longest suffix matched, tried first (default 4). */
  readonly ngramMax?: number
}

export interface ModelDraftOptions {
  /** Most tokens drafted per step (default 16, llama.cpp's --draft-max). */
  readonly nMax?: number
  /** Drafting stops at a token the draft model gives less probability (default 0.75, llama.cpp's --draft-p-min). */
  readonly pMin?: number
}

export interface MtpDraftOptions {
  /** Most tokens drafted per step (default 3: one trained head, chained on its own output). */
  readonly nMax?: number
  /** Drafting stops at a token the head gives less probability (default 0.75, as --draft-p-min). */
  readonly pMin?: number
  /** The head's context's threads (default: the target's). */
  readonly threads?: number
}

/** What an MTP draft drafts for: a model with a NextN head and the target context's settings (a Context is one). */
export interface MtpTarget {
  readonly model: Model
  readonly options: {readonly nCtx: number; readonly kvType?: 'f16' | 'f32'; readonly threads?: number}
}

export const LOOKUP_DEFAULTS: Required<LookupDraftOptions> = {nMax: 10, ngramMin: 2, ngramMax: 4}
export const MODEL_DRAFT_DEFAULTS: Required<ModelDraftOptions> = {nMax: 16, pMin: 0.75}
export const MTP_DRAFT_DEFAULTS: Required<Omit<MtpDraftOptions, 'threads'>> = {nMax: 3, pMin: 0.75}

/** What receipts, stats and the server report of a draft: its source and settings. */
export type DraftSettings =
  | ({readonly source: 'lookup'} & Required<LookupDraftOptions>)
  | ({readonly source: 'model'; readonly model: string} & Required<ModelDraftOptions>)
  | ({readonly source: 'mtp'} & Required<Omit<MtpDraftOptions, 'threads'>>)

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max)
    throw new RunnerError('DRAFT_BAD_OPTION', `${name} ${v} must be an integer in [${min}, ${max}]`, ExitCode.usage)
}

/** A draft source, handed to generations (one at a time) as GenerateOptions.draft. */
export class Draft {
  private handle: NativeDraftHandle | undefined

  private constructor(
    handle: NativeDraftHandle,
    readonly settings: DraftSettings,
    /** The draft model's context (source 'model'; 'mtp': the head's, of the target's model): the draft's own until dispose. */
    readonly context?: Context,
  ) {
    this.handle = handle
  }

  static lookup(options: LookupDraftOptions = {}): Draft {
    // Only the draft's own settings (a caller's object may carry more).
    const o = {
      nMax: options.nMax ?? LOOKUP_DEFAULTS.nMax,
      ngramMin: options.ngramMin ?? LOOKUP_DEFAULTS.ngramMin,
      ngramMax: options.ngramMax ?? LOOKUP_DEFAULTS.ngramMax,
    }
    checkInt('draft max', o.nMax, 1, MAX_DRAFT_TOKENS)
    checkInt('lookup n-gram min', o.ngramMin, 1, MAX_LOOKUP_NGRAM)
    checkInt('lookup n-gram max', o.ngramMax, o.ngramMin, MAX_LOOKUP_NGRAM)
    try {
      const handle = loadAddon().draftCreate(
        {kind: DRAFT_KIND.lookup, nMax: o.nMax, ngramMin: o.ngramMin, ngramMax: o.ngramMax, pMin: 0},
        null,
      )
      return new Draft(handle, {source: 'lookup', ...o})
    } catch (error) {
      throw engineError(error)
    }
  }

  /**
   * A draft model's context (of a model whose vocabulary the target's accepts: checkDraftVocabulary)
   * as a draft source; `name` is what reports call it. The context is the draft's until dispose.
   */
  static fromContext(context: Context, target: Tokenizer, name: string, options: ModelDraftOptions = {}): Draft {
    const o = {nMax: options.nMax ?? MODEL_DRAFT_DEFAULTS.nMax, pMin: options.pMin ?? MODEL_DRAFT_DEFAULTS.pMin}
    checkInt('draft max', o.nMax, 1, MAX_DRAFT_TOKENS)
    if (!(o.pMin >= 0 && o.pMin <= 1))
      throw new RunnerError('DRAFT_BAD_OPTION', `draft p-min ${o.pMin} must be a number in [0, 1]`, ExitCode.usage)
    checkDraftVocabulary(target, context.model.tokenizer, name)
    try {
      const handle = loadAddon().draftCreate(
        {kind: DRAFT_KIND.model, nMax: o.nMax, ngramMin: 0, ngramMax: 0, pMin: o.pMin},
        context.nativeHandle,
      )
      return new Draft(handle, {source: 'model', model: name, ...o}, context)
    } catch (error) {
      throw engineError(error)
    }
  }

  /**
   * The target model's own multi-token-prediction (NextN) head as a draft source, in a context of
   * that model one position longer than the target's (its slots are the target's positions, rotated
   * one further). Refused by name (DRAFT_NO_MTP_HEAD) when the model carries no head.
   */
  static async mtp(target: MtpTarget, options: MtpDraftOptions = {}): Promise<Draft> {
    const o = {nMax: options.nMax ?? MTP_DRAFT_DEFAULTS.nMax, pMin: options.pMin ?? MTP_DRAFT_DEFAULTS.pMin}
    checkInt('draft max', o.nMax, 1, MAX_DRAFT_TOKENS)
    if (!(o.pMin >= 0 && o.pMin <= 1))
      throw new RunnerError('DRAFT_BAD_OPTION', `draft p-min ${o.pMin} must be a number in [0, 1]`, ExitCode.usage)
    const config = target.model.config
    if (!config.nNextn)
      throw new RunnerError(
        'DRAFT_NO_MTP_HEAD',
        `this ${config.architecture} model has no MTP head (no ${config.architecture}.nextn_predict_layers and blk.N.nextn.* tensors)`,
        ExitCode.usage,
      )
    const threads = options.threads ?? target.options.threads
    const context = await target.model.createContext({
      blocks: 'mtp',
      nCtx: target.options.nCtx + 1,
      ...(target.options.kvType ? {kvType: target.options.kvType} : {}),
      ...(threads !== undefined ? {threads} : {}),
    })
    try {
      const handle = loadAddon().draftCreate(
        {kind: DRAFT_KIND.mtp, nMax: o.nMax, ngramMin: 0, ngramMax: 0, pMin: o.pMin},
        context.nativeHandle,
      )
      return new Draft(handle, {source: 'mtp', ...o}, context)
    } catch (error) {
      context.dispose()
      throw engineError(error)
    }
  }

  /** The engine handle; refuses use after dispose. */
  get native(): NativeDraftHandle {
    if (!this.handle) throw new RunnerError('DRAFT_DISPOSED', 'the draft has been disposed')
    return this.handle
  }

  /** Frees the draft (a running generation keeps it until it ends) and its model's context. */
  dispose(): void {
    if (this.handle) loadAddon().draftFree(this.handle)
    this.handle = undefined
    this.context?.dispose()
  }
}

/** llama.cpp's tolerance (common/speculative.cpp): vocabularies may differ in size by this much... */
const MAX_VOCAB_DIFFERENCE = 128
/** ...and token texts are compared from this id on (the first ids are control tokens converters name differently). */
const FIRST_COMPARED_TOKEN = 5

/**
 * Refuse a draft model whose tokens do not mean what the target's do, as llama.cpp's
 * common_speculative_are_compatible does: the tokenizer model, BOS/EOS and adding BOS equal, the
 * sizes within 128, and every token's text equal over the shared ids from 5 on. A proposal with an
 * id the target lacks ends a draft (native), so a smaller target vocabulary is safe.
 */
export function checkDraftVocabulary(target: Tokenizer, draft: Tokenizer, draftName: string): void {
  const refuse = (what: string): never => {
    throw new RunnerError(
      'DRAFT_VOCAB_MISMATCH',
      `the draft model ${printable(draftName)} cannot draft for this model: ${what}; use a draft model of the same family and tokenizer`,
      ExitCode.usage,
    )
  }
  if (target.model !== draft.model) refuse(`its tokenizer.ggml.model is ${draft.model}, the target's ${target.model}`)
  if (target.addBos !== draft.addBos) refuse(`tokenizer.ggml.add_bos_token differs (${draft.addBos} vs ${target.addBos})`)
  if (target.bos !== draft.bos) refuse(`tokenizer.ggml.bos_token_id is ${draft.bos}, the target's ${target.bos}`)
  if (target.eos !== draft.eos) refuse(`tokenizer.ggml.eos_token_id is ${draft.eos}, the target's ${target.eos}`)
  if (Math.abs(target.vocabSize - draft.vocabSize) > MAX_VOCAB_DIFFERENCE)
    refuse(`its vocabulary has ${draft.vocabSize} tokens, the target's ${target.vocabSize} (at most ${MAX_VOCAB_DIFFERENCE} apart)`)
  const n = Math.min(target.vocabSize, draft.vocabSize)
  for (let id = FIRST_COMPARED_TOKEN; id < n; id++) {
    if (target.tokenText(id) !== draft.tokenText(id))
      refuse(
        `token ${id} of tokenizer.ggml.tokens is ${JSON.stringify(printable(draft.tokenText(id), {max: 40}))}, the target's ${JSON.stringify(printable(target.tokenText(id), {max: 40}))}`,
      )
  }
}
