/**
 * Ollama's response shapes, as its clients' types define them (ollama-js `ChatResponse`,
 * `GenerateResponse`, `ModelResponse`, `ShowResponse`): the pieces of a stream, the final object
 * with `done: true`, `done_reason` and the timings in nanoseconds, and log-probabilities.
 */
import type {ToolCallOut} from '../tools/index.js'
import type {GenerationOutcome, TokenReport} from './generation.js'

export type OllamaKind = 'chat' | 'generate'

export interface OllamaMeta {
  readonly kind: OllamaKind
  /** The model name as the client sent it (Ollama echoes it). */
  readonly model: string
  /** Milliseconds the request waited for the model to load (0: it was loaded). */
  readonly loadMs?: number
}

/** Ollama's reasons: "stop" (end of text, a stop string), "length" (num_predict, a full context), "load". */
const DONE_REASON: Readonly<Record<GenerationOutcome['ended'], 'stop' | 'length'>> = {
  eos: 'stop',
  'stop-string': 'stop',
  stopped: 'stop',
  length: 'length',
  context: 'length',
}

const ns = (ms: number) => Math.round(ms * 1e6)

/** Ollama's log-probabilities: one entry per token, with its alternatives when top_logprobs > 0. */
export function ollamaLogprobs(tokens: readonly TokenReport[]): unknown[] {
  return tokens.map((t) => ({
    token: t.text,
    logprob: t.logprob,
    bytes: t.bytes,
    top_logprobs: t.top.map((x) => ({token: x.text, logprob: x.logprob, bytes: x.bytes})),
  }))
}

/** Ollama's calls: `[{function: {name, arguments: {...}}}]`, the arguments an object, no ids. */
function ollamaCalls(calls: readonly ToolCallOut[]): unknown[] {
  return calls.map((c) => ({function: {name: c.name, arguments: JSON.parse(c.arguments) as unknown}}))
}

/** The text of a chat message (and its calls) or of a generate response, under the field its kind uses. */
function content(kind: OllamaKind, text: string, calls: readonly ToolCallOut[] = []): Record<string, unknown> {
  if (kind !== 'chat') return {response: text}
  return {message: {role: 'assistant', content: text, ...(calls.length > 0 ? {tool_calls: ollamaCalls(calls)} : {})}}
}

/** One piece of a stream. */
export function ollamaChunk(
  meta: OllamaMeta,
  text: string,
  tokens: readonly TokenReport[] | undefined,
  calls: readonly ToolCallOut[] = [],
): unknown {
  return {
    model: meta.model,
    created_at: new Date().toISOString(),
    ...content(meta.kind, text, calls),
    done: false,
    ...(tokens ? {logprobs: ollamaLogprobs(tokens)} : {}),
  }
}

/**
 * The final object: the whole text when not streamed (`text`), empty after a stream. Durations in
 * nanoseconds: total from the request's arrival (queue included); load: the wait for the model to
 * load when this request found it unloaded (else 0); prompt and decode from the generation loop. prompt_eval_count is the prompt's tokens,
 * the prefix taken from the cache included.
 */
export function ollamaDone(
  meta: OllamaMeta,
  o: GenerationOutcome,
  text: string,
  arrivedAt: number,
  logprobs: boolean,
  calls: readonly ToolCallOut[] = [],
): unknown {
  return {
    model: meta.model,
    created_at: new Date().toISOString(),
    ...content(meta.kind, text, calls),
    done: true,
    done_reason: DONE_REASON[o.ended],
    total_duration: ns(performance.now() - arrivedAt),
    load_duration: ns(meta.loadMs ?? 0),
    prompt_eval_count: o.promptTokens,
    prompt_eval_duration: ns(o.timings.promptMs),
    eval_count: o.completionTokens,
    eval_duration: ns(o.timings.decodeMs),
    ...(logprobs ? {logprobs: ollamaLogprobs(o.tokens)} : {}),
  }
}

/** Ollama's answer to a request with nothing to generate: the model is loaded (now), or will unload after it. */
export function ollamaLoaded(meta: OllamaMeta, reason: 'load' | 'unload' = 'load'): unknown {
  return {model: meta.model, created_at: new Date().toISOString(), ...content(meta.kind, ''), done: true, done_reason: reason}
}
