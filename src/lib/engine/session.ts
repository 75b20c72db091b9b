import type {SamplingOptions} from '../sampling/index.js'
import type {Context, GenerateOptions, GenerationResult, TokenStream} from './context.js'
import type {DecodeGroup} from './decode-group.js'
import type {Draft} from './draft.js'

/** Length of the common prefix of two token sequences. */
export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  return i
}

/** The tokens before `reuse` that the penalties' window reaches (penaltyLastN of them at most). */
export function penaltyHistory(prompt: readonly number[], reuse: number, sampling: SamplingOptions): number[] {
  return prompt.slice(Math.max(0, reuse - sampling.penaltyLastN), reuse)
}

/** A sequence as the cache holds it after context shifts: [keep, keep + discarded) dropped. */
export function withoutShifted<T>(sequence: readonly T[], shifts: {readonly keep: number; readonly discarded: number}): T[] {
  if (shifts.discarded === 0) return [...sequence]
  return [...sequence.slice(0, shifts.keep), ...sequence.slice(shifts.keep + shifts.discarded)]
}

export interface SessionTurn {
  readonly stream: TokenStream
  /** Prompt tokens whose KV rows were reused instead of evaluated. */
  readonly cachedTokens: number
  /** Resolves once the generation ended and the session knows what its cache holds. */
  readonly result: Promise<GenerationResult>
}

/**
 * A context that remembers which tokens its KV cache holds, so a prompt that starts like the last
 * one (the next turn of a chat, a request with the same system prompt) evaluates only what differs.
 * Reuse is exact: the engine's logits do not depend on how a sequence was chunked, so a reused
 * prefix gives the same bits as evaluating the whole prompt again (test/lib/engine/session.test.ts).
 */
export class Session {
  private held: number[] = []

  /**
   * group: the decode group this session's generations step in (serve's slots share one); draft: the
   * speculative draft its generations use unless a request names its own (serve gives each slot one).
   */
  constructor(
    readonly context: Context,
    readonly group?: DecodeGroup,
    readonly draft?: Draft,
  ) {}

  /** The tokens whose KV rows the cache holds, in position order. */
  get cached(): readonly number[] {
    return this.held
  }

  /**
   * Prompt tokens a prompt would reuse from the cache (at least one token is always evaluated). With a
   * sliding-window ring, a prefix whose next token's window the ring has overwritten cannot be kept:
   * then nothing is reused (the ring holds only the latest positions, so no shorter prefix can be).
   */
  reusable(prompt: readonly number[]): number {
    const reuse = Math.max(0, Math.min(commonPrefixLength(this.held, prompt), prompt.length - 1))
    return reuse > 0 && reuse < this.context.kvMinKeep ? 0 : reuse
  }

  /** Forget the cache (the next prompt is evaluated from position 0). */
  reset(): void {
    this.context.kvTruncate(0)
    this.held = []
  }

  /**
   * Every token's hidden state after the output norm (Context.hiddenStates) for `tokens` evaluated
   * from position 0, as a fresh sequence: nothing is reused, since each token's state is wanted and
   * the cache keeps KV rows, not states. The KV rows written are the ones any decode of these tokens
   * writes, so afterwards the cache truthfully holds `tokens` and a later prompt may reuse them.
   */
  async hiddenStates(tokens: readonly number[], signal?: AbortSignal): Promise<Float32Array> {
    this.held = []
    try {
      const states = await this.context.hiddenStates(tokens, {pos: 0, ...(signal ? {signal} : {})})
      this.held = [...tokens]
      return states
    } catch (error) {
      // What was evaluated before the failure (an abort between chunks) is still valid.
      this.held = tokens.slice(0, Math.min(this.context.nPast, tokens.length))
      throw error
    }
  }

  /**
   * Generate after `prompt` (the whole sequence from position 0), reusing every cached prompt token
   * but the last (whose logits the first draw needs); the reused prefix reaches the penalties as
   * `history`, so the result is bitwise what a fresh context would give. `maxReuse` caps the reuse.
   */
  generate(
    prompt: readonly number[],
    options: Omit<GenerateOptions, 'pos' | 'history' | 'prefix'> & {readonly maxReuse?: number},
  ): SessionTurn {
    const {maxReuse, ...given} = options
    const rest = this.draft && !given.draft ? {...given, draft: this.draft} : given
    const capped = Math.max(0, Math.min(this.reusable(prompt), maxReuse ?? Infinity))
    // A cap can land below what a sliding-window ring still serves (kvMinKeep): then nothing is reused.
    const reuse = capped > 0 && capped < this.context.kvMinKeep ? 0 : capped
    this.context.kvTruncate(reuse)
    this.held = this.held.slice(0, reuse)
    const history = penaltyHistory(prompt, reuse, rest.sampling)
    const stream = this.context.generate(prompt.slice(reuse), {
      ...rest,
      pos: reuse,
      ...(history.length > 0 ? {history} : {}),
      ...(this.group && !rest.group ? {group: this.group} : {}),
      ...(rest.draft ? {prefix: prompt.slice(0, reuse)} : {}),
    })
    const result = stream.result.then(
      (r) => {
        // Every position the cache holds is a prompt or generated token, less what context shifts
        // dropped; the pending ones are not in it.
        this.held = withoutShifted([...prompt, ...r.tokens], r.shifts).slice(0, r.nPast)
        return r
      },
      (error: unknown) => {
        // A failure during the prompt leaves whatever part of it was evaluated.
        this.held = prompt.slice(0, Math.min(this.context.nPast, prompt.length))
        throw error
      },
    )
    // Callers that only iterate the stream see the error there; this copy must not go unhandled.
    result.catch(() => {})
    return {stream, cachedTokens: reuse, result}
  }
}
