/**
 * The one generation loop. Every caller (`runner run`, `runner chat`, the server's OpenAI and
 * Anthropic routes, receipt replay) goes through generate(): prompt → fit check → prefix reuse
 * (Session) → the native loop → stop strings → finish reason → usage and timings, with an abort
 * signal that stops the engine at once, in the prompt too.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {type Draft, type DraftStats, type FinishReason as EngineFinishReason, GrammarMatcher, type Session} from '../engine/index.js'
import type {Constraint} from '../grammar/index.js'
import type {SamplingOptions} from '../sampling/index.js'
import {EventQueue} from './event-queue.js'
import {fitPrompt} from './fit.js'
import {nativeGrammarOf} from './grammars.js'
import {type GenerationEvent, Release} from './release.js'
import type {TokenReport} from './token-report.js'

export interface GenerationRequest {
  /** The whole prompt, from position 0 (the session reuses what its cache already holds of it). */
  readonly prompt: readonly number[]
  /** Most tokens to generate (the engine also ends on a full context: finish reason "context"). */
  readonly maxTokens: number
  readonly sampling: SamplingOptions
  /** Text that ends the generation; the text returned stops before it. */
  readonly stop?: readonly string[]
  /** Tokens that end the generation (default: the tokenizer's end-of-generation set). */
  readonly stopTokens?: readonly number[]
  /** Stops the engine (finish reason "aborted"): Ctrl+C, a timeout, a client gone. */
  readonly signal?: AbortSignal
  /** Most prompt tokens to take from the cache (a scheduler that already chose). */
  readonly maxReuse?: number
  /**
   * Constrained decoding: every token is one the constraint allows, and the end of generation comes
   * exactly when the document is complete (finish reason "eos"; "length" if maxTokens ran out first).
   */
  readonly constraint?: Constraint
  /**
   * Speculative decoding (docs/speculative.md): the draft proposes tokens, the target verifies each
   * with its own sampler, so the outcome is the one without it; only the speed differs.
   */
  readonly draft?: Draft
  /**
   * Context shift (llama.cpp's --context-shift): a full context keeps its first `keep` tokens (the
   * system prompt, the whole prompt) and drops half of the rest, and the generation goes on instead of
   * ending with "context". Refused by name where it cannot be exact (a sliding-window ring).
   */
  readonly contextShift?: {readonly keep: number}
}

/**
 * Why a generation ended: an end-of-generation token, a stop string (GenerationOutcome.stopString
 * says which), the token budget, a full context, the abort signal, or the caller's stop().
 */
export type FinishReason = 'eos' | 'stop-string' | 'length' | 'context' | 'aborted' | 'stopped'

export interface GenerationUsage {
  /** Tokens of the prompt. */
  readonly promptTokens: number
  /** Prompt tokens whose KV rows came from the cache. */
  readonly cachedTokens: number
  /** Prompt tokens the engine evaluated (promptTokens - cachedTokens, unless it was aborted). */
  readonly evaluatedTokens: number
  /** Generated tokens that make up the answer (through the one that completed a stop string). */
  readonly completionTokens: number
  /** Generated tokens a constraint forced (the only one it allowed: no draw was made). */
  readonly forcedTokens: number
}

export interface GenerationTimings {
  /** Evaluating the prompt. */
  readonly promptMs: number
  /** Sampling and evaluating the generated tokens. */
  readonly decodeMs: number
  /** Part of decodeMs spent computing a constraint's token masks. */
  readonly maskMs: number
}

/** What a draft did (GenerationOutcome.draft): its source and counts. */
export interface DraftReport extends DraftStats {
  readonly source: Draft['settings']['source']
}

export interface GenerationOutcome {
  /** The answer's text: up to the stop string, if one matched. */
  readonly text: string
  /** The answer's token ids (the engine may have made one more before it saw the stop string). */
  readonly tokenIds: readonly number[]
  /** Per-token reports of the released tokens (log-probabilities, alternatives, text offsets). */
  readonly tokens: readonly TokenReport[]
  readonly finishReason: FinishReason
  readonly stopString: string | undefined
  readonly usage: GenerationUsage
  readonly timings: GenerationTimings
  /** With a draft: its source, the tokens it proposed and how many the target took. */
  readonly draft?: DraftReport
  /** Context shifts made (request.contextShift), and the tokens they dropped in all. */
  readonly shifts: {readonly count: number; readonly discarded: number}
}

/** The events of one generation; leaving the iteration early stops it (finish reason "stopped"). */
export interface GenerationEvents extends AsyncIterable<GenerationEvent> {
  /** Ask the engine to stop after the current token (finish reason "stopped"). */
  stop(): void
}

export interface Generation {
  /** What becomes final, step by step: text past any held-back stop string, and token reports. */
  readonly events: GenerationEvents
  /** Resolves once the engine has let go of the context; rejects on an engine error. */
  readonly result: Promise<GenerationOutcome>
  /** Prompt tokens reused from the cache (known at once). */
  readonly cachedTokens: number
}

/** The engine's reasons, by name; a stop string (which the engine sees as "stopped") is decided here. */
const ENGINE_FINISH: Readonly<Record<EngineFinishReason, FinishReason>> = {
  eos: 'eos',
  length: 'length',
  context: 'context',
  aborted: 'aborted',
  stopped: 'stopped',
}

/**
 * Start a generation on a session. Refuses synchronously what cannot run (a hook not built yet, a
 * prompt that does not fit); everything after that arrives through `events` and `result`.
 */
export function generate(session: Session, request: GenerationRequest): Generation {
  const nCtx = session.context.options.nCtx
  const fit = fitPrompt(request.prompt.length, nCtx)
  if (!fit.fits) {
    throw new RunnerError(
      'CONTEXT_FULL',
      `the prompt (${fit.promptTokens} tokens) does not fit in the context of ${nCtx} tokens; use a larger context (-c) or a shorter prompt`,
      ExitCode.usage,
    )
  }
  const tokenizer = session.context.model.tokenizer
  // The request's draft, else the session's (serve's slots each hold one).
  const draft = request.draft ?? session.draft
  const matcher = request.constraint ? GrammarMatcher.create(nativeGrammarOf(request.constraint), tokenizer) : undefined
  let turn: ReturnType<Session['generate']>
  try {
    turn = session.generate(request.prompt, {
      maxTokens: request.maxTokens,
      sampling: request.sampling,
      signal: request.signal,
      stopTokens: request.stopTokens,
      maxReuse: request.maxReuse,
      ...(matcher ? {matcher} : {}),
      ...(request.draft ? {draft: request.draft} : {}),
      ...(request.contextShift ? {contextShift: request.contextShift} : {}),
    })
  } catch (error) {
    matcher?.dispose()
    throw error
  }
  const release = new Release(session.context.model.tokenizer, request.stop ?? [])
  const queue = new EventQueue<GenerationEvent>(() => turn.stream.stop())
  const events: GenerationEvents = {[Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](), stop: () => turn.stream.stop()}

  const drive = async (): Promise<GenerationOutcome> => {
    for await (const t of turn.stream) {
      queue.push(release.push(t))
      // Leaving the stream stops the engine after this token.
      if (release.stopped) break
    }
    const r = await turn.result
    const stopped = release.countAtStop >= 0
    // A generation that matched a stop string just as the signal fired is still a complete answer;
    // an aborted one keeps only what was already released.
    if (!stopped && r.finishReason !== 'aborted') queue.push(release.flush())
    const completionTokens = stopped ? release.countAtStop : release.ids.length
    return {
      text: release.text,
      tokenIds: release.ids.slice(0, completionTokens),
      tokens: release.tokens,
      finishReason: stopped ? 'stop-string' : ENGINE_FINISH[r.finishReason],
      stopString: release.stopString,
      usage: {
        promptTokens: request.prompt.length,
        cachedTokens: turn.cachedTokens,
        evaluatedTokens: r.promptTokens,
        completionTokens,
        // The answer's tokens the constraint forced (the engine's count may include one past a stop string).
        forcedTokens: release.tokens.slice(0, completionTokens).filter((t) => t.forced).length,
      },
      timings: {promptMs: r.promptMs, decodeMs: r.decodeMs, maskMs: r.maskMs},
      ...(r.draft && draft ? {draft: {source: draft.settings.source, ...r.draft}} : {}),
      shifts: {count: r.shifts.count, discarded: r.shifts.discarded},
    }
  }
  const result = drive()
    .finally(() => matcher?.dispose())
    .then(
      (outcome) => {
        queue.end()
        return outcome
      },
      async (error: unknown) => {
        // The engine may still hold the context (an error in the stream before its end): wait for it.
        await turn.result.catch(() => {})
        queue.end({error})
        throw error
      },
    )
  // The matcher is the engine's until its loop has returned: free it only then, whatever happened.
  if (matcher) void turn.result.catch(() => {}).finally(() => matcher.dispose())
  // Callers that only iterate the events see the error there; this copy must not go unhandled.
  result.catch(() => {})
  return {events, result, cachedTokens: turn.cachedTokens}
}
