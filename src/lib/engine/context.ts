import {ExitCode, RunnerError} from '../errors.js'
import type {SamplingOptions} from '../sampling/index.js'
import {loadAddon, type NativeContextHandle, type NativeGenerateStats, type NativeKvInfo} from './addon.js'
import {abortFlags} from './abort-flags.js'
import {engineError} from './errors.js'
import type {DecodeGroup} from './decode-group.js'
import type {Draft} from './draft.js'
import type {GrammarMatcher} from './grammar.js'
import type {Model} from './model.js'

export interface ContextOptions {
  /** KV cache positions (default: the model's training context, at most 4096). */
  readonly nCtx?: number
  /** Most tokens one forward step processes (default 512). */
  readonly nBatch?: number
  /** Worker threads including the calling one (default: physical cores, at most 32). */
  readonly threads?: number
  readonly kvType?: 'f16' | 'f32'
  /**
   * The blocks it runs (and holds a KV cache for): the model's own (default), or only its NextN head's,
   * for an MTP draft (Draft.mtp makes that context; it cannot decode).
   */
  readonly blocks?: 'model' | 'mtp'
  /**
   * Sliding-window layers keep every position (llama.cpp's --swa-full). By default each keeps a ring
   * of what its window can still reach (bitwise the same logits, less memory); a rewind below what a
   * ring holds is then refused (ENGINE_KV_EVICTED) and Session reuses less.
   */
  readonly swaFull?: boolean
}

export type LogitsMode = 'none' | 'last' | 'all'
const LOGITS_MODE: Record<LogitsMode, number> = {none: 0, last: 1, all: 2}
/** runner_logits_mode RUNNER_LOGITS_EMBD: output-normed hidden states instead of logits. */
const EMBD_MODE = 3

export interface GenerateOptions {
  readonly maxTokens: number
  /** Resolved and validated by src/lib/sampling (resolveSamplingOptions). */
  readonly sampling: SamplingOptions
  /** Where the prompt starts in the cache (default: after what the cache holds). */
  readonly pos?: number
  /**
   * Tokens before `pos` that the penalties should see, oldest first (the reused prefix of a
   * session): with them the sampler's window is what a fresh evaluation of the whole sequence has.
   */
  readonly history?: readonly number[]
  /** Stops the generation (finish reason "aborted"); Ctrl+C in the CLI. */
  readonly signal?: AbortSignal
  /** Tokens that end generation (default: the tokenizer's end-of-generation set). */
  readonly stopTokens?: readonly number[]
  /**
   * Constrained decoding: a matcher at the start of its document (it is advanced by every token, and
   * busy for the generation). End-of-generation tokens are allowed exactly when the document is
   * complete; a complete document nothing can extend ends the generation ("eos").
   */
  readonly matcher?: GrammarMatcher
  /**
   * Decode group (DecodeGroup, of this context's model): the generated tokens are evaluated in its
   * steps, one forward pass for every member's next token; the tokens and log-probabilities are
   * bitwise those of generating alone.
   */
  readonly group?: DecodeGroup
  /**
   * Context shift (llama.cpp's --context-shift): when a generated token finds the context full, the
   * first `keep` positions stay (at most nCtx - 4), half of the rest after them is dropped, the later
   * keys re-roped, and the generation goes on. Refused (CONTEXT_SHIFT_UNSUPPORTED) on a context where
   * it cannot be exact (Context.contextShiftRefusal).
   */
  readonly contextShift?: {readonly keep: number}
  /**
   * Speculative decoding: the draft proposes, this context verifies every token with the same
   * sampler, so the tokens and log-probabilities are those of decoding without it. Needs `prefix`
   * when `pos` > 0; a generation with a draft decodes outside any decode group.
   */
  readonly draft?: Draft
  /** The tokens at positions [0, pos) (what the cache holds), for the draft; required with a draft. */
  readonly prefix?: readonly number[]
}

/** What a draft did in one generation. */
export interface DraftStats {
  /** Verify steps that carried drafted tokens. */
  readonly steps: number
  /** Drafted tokens evaluated. */
  readonly drafted: number
  /** Drafted tokens the target sampled (accepted / drafted: the acceptance rate). */
  readonly accepted: number
  /** Time proposing drafts (part of decodeMs). */
  readonly draftMs: number
}

export interface GeneratedToken {
  readonly token: number
  /** The text this token completes (may be empty while a UTF-8 sequence is incomplete). */
  readonly text: string
  /** log p(token) under the model (NaN unless sampling.logprobs). */
  readonly logprob: number
  readonly top?: ReadonlyArray<{readonly token: number; readonly logprob: number}>
  /** The grammar allowed only this token: it was taken without a draw. */
  readonly forced?: boolean
}

export type FinishReason = 'length' | 'eos' | 'aborted' | 'stopped' | 'context'
const FINISH: readonly FinishReason[] = ['length', 'eos', 'aborted', 'stopped', 'context']

export interface GenerationResult {
  readonly tokens: number[]
  /**
   * Tokens sampled but not yet in the KV cache: usually the last generated token (it is reported
   * before it would be evaluated), and the end-of-generation token on "eos". To continue the same
   * sequence, put these before the next prompt (at position `nPast`).
   */
  readonly pending: number[]
  /** Positions the KV cache holds after this generation. */
  readonly nPast: number
  readonly text: string
  readonly finishReason: FinishReason
  readonly promptTokens: number
  readonly promptMs: number
  readonly decodeMs: number
  /** Generated tokens the grammar forced (no draw). */
  readonly forcedTokens: number
  /** Part of decodeMs spent computing grammar masks. */
  readonly maskMs: number
  /** With a draft: what it proposed and what was accepted. */
  readonly draft?: DraftStats
  /**
   * Context shifts: how many, and the positions they dropped in all, which were
   * [keep, keep + discarded) of the sequence (prompt from position 0, then the generated tokens):
   * the cache holds the sequence without them.
   */
  readonly shifts: {readonly count: number; readonly keep: number; readonly discarded: number}
}

/**
 * A KV cache and scratch over a model. One call at a time (decode or generate); long calls run on a
 * worker thread, so the event loop stays free.
 */
export class Context {
  private handle: NativeContextHandle | undefined

  constructor(
    readonly model: Model,
    handle: NativeContextHandle,
    readonly options: Required<ContextOptions>,
  ) {
    this.handle = handle
  }

  private get native(): NativeContextHandle {
    if (!this.handle) throw new RunnerError('CONTEXT_DISPOSED', 'the context has been disposed')
    return this.handle
  }

  /** @internal The engine handle (a draft model's context is handed to its Draft). */
  get nativeHandle(): NativeContextHandle {
    return this.native
  }

  /** Bytes of the KV cache (layers whose attention was removed have none). */
  get kvBytes(): number {
    return loadAddon().kvBytes(this.native)
  }

  /** The KV cache as allocated, as a flat cache would be (bytes, flatBytes), and its sliding-window rings. */
  get kvInfo(): NativeKvInfo {
    return loadAddon().kvInfo(this.native)
  }

  /** The smallest nKeep > 0 kvTruncate accepts now (0: any): below it a ring lost the next token's window. */
  get kvMinKeep(): number {
    return loadAddon().kvMinKeep(this.native)
  }

  /** Positions of the KV cache that hold valid entries. */
  get nPast(): number {
    return loadAddon().nPast(this.native)
  }

  /**
   * Evaluate tokens at [pos, pos + n) (default pos: nPast). Returns the logits of the last token
   * ('last', n_vocab floats) or of every token ('all', n × n_vocab), or nothing ('none').
   */
  async decode(
    tokens: ArrayLike<number>,
    options: {pos?: number; logits?: LogitsMode; signal?: AbortSignal} = {},
  ): Promise<Float32Array | undefined> {
    const mode = options.logits ?? 'last'
    const ids = Int32Array.from(tokens)
    const nVocab = this.model.config.nVocab
    const out = mode === 'none' ? undefined : new Float32Array(mode === 'all' ? nVocab * ids.length : nVocab)
    const flags = abortFlags(options.signal)
    try {
      await loadAddon().decode(this.native, ids, options.pos ?? this.nPast, LOGITS_MODE[mode], out, flags.array)
    } catch (error) {
      throw engineError(error)
    } finally {
      flags.release()
    }
    return out
  }

  /**
   * Evaluate tokens at [pos, pos + n) (default pos: nPast) and return each token's hidden state
   * after the output norm (n × n_embd floats, row i for token i): what llama.cpp calls embeddings,
   * before any pooling. The LM head is not run; the KV cache is written exactly as decode writes it.
   */
  async hiddenStates(tokens: ArrayLike<number>, options: {pos?: number; signal?: AbortSignal} = {}): Promise<Float32Array> {
    const ids = Int32Array.from(tokens)
    const out = new Float32Array(this.model.config.nEmbd * ids.length)
    const flags = abortFlags(options.signal)
    try {
      await loadAddon().decode(this.native, ids, options.pos ?? this.nPast, EMBD_MODE, out, flags.array)
    } catch (error) {
      throw engineError(error)
    } finally {
      flags.release()
    }
    return out
  }

  /**
   * Why a context shift cannot be exact on this context (a sliding-window ring, a rope that a second
   * rotation would not leave a pure rotation), or undefined when it can.
   */
  get contextShiftRefusal(): string | undefined {
    return loadAddon().kvCanShift(this.native) ?? undefined
  }

  /** Refuse, by name and reason, a context shift this context cannot make exactly. */
  assertCanShift(what = 'context shift'): void {
    const why = this.contextShiftRefusal
    if (why !== undefined) throw new RunnerError('CONTEXT_SHIFT_UNSUPPORTED', `${what}: ${why}`, ExitCode.unsupported)
  }

  /** Drop positions [nKeep, nKeep + nDiscard) and move the later ones down, their keys re-roped (llama.cpp's K-shift). */
  kvShift(nKeep: number, nDiscard: number): void {
    try {
      loadAddon().kvShift(this.native, nKeep, nDiscard)
    } catch (error) {
      throw engineError(error)
    }
  }

  /** Forget every position at or after nKeep. */
  kvTruncate(nKeep: number): void {
    try {
      loadAddon().kvTruncate(this.native, nKeep)
    } catch (error) {
      throw engineError(error)
    }
  }

  /**
   * Evaluate the prompt, then sample up to maxTokens tokens, streaming each as it is made. The
   * whole loop runs in native code; tokens arrive through a thread-safe queue. Breaking out of the
   * iteration stops the generation (finish reason "stopped").
   */
  generate(prompt: ArrayLike<number>, options: GenerateOptions): TokenStream {
    return new TokenStream(this, Int32Array.from(prompt), options)
  }

  /** @internal */
  startGenerate(
    prompt: Int32Array,
    options: GenerateOptions,
    onToken: (token: number, logprob: number, topIds: Int32Array | null, topLogprobs: Float32Array | null, forced: boolean) => void,
    flags: Int32Array,
  ): {pos: number; done: Promise<NativeGenerateStats>} {
    const tok = this.model.tokenizer
    const s = options.sampling
    if (!Number.isInteger(options.maxTokens) || options.maxTokens < 0) {
      throw new RunnerError('GENERATE_BAD_OPTION', `maxTokens ${options.maxTokens} must be a non-negative integer`, ExitCode.usage)
    }
    if (prompt.length === 0) throw new RunnerError('GENERATE_EMPTY_PROMPT', 'the prompt has no tokens', ExitCode.usage)
    const pos = options.pos ?? this.nPast
    if (options.draft && (options.prefix?.length ?? 0) !== pos)
      throw new RunnerError('GENERATE_BAD_OPTION', `a draft needs the ${pos} tokens before position ${pos} as prefix`, ExitCode.usage)
    if (options.contextShift) this.assertCanShift()
    if (pos + prompt.length > this.options.nCtx) {
      throw new RunnerError(
        'CONTEXT_FULL',
        `the prompt (${prompt.length} tokens at position ${pos}) does not fit in the context of ${this.options.nCtx} tokens; use a larger context (-c) or a shorter prompt`,
        ExitCode.usage,
      )
    }
    const done = loadAddon().generate(
      this.native,
      {
        prompt,
        pos,
        ...(options.history && options.history.length > 0 ? {history: Int32Array.from(options.history)} : {}),
        maxTokens: options.maxTokens,
        eogTokens: Int32Array.from(options.stopTokens ?? [...tok.eogTokens]),
        sampling: {
          temperature: s.temperature,
          topK: s.topK,
          topP: s.topP,
          minP: s.minP,
          repeatPenalty: s.repeatPenalty,
          presencePenalty: s.presencePenalty,
          frequencyPenalty: s.frequencyPenalty,
          penaltyLastN: s.penaltyLastN,
          seed: s.seed,
          nTopLogprobs: s.topLogprobs,
          logprobs: s.logprobs,
          logitBias: [...(s.logitBias ?? new Map<number, number>()).entries()],
        },
        ...(options.matcher ? {matcher: options.matcher.handle} : {}),
        ...(options.group && !options.draft ? {group: options.group.handleFor(this.model)} : {}),
        ...(options.draft ? {draft: options.draft.native, prefix: Int32Array.from(options.prefix ?? [])} : {}),
        ...(options.contextShift ? {shiftKeep: this.shiftKeep(options.contextShift.keep)} : {}),
      },
      onToken,
      flags,
    )
    return {pos, done}
  }

  /** The positions a context shift keeps: as asked, at most nCtx - 4 (llama.cpp's server cap, which the engine applies too). */
  shiftKeep(keep: number): number {
    return Math.max(0, Math.min(Math.trunc(keep), this.options.nCtx - 4))
  }

  dispose(): void {
    if (this.handle) loadAddon().contextFree(this.handle)
    this.handle = undefined
  }
}

/** The tokens of one generation, as an async iterator, and its result once it ends. */
export class TokenStream implements AsyncIterable<GeneratedToken> {
  readonly result: Promise<GenerationResult>
  private readonly queue: GeneratedToken[] = []
  private wake: (() => void) | undefined
  private done = false
  private readonly flags: {array: Int32Array; release: () => void}

  constructor(ctx: Context, prompt: Int32Array, options: GenerateOptions) {
    this.flags = abortFlags(options.signal)
    const decoder = ctx.model.tokenizer.createStreamDecoder()
    const tokens: number[] = []
    let text = ''
    const onToken = (token: number, logprob: number, topIds: Int32Array | null, topLogprobs: Float32Array | null, forced: boolean) => {
      const piece = decoder.push(token)
      tokens.push(token)
      text += piece
      const top = topIds && topLogprobs ? Array.from(topIds, (id, i) => ({token: id, logprob: topLogprobs[i]!})) : undefined
      this.queue.push({token, text: piece, logprob, ...(top ? {top} : {}), ...(forced ? {forced} : {})})
      this.wake?.()
    }
    let started: {pos: number; done: Promise<NativeGenerateStats>}
    try {
      started = ctx.startGenerate(prompt, options, onToken, this.flags.array)
    } catch (error) {
      started = {pos: 0, done: Promise.reject(error)}
    }
    this.result = started.done.then(
      (stats) => {
        const tail = decoder.end()
        if (tail) {
          text += tail
          this.queue.push({token: -1, text: tail, logprob: 0})
        }
        // Whatever of prompt + generated (+ end-of-generation token) lies past what the cache holds.
        const nPast = ctx.nPast
        const sequence = [...prompt, ...tokens, ...(stats.eogToken >= 0 ? [stats.eogToken] : [])]
        const finishReason = FINISH[stats.finish]
        // runner_finish_reason and this table must agree: a reason it lacks is a stale or newer engine, never "length".
        if (finishReason === undefined) {
          throw new RunnerError(
            'ENGINE_INTERNAL',
            `the engine ended a generation with finish reason ${stats.finish}, which this runner does not know`,
          )
        }
        return {
          tokens,
          // A shift dropped nDiscarded positions before nPast: the pending ones lie that much further on.
          pending: sequence.slice(nPast + stats.nDiscarded - started.pos),
          nPast,
          text,
          finishReason,
          promptTokens: stats.nPrompt,
          promptMs: stats.promptMs,
          decodeMs: stats.decodeMs,
          forcedTokens: stats.nForced,
          maskMs: stats.maskMs,
          ...(options.draft
            ? {draft: {steps: stats.nDraftSteps, drafted: stats.nDrafted, accepted: stats.nAccepted, draftMs: stats.draftMs}}
            : {}),
          shifts: {
            count: stats.nShifts,
            keep: options.contextShift ? ctx.shiftKeep(options.contextShift.keep) : 0,
            discarded: stats.nDiscarded,
          },
        }
      },
      (error: unknown) => {
        throw engineError(error)
      },
    )
    this.result
      .finally(() => {
        this.done = true
        this.flags.release()
        this.wake?.()
      })
      .catch(() => {})
  }

  /** Ask the engine to stop after the current token (finish reason "stopped"). */
  stop(): void {
    this.flags.array[1] = 1
  }

  private iterated = false

  async *[Symbol.asyncIterator](): AsyncIterator<GeneratedToken> {
    if (this.iterated) throw new RunnerError('STREAM_ITERATED', 'a token stream can be iterated once; keep the tokens you need')
    this.iterated = true
    try {
      for (;;) {
        const next = this.queue.shift()
        if (next) {
          // The decoder's flush at the end carries token -1: text only.
          yield next
          continue
        }
        if (this.done) break
        await new Promise<void>((resolve) => {
          this.wake = resolve
        })
        this.wake = undefined
      }
      await this.result
    } finally {
      if (!this.done) this.stop()
    }
  }
}
