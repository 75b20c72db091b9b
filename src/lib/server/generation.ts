/**
 * One request's generation on a slot: wait for a slot, generate with prefix reuse, apply stop
 * strings (text that may still become a stop string is held back), and report text and per-token
 * log-probabilities as they become final. The slot is released only once the engine has settled,
 * whatever happened (error, abort, client gone), so no request can leak one.
 */
import type {FinishReason} from '../engine/context.js'
import {reuseLimit} from '../engine/session.js'
import type {SamplingOptions} from '../sampling/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {ApiError} from './api-error.js'
import type {Metrics} from './metrics.js'
import type {Scheduler} from './scheduler.js'
import {StopMatcher} from './stop-strings.js'

export interface GenerationRequest {
  /** The whole prompt, from position 0. */
  readonly prompt: readonly number[]
  readonly maxTokens: number
  readonly sampling: SamplingOptions
  readonly stop: readonly string[]
}

export interface TokenReport {
  readonly token: number
  /** The token's own text (its piece; bytes of an incomplete UTF-8 sequence shown as U+FFFD). */
  readonly text: string
  readonly bytes: number[]
  readonly logprob: number
  readonly top: ReadonlyArray<{readonly token: number; readonly text: string; readonly bytes: number[]; readonly logprob: number}>
  /** Where the token's text starts in the completion's text (UTF-16 code units): completions' text_offset. */
  readonly offset: number
}

export interface GenerationDelta {
  readonly text: string
  readonly tokens: readonly TokenReport[]
}

export type OpenAiFinishReason = 'stop' | 'length'

export interface GenerationOutcome {
  readonly text: string
  readonly finishReason: OpenAiFinishReason
  /** Why generation ended, finer than OpenAI's two reasons: an end-of-text token, a stop string, or the token budget. */
  readonly ended: 'eos' | 'stop-string' | 'length'
  /** The stop string that matched, when one did. */
  readonly stopString: string | undefined
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  readonly tokens: readonly TokenReport[]
  /** Generated token ids that make up the answer (the engine may have made one more before it saw a stop). */
  readonly tokenIds: readonly number[]
}

const FINISH: Readonly<Record<Exclude<FinishReason, 'aborted'>, OpenAiFinishReason>> = {eos: 'stop', stopped: 'stop', length: 'length', context: 'length'}

export interface GenerationContext {
  readonly scheduler: Scheduler
  readonly metrics: Metrics
  readonly tokenizer: Tokenizer
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
  const {scheduler, metrics, tokenizer} = env
  const maxReuse = reuseLimit(request.prompt)
  const lease = await scheduler.acquire(request.prompt, signal, maxReuse)
  const t0 = performance.now()
  let settled: Promise<unknown> = Promise.resolve()
  try {
    const turn = lease.slot.session.generate(request.prompt, {maxTokens: request.maxTokens, sampling: request.sampling, signal, maxReuse})
    settled = turn.result.catch(() => {})
    const matcher = new StopMatcher(request.stop)
    const reports: Array<Omit<TokenReport, 'offset'> & {start: number; end: number}> = []
    const ids: number[] = []
    let text = ''
    let generatedText = ''
    let released = 0
    let countAtStop = -1
    const emit = (piece: string, all: boolean) => {
      text += piece
      const out: TokenReport[] = []
      while (released < reports.length) {
        const r = reports[released]!
        if (!(all || r.end <= text.length || (matcher.matched && r.start < text.length))) break
        if (matcher.matched && r.start >= text.length && r.end > r.start) break
        out.push(stripOffsets(r))
        released++
      }
      if (piece.length > 0 || out.length > 0) onDelta({text: piece, tokens: out})
    }
    for await (const t of turn.stream) {
      if (t.token >= 0) {
        const start = generatedText.length
        generatedText += t.text
        ids.push(t.token)
        reports.push({...tokenReport(tokenizer, t.token, t.logprob, t.top), start, end: generatedText.length})
      } else {
        generatedText += t.text
      }
      const piece = matcher.push(t.text)
      if (matcher.matched) {
        countAtStop = ids.length
        emit(piece, false)
        break
      }
      emit(piece, false)
    }
    const result = await turn.result
    // Aborted (timeout, client gone, shutdown): the reason is the signal's. A generation that ended
    // on its own (or at a stop string) just as the signal fired is still a complete answer.
    const seconds = (performance.now() - t0) / 1000
    if (result.finishReason === 'aborted' && countAtStop < 0) {
      // The slot's time and tokens were spent even though no answer goes out.
      metrics.recordGeneration(request.prompt.length, ids.length, turn.cachedTokens, seconds)
      throw signal.reason ?? new ApiError(500, 'the generation was aborted')
    }
    if (countAtStop < 0) emit(matcher.flush(), true)
    const completionTokens = countAtStop >= 0 ? countAtStop : ids.length
    metrics.recordGeneration(request.prompt.length, completionTokens, turn.cachedTokens, seconds)
    return {
      text,
      finishReason: countAtStop >= 0 ? 'stop' : FINISH[result.finishReason as Exclude<FinishReason, 'aborted'>],
      ended: countAtStop >= 0 ? 'stop-string' : FINISH[result.finishReason as Exclude<FinishReason, 'aborted'>] === 'stop' ? 'eos' : 'length',
      stopString: matcher.which,
      promptTokens: request.prompt.length,
      completionTokens,
      cachedTokens: turn.cachedTokens,
      tokens: reports.slice(0, released).map(stripOffsets),
      tokenIds: ids.slice(0, completionTokens),
    }
  } finally {
    // The context is busy until the engine returns: release the slot only then.
    void settled.finally(() => lease.release())
  }
}

function stripOffsets(r: Omit<TokenReport, 'offset'> & {start: number; end: number}): TokenReport {
  return {token: r.token, text: r.text, bytes: r.bytes, logprob: r.logprob, top: r.top, offset: r.start}
}

function tokenReport(tokenizer: Tokenizer, token: number, logprob: number, top: ReadonlyArray<{token: number; logprob: number}> | undefined): Omit<TokenReport, 'offset'> {
  const piece = (id: number) => {
    const bytes = tokenizer.pieceBytes(id)
    return {text: Buffer.from(bytes).toString('utf8'), bytes: [...bytes]}
  }
  return {token, ...piece(token), logprob, top: (top ?? []).map((t) => ({token: t.token, ...piece(t.token), logprob: t.logprob}))}
}
