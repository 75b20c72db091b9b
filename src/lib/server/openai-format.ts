/** OpenAI's response shapes: completions, chunks, usage and the two log-probability forms. */
import {randomBytes} from 'node:crypto'

import type {GenerationOutcome, OpenAiFinishReason, TokenReport} from './generation.js'

export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly prompt_tokens_details: {readonly cached_tokens: number}
}

export function usageOf(o: Pick<GenerationOutcome, 'promptTokens' | 'completionTokens' | 'cachedTokens'>): Usage {
  return {
    prompt_tokens: o.promptTokens,
    completion_tokens: o.completionTokens,
    total_tokens: o.promptTokens + o.completionTokens,
    prompt_tokens_details: {cached_tokens: o.cachedTokens},
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

export function chatCompletion(meta: ResponseMeta, o: GenerationOutcome, logprobs: boolean): unknown {
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [
      {
        index: 0,
        message: {role: 'assistant', content: o.text, refusal: null},
        logprobs: logprobs ? chatLogprobs(o.tokens) : null,
        finish_reason: o.finishReason,
      },
    ],
    usage: usageOf(o),
  }
}

export function chatChunk(
  meta: ResponseMeta,
  delta: Record<string, unknown>,
  extra: {logprobs?: unknown; finishReason?: OpenAiFinishReason | null; usage?: boolean},
): unknown {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{index: 0, delta, logprobs: extra.logprobs ?? null, finish_reason: extra.finishReason ?? null}],
    ...(extra.usage ? {usage: null} : {}),
  }
}

export function textCompletion(meta: ResponseMeta, o: GenerationOutcome, logprobs: boolean): unknown {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{index: 0, text: o.text, logprobs: logprobs ? completionLogprobs(o.tokens) : null, finish_reason: o.finishReason}],
    usage: usageOf(o),
  }
}

export function textChunk(
  meta: ResponseMeta,
  text: string,
  extra: {logprobs?: unknown; finishReason?: OpenAiFinishReason | null; usage?: boolean},
): unknown {
  return {
    id: meta.id,
    object: 'text_completion',
    created: meta.created,
    model: meta.model,
    system_fingerprint: meta.systemFingerprint,
    choices: [{index: 0, text, logprobs: extra.logprobs ?? null, finish_reason: extra.finishReason ?? null}],
    ...(extra.usage ? {usage: null} : {}),
  }
}

/** The last chunk of a stream with include_usage: no choices, the usage. */
export function usageChunk(meta: ResponseMeta, object: 'chat.completion.chunk' | 'text_completion', usage: Usage): unknown {
  return {id: meta.id, object, created: meta.created, model: meta.model, system_fingerprint: meta.systemFingerprint, choices: [], usage}
}
