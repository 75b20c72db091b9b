/**
 * One request's generation on a slot: wait for a slot, run the generation loop (src/lib/generate:
 * prefix reuse, stop strings held back, token reports) and hand final text and reports to the
 * caller as they become final. The slot is released only once the engine has settled, whatever
 * happened (error, abort, client gone), so no request can leak one.
 */
import {
  type FinishReason,
  generate,
  type GenerationOutcome as LoopOutcome,
  type GenerationTimings,
  keptTokens,
  type TokenReport,
} from '../generate/index.js'
import type {Constraint} from '../grammar/index.js'
import type {SamplingOptions} from '../sampling/index.js'
import {ApiError} from './api-error.js'
import type {Metrics} from './metrics.js'
import {countRequestTokens} from './request-log.js'
import type {Scheduler} from './scheduler.js'

export type {TokenReport} from '../generate/index.js'

export interface GenerationRequest {
  /** The whole prompt, from position 0. */
  readonly prompt: readonly number[]
  readonly maxTokens: number
  readonly sampling: SamplingOptions
  readonly stop: readonly string[]
  /** Structured output: response_format / output_config compiled (./structured.ts). */
  readonly constraint?: Constraint
}

export interface GenerationDelta {
  readonly text: string
  readonly tokens: readonly TokenReport[]
}

export type OpenAiFinishReason = 'stop' | 'length'

export interface GenerationOutcome {
  readonly text: string
  readonly finishReason: OpenAiFinishReason
  /** Why generation ended, finer than OpenAI's two reasons (the loop's vocabulary). */
  readonly ended: Exclude<FinishReason, 'aborted'>
  /** The stop string that matched, when one did. */
  readonly stopString: string | undefined
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly tokens: readonly TokenReport[]
  /** Generated token ids that make up the answer (the engine may have made one more before it saw a stop). */
  readonly tokenIds: readonly number[]
  /** Time in the prompt and in decoding (Ollama reports both). */
  readonly timings: GenerationTimings
  /** Context shifts the generation made (--context-shift). */
  readonly contextShifts: number
}

/** OpenAI's two reasons; the server never stops a generation itself, so "stopped" cannot occur but maps like an end. */
const OPENAI_FINISH: Readonly<Record<Exclude<FinishReason, 'aborted'>, OpenAiFinishReason>> = {
  eos: 'stop',
  'stop-string': 'stop',
  stopped: 'stop',
  length: 'length',
  context: 'length',
}

export interface GenerationContext {
  readonly scheduler: Scheduler
  readonly metrics: Metrics
  /**
   * llama-server's --context-shift with its --keep N (prompt tokens after BOS; -1: the whole prompt): a
   * full slot drops half of what follows them and the generation goes on.
   */
  readonly contextShift?: {readonly keep: number}
}

/**
 * Run a request. `onDelta` receives final text (and token reports) as soon as it cannot change.
 * Aborting `signal` (timeout, client gone, shutdown) stops the engine at once, in the prompt too,
 * and rejects with the signal's reason.
 */
export async function runGeneration(
  env: GenerationContext,
  request: GenerationRequest,
  signal: AbortSignal,
  onDelta: (delta: GenerationDelta) => void = () => {},
): Promise<GenerationOutcome> {
  const {scheduler, metrics} = env
  // The scheduler picks a slot by the prefix its session will reuse (every cached prompt token but the last).
  const lease = await scheduler.acquire(request.prompt, signal)
  const t0 = performance.now()
  let settled: Promise<unknown> = Promise.resolve()
  try {
    const shift = env.contextShift
    const bos = lease.slot.session.context.model.tokenizer.bos
    const generation = generate(lease.slot.session, {
      prompt: request.prompt,
      maxTokens: request.maxTokens,
      sampling: request.sampling,
      stop: request.stop,
      signal,
      ...(request.constraint ? {constraint: request.constraint} : {}),
      ...(shift ? {contextShift: {keep: keptTokens(request.prompt, shift.keep, bos)}} : {}),
    })
    settled = generation.result.catch(() => {})
    for await (const e of generation.events) if (e.text.length > 0 || e.tokens.length > 0) onDelta({text: e.text, tokens: e.tokens})
    const o = await generation.result
    const seconds = (performance.now() - t0) / 1000
    // The slot's time and tokens were spent even when no answer goes out.
    metrics.recordGeneration(o.usage.promptTokens, o.usage.completionTokens, o.usage.cachedTokens, seconds)
    countRequestTokens(o.usage.promptTokens, o.usage.completionTokens)
    if (o.draft) metrics.recordDraft(o.draft.drafted, o.draft.accepted, o.draft.steps)
    // Aborted (timeout, client gone, shutdown): the reason is the signal's. A generation that ended
    // on its own (or at a stop string) just as the signal fired is still a complete answer.
    if (o.finishReason === 'aborted') throw signal.reason ?? new ApiError(500, 'the generation was aborted')
    return answer(o, o.finishReason)
  } finally {
    // The context is busy until the engine returns: release the slot only then.
    void settled.finally(() => lease.release())
  }
}

function answer(o: LoopOutcome, ended: Exclude<FinishReason, 'aborted'>): GenerationOutcome {
  return {
    text: o.text,
    finishReason: OPENAI_FINISH[ended],
    ended,
    stopString: o.stopString,
    promptTokens: o.usage.promptTokens,
    completionTokens: o.usage.completionTokens,
    cachedTokens: o.usage.cachedTokens,
    tokens: o.tokens,
    tokenIds: o.tokenIds,
    timings: o.timings,
    contextShifts: o.shifts.count,
  }
}
