/** OpenAI's response shapes: completions, chunks, usage and the two log-probability forms. */
import {randomBytes} from 'node:crypto'

import type {AnswerEvent, ParsedAnswer} from '../tools/index.js'
import type {GenerationOutcome, OpenAiFinishReason, TokenReport} from './generation.js'

/** A chat answer's finish reason: tool_calls when it made calls and ended on its own. */
export type ChatFinishReason = OpenAiFinishReason | 'tool_calls'

export function chatFinishReason(o: GenerationOutcome, answer: ParsedAnswer | undefined): ChatFinishReason {
  return answer && answer.calls.length > 0 && o.finishReason === 'stop' ? 'tool_calls' : o.finishReason
}

/** The assistant message of an answer read by the tools parser (content null when it only calls). */
function answerMessage(answer: ParsedAnswer): Record<string, unknown> {
  return {
    role: 'assistant',
    content: answer.calls.length > 0 && answer.content.length === 0 ? null : answer.content,
    refusal: null,
    ...(answer.reasoning.length > 0 ? {reasoning_content: answer.reasoning} : {}),
    ...(answer.calls.length > 0
      ? {tool_calls: answer.calls.map((c) => ({id: c.id, type: 'function', function: {name: c.name, arguments: c.arguments}}))}
      : {}),
  }
}

/**
 * The chunk deltas of one answer event, as OpenAI streams them: text as content, thinking as
 * reasoning_content, a call as its header (index, id, name, empty arguments) then its arguments.
 */
export function eventDeltas(e: AnswerEvent): Array<Record<string, unknown>> {
  if (e.type === 'text') return [{content: e.text}]
  if (e.type === 'reasoning') return [{reasoning_content: e.text}]
  return [
    {tool_calls: [{index: e.index, id: e.call.id, type: 'function', function: {name: e.call.name, arguments: ''}}]},
    {tool_calls: [{index: e.index, function: {arguments: e.call.arguments}}]},
  ]
}

export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly prompt_tokens_details: {readonly cached_tokens: number}
  /** Context shifts made (serve --context-shift), only when there were any. */
  readonly context_shifts?: number
}

export function usageOf(
  o: Pick<GenerationOutcome, 'promptTokens' | 'completionTokens' | 'cachedTokens'> & {readonly contextShifts?: number},
): Usage {
  return {
    prompt_tokens: o.promptTokens,
    completion_tokens: o.completionTokens,
    total_tokens: o.promptTokens + o.completionTokens,
    prompt_tokens_details: {cached_tokens: o.cachedTokens},
    ...(o.contextShifts ? {context_shifts: o.contextShifts} : {}),
  }
}

export function completionId(kind: 'chatcmpl' | 'cmpl'): string {
  return `${kind}-${randomBytes(12).toString('hex')}`
}

/** The chat form: `{content: [{token, logprob, bytes, top_logprobs: [...]}]}`. */
export function chatLogprobs(tokens: readonly TokenReport[]): {content: unknown[]} {
  return {
    content: tokens.map((t) => ({
      token: t.text,
      logprob: t.logprob,
      bytes: t.bytes,
      top_logprobs: t.top.map((x) => ({token: x.text, logprob: x.logprob, bytes: x.bytes})),
    })),
  }
}

/** The legacy completions form: parallel arrays, top alternatives as {text: logprob} objects. */
export function completionLogprobs(tokens: readonly TokenReport[]): {
  tokens: string[]
  token_logprobs: number[]
  top_logprobs: Array<Record<string, number>>
  text_offset: number[]
} {
  // Each token's own position in the completion: right when a stop string held text back, and
  // when a character spans several byte tokens (whose own texts are U+FFFD).
  const offsets = tokens.map((t) => t.offset)
  return {
    tokens: tokens.map((t) => t.text),
    token_logprobs: tokens.map((t) => t.logprob),
    top_logprobs: tokens.map((t) => Object.fromEntries(t.top.map((x) => [x.text, x.logprob]))),
    text_offset: offsets,
  }
}

export interface ResponseMeta {
  readonly id: string
  readonly created: number
  readonly model: string
  /** The build (./build-info.ts), on every completion and chunk as OpenAI and llama-server send it. */
  readonly systemFingerprint: string
}

/** One choice's generation and, for chat, its answer as the tools parser read it. */
export interface ChoiceResult {
  readonly outcome: GenerationOutcome
  readonly answer?: ParsedAnswer | undefined
}

/** Usage over n choices: the prompt once (they share its KV), the completions summed. */
export function usageOfChoices(results: readonly ChoiceResult[]): Usage {
  const first = results[0]!.outcome
  const completionTokens = results.reduce((sum, r) => sum + r.outcome.completionTokens, 0)
  const contextShifts = results.reduce((sum, r) => sum + r.outcome.contextShifts, 0)
  return usageOf({promptTokens: first.promptTokens, completionTokens, cachedTokens: first.cachedTokens, contextShifts})
}

export function chatCompletion(meta: ResponseMeta, results: readonly ChoiceResult[], logprobs: boolean): unknown {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: results.map(({outcome: o, answer}, index) => ({
      index,
      message: answer ? answerMessage(answer) : {role: 'assistant', content: o.text, refusal: null},
      logprobs: logprobs ? chatLogprobs(o.tokens) : null,
      finish_reason: chatFinishReason(o, answer),
    })),
    usage: usageOfChoices(results),
  }
}

interface ChunkExtra {
  /** The choice (n > 1). */
  readonly index?: number
  readonly logprobs?: unknown
  readonly finishReason?: ChatFinishReason | null
  readonly usage?: boolean
}

export function chatChunk(meta: ResponseMeta, delta: Record<string, unknown>, extra: ChunkExtra): unknown {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{index: extra.index ?? 0, delta, logprobs: extra.logprobs ?? null, finish_reason: extra.finishReason ?? null}],
    ...(extra.usage ? {usage: null} : {}),
  }
}

export function textCompletion(meta: ResponseMeta, results: readonly ChoiceResult[], logprobs: boolean): unknown {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: results.map(({outcome: o}, index) => ({
      index,
      text: o.text,
      logprobs: logprobs ? completionLogprobs(o.tokens) : null,
      finish_reason: o.finishReason,
    })),
    usage: usageOfChoices(results),
  }
}

export function textChunk(meta: ResponseMeta, text: string, extra: ChunkExtra): unknown {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{index: extra.index ?? 0, text, logprobs: extra.logprobs ?? null, finish_reason: extra.finishReason ?? null}],
    ...(extra.usage ? {usage: null} : {}),
  }
}

/** The last chunk of a stream with include_usage: no choices, the usage. */
export function usageChunk(meta: ResponseMeta, object: 'chat.completion.chunk' | 'text_completion', usage: Usage): unknown {
  return {id: meta.id, object, created: meta.created, model: meta.model, system_fingerprint: meta.systemFingerprint, choices: [], usage}
}
