/**
 * From a validated request body to what the engine runs: the prompt tokens (a chat history rendered
 * through the model's template, or a completion prompt), the token budget, sampling options and stop
 * strings. Every field is honoured or refused here by name.
 */
import {type ChatTemplate, validateHistory} from '../chat/index.js'
import {fitPrompt} from '../generate/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {resolveSamplingOptions} from '../sampling/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import type {AnswerOptions} from '../tools/index.js'
import {buildChatPrompt} from './chat-prompt.js'
import type {PromptWork} from './prompt-work.js'
import {checkRequestLimits, LIMITED_FIELDS, refuseUnfittable, type RequestLimits} from './request-limits.js'
import type {GenerationRequest} from './generation.js'
import {type ModelIds, requireModel} from './model-ids.js'
import {CHAT_SCHEMA, COMPLETION_SCHEMA, validateBody} from './schemas.js'
import {openAiResponseFormat} from './structured.js'
import {openAiTools} from './tool-fields.js'

export interface PreparedRequest extends GenerationRequest {
  readonly stream: boolean
  readonly includeUsage: boolean
  /** Report log-probabilities (and how many alternatives). */
  readonly logprobs: boolean
  /** How to read the answer (thinking, tool calls); undefined: plain text. */
  readonly answer?: AnswerOptions
  /** Choices to generate (n), each with the seed moved on by its index. */
  readonly n: number
}

export interface RequestEnv {
  /** The served id (modelIds.served): what responses name. */
  readonly modelId: string
  /** Every id `model` may name (./model-ids.ts). */
  readonly modelIds: ModelIds
  /** The build, as chat and text completions carry it (./build-info.ts). */
  readonly systemFingerprint: string
  readonly tokenizer: Tokenizer
  readonly template: ChatTemplate
  /** Rendering and tokenizing, off the event loop (./prompt-work.ts). */
  readonly work: PromptWork
  /** Positions of one slot's KV cache. */
  readonly nCtx: number
  /** --context-shift: a completion may outgrow the slot (a full context shifts), so max_tokens is not held to it. */
  readonly contextShift?: boolean
  /** What one request may hold (./request-limits.ts). */
  readonly limits: RequestLimits
}

/** Which request field each sampling option came from, so its refusal names the field. */
const SAMPLING_PARAMS: Readonly<Record<string, string>> = {
  temperature: 'temperature',
  topK: 'top_k',
  topP: 'top_p',
  minP: 'min_p',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
  seed: 'seed',
  topLogprobs: 'top_logprobs',
  logitBias: 'logit_bias',
}

type Body = Record<string, unknown>

function opt<T>(body: Body, key: string): T | undefined {
  const v = body[key]
  return v === null || v === undefined ? undefined : (v as T)
}

export function checkModel(env: RequestEnv, body: Body): void {
  requireModel(env.modelIds, body.model as string)
}

/** The history options of the OpenAI routes: tools, prefills, system messages where the template can render them. */
const OPENAI_HISTORY = {endWith: 'any', tools: true, systemAnywhere: true} as const

const openAiAt = (i: number) => `messages[${i}]`

/** The rendered chat prompt (what /apply-template returns), with tools when the body gives them. */
export async function renderChat(env: RequestEnv, body: Body, options: {addGenerationPrompt?: boolean} = {}): Promise<string> {
  checkRequestLimits(body, LIMITED_FIELDS.applyTemplate, env.limits)
  const history = openAiHistory(body)
  const input = {messages: history, tools: openAiTools(body), api: 'openai', at: openAiAt, fitContext: false, ...options} as const
  return (await buildChatPrompt(env, input)).rendered
}

/** The body's messages as a validated history, a refusal in the API's shape. */
function openAiHistory(body: Body) {
  try {
    return validateHistory(body.messages, 'messages', OPENAI_HISTORY)
  } catch (error) {
    throw toApiError(error)
  }
}

export async function prepareChat(env: RequestEnv, raw: unknown): Promise<PreparedRequest> {
  const body = validateBody(CHAT_SCHEMA, raw)
  checkRequestLimits(body, LIMITED_FIELDS.openAiChat, env.limits)
  checkModel(env, body)
  const format = openAiResponseFormat(opt(body, 'response_format'))
  const maxTokens = opt<number>(body, 'max_tokens')
  const maxCompletion = opt<number>(body, 'max_completion_tokens')
  if (maxTokens !== undefined && maxCompletion !== undefined && maxTokens !== maxCompletion) {
    throw badParam('max_completion_tokens', `max_completion_tokens = ${maxCompletion} and max_tokens = ${maxTokens} disagree; give one`)
  }
  const logprobs = opt<boolean>(body, 'logprobs') ?? false
  const topLogprobs = opt<number>(body, 'top_logprobs')
  if (topLogprobs !== undefined && topLogprobs > 0 && !logprobs) throw badParam('top_logprobs', 'top_logprobs needs logprobs: true')
  const messages = openAiHistory(body)
  const tools = openAiTools(body)
  if (format && tools.choice.mode !== 'none') {
    throw badParam('response_format', 'response_format with tools is not supported: give tool_choice "none", or leave response_format out')
  }
  const variables = opt<Record<string, unknown>>(body, 'chat_template_kwargs')
  const chat = await buildChatPrompt(env, {messages, tools, api: 'openai', at: openAiAt, ...(variables ? {variables} : {})})
  const prepared = finish(env, body, chat.prompt, 'messages', maxCompletion ?? maxTokens, logprobs, topLogprobs ?? 0)
  const constraint = format ?? chat.constraint
  return {...prepared, ...(constraint ? {constraint} : {}), ...(chat.answer ? {answer: chat.answer} : {})}
}

/** OpenAI's default for /v1/completions max_tokens. */
export const COMPLETION_DEFAULT_MAX_TOKENS = 16

export async function prepareCompletion(env: RequestEnv, raw: unknown): Promise<PreparedRequest> {
  const body = validateBody(COMPLETION_SCHEMA, raw)
  checkRequestLimits(body, LIMITED_FIELDS.openAiCompletion, env.limits)
  checkModel(env, body)
  const p = body.prompt as string | string[] | number[]
  let prompt: number[]
  if (typeof p === 'string' || typeof p[0] === 'string') {
    const text = typeof p === 'string' ? p : (p[0] as string)
    refuseUnfittable(env.tokenizer, env.nCtx, text.length, 'prompt')
    // The same tokens `runner run -p TEXT` evaluates: BOS as the vocabulary asks, special tokens as text.
    prompt = await env.work.encode(text, {addSpecial: true, parseSpecial: false})
    if (prompt.length === 0) throw badParam('prompt', 'prompt is empty')
  } else {
    prompt = p as number[]
    prompt.forEach((id, i) => {
      if (id >= env.tokenizer.vocabSize)
        throw badParam(`prompt[${i}]`, `prompt[${i}] = ${id} is not a token id (the vocabulary has ${env.tokenizer.vocabSize})`)
    })
  }
  const logprobs = opt<number>(body, 'logprobs')
  return finish(
    env,
    body,
    prompt,
    'prompt',
    opt<number>(body, 'max_tokens') ?? COMPLETION_DEFAULT_MAX_TOKENS,
    logprobs !== undefined,
    logprobs ?? 0,
  )
}

function finish(
  env: RequestEnv,
  body: Body,
  prompt: number[],
  promptParam: string,
  maxTokens: number | undefined,
  logprobs: boolean,
  topLogprobs: number,
): PreparedRequest {
  // At least one position for the completion, and max_tokens of them when it is given.
  const fit = fitPrompt(prompt.length, env.nCtx, Math.max(1, maxTokens ?? 0))
  if (fit.promptAlone) {
    throw new ApiError(
      400,
      `This model's maximum context length is ${env.nCtx} tokens per slot (--ctx). However, your ${promptParam} resulted in ${prompt.length} tokens, which leaves no room for a completion`,
      promptParam,
      'context_length_exceeded',
    )
  }
  if (maxTokens !== undefined && !fit.fits && !env.contextShift) {
    throw new ApiError(
      400,
      `This model's maximum context length is ${env.nCtx} tokens per slot (--ctx). However, you requested ${prompt.length + maxTokens} tokens (${prompt.length} in the ${promptParam}, ${maxTokens} in the completion)`,
      body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? 'max_completion_tokens' : 'max_tokens',
      'context_length_exceeded',
    )
  }
  const seed = opt<number>(body, 'seed')
  // JSON numbers are doubles: beyond 2^53 the client's seed would already have been rounded.
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0)) {
    throw badParam('seed', `seed = ${seed} must be an integer in [0, 2^53) (larger seeds cannot pass through a JSON number exactly)`)
  }
  const bias = opt<Record<string, number>>(body, 'logit_bias')
  for (const key of Object.keys(bias ?? {})) {
    if (Number(key) >= env.tokenizer.vocabSize) {
      throw badParam('logit_bias', `logit_bias names token ${key}, but the vocabulary has ${env.tokenizer.vocabSize} tokens`)
    }
  }
  const stop = opt<string | string[]>(body, 'stop')
  const stream = opt<boolean>(body, 'stream') ?? false
  const streamOptions = opt<{include_usage?: boolean}>(body, 'stream_options')
  if (streamOptions !== undefined && !stream) throw badParam('stream_options', 'stream_options is only allowed when stream is true')
  let sampling
  try {
    sampling = resolveSamplingOptions({
      temperature: opt(body, 'temperature'),
      topK: opt(body, 'top_k'),
      topP: opt(body, 'top_p'),
      minP: opt(body, 'min_p'),
      presencePenalty: opt(body, 'presence_penalty'),
      frequencyPenalty: opt(body, 'frequency_penalty'),
      seed,
      logprobs,
      topLogprobs,
      logitBias: bias,
    })
  } catch (error) {
    throw toApiError(error, SAMPLING_PARAMS)
  }
  return {
    prompt,
    maxTokens: maxTokens ?? env.nCtx - prompt.length,
    sampling,
    stop: stop === undefined ? [] : typeof stop === 'string' ? [stop] : stop,
    stream,
    includeUsage: streamOptions?.include_usage ?? false,
    logprobs,
    n: opt<number>(body, 'n') ?? 1,
  }
}
