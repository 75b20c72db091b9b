/**
 * Ollama's request bodies (`/api/chat`, `/api/generate`) to what the engine runs: the prompt tokens,
 * the token budget, sampling options, stop strings and the constraint of `format`. Every field and
 * every `options` key Ollama defines is honoured or refused here by name; the refusal is a 400 the
 * routes write in Ollama's shape (`{"error": "options.mirostat: ..."}`).
 *
 * Tools on /api/chat: Ollama's `tools` are OpenAI's shape; its calls carry no ids, so the history's
 * calls get ids here and each `tool` message answers the next unanswered call of the turn before it
 * (its `tool_name`, when given, must name that call's function). There is no tool_choice: the model
 * decides, and a call it writes is read back into `message.tool_calls`.
 */
import {own} from '../util/index.js'
import {type ChatToolCall, validateHistory} from '../chat/index.js'
import type {AnswerOptions} from '../tools/index.js'
import {fitPrompt} from '../generate/index.js'
import {MAX_TOP_LOGPROBS, resolveSamplingOptions} from '../sampling/index.js'
import {requestKeepAlive} from './keep-alive.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import type {GenerationRequest} from './generation.js'
import {buildChatPrompt} from './chat-prompt.js'
import type {RequestEnv} from './requests.js'
import {validateBody} from './schemas.js'
import {checkRequestLimits, LIMITED_FIELDS, refuseUnfittable} from './request-limits.js'
import {ollamaFormat} from './structured.js'
import {openAiTools, type RequestTools} from './tool-fields.js'

/** A request ready for a slot, or Ollama's "load the model" request (no messages, no prompt). */
export type OllamaPrepared = OllamaGeneration | {readonly load: true; readonly stream: boolean}

export interface OllamaGeneration extends GenerationRequest {
  readonly load?: undefined
  readonly stream: boolean
  readonly logprobs: boolean
  /** How to read the answer when tools were offered (calls into message.tool_calls). */
  readonly answer?: AnswerOptions
}

/** The name Ollama's clients list and send: the server's model id with Ollama's default tag. */
export function ollamaName(modelId: string): string {
  return modelId.includes(':') ? modelId : `${modelId}:latest`
}

/** `stories260K` and `stories260K:latest` both name the served model; anything else is a 404. */
export function checkOllamaModel(env: RequestEnv, name: unknown): void {
  if (name === env.modelId || name === ollamaName(env.modelId)) return
  throw new ApiError(
    404,
    `model ${JSON.stringify(name)} not found: this server serves ${JSON.stringify(env.modelId)} (also named ${JSON.stringify(ollamaName(env.modelId))}) ` +
      'and cannot pull models; to serve another, restart runner serve with -m FILE (and --alias NAME to name it)',
    'model',
    'model_not_found',
  )
}

const typed = (type: string, more: Record<string, unknown> = {}) => ({type, ...more})

/** Ollama's runtime options the sampler and the loop honour, with their JSON types. */
const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    temperature: typed('number', {minimum: 0}),
    top_k: typed('integer', {minimum: 0, maximum: 2 ** 31 - 1}),
    top_p: typed('number'),
    min_p: typed('number'),
    seed: typed('integer'),
    num_predict: typed('integer'),
    num_ctx: typed('integer', {minimum: 1}),
    stop: typed('array', {maxItems: 16, items: {type: 'string', minLength: 1}}),
    repeat_penalty: typed('number'),
    repeat_last_n: typed('integer', {minimum: -1}),
    presence_penalty: typed('number'),
    frequency_penalty: typed('number'),
    // Accepted at the value that turns them off (checked in NEUTRAL_OPTIONS).
    typical_p: typed('number'),
    tfs_z: typed('number'),
    mirostat: typed('integer'),
    mirostat_tau: typed('number'),
    mirostat_eta: typed('number'),
    penalize_newline: typed('boolean'),
  },
} as const

/** Options Ollama defines that this server cannot honour, with the reason. */
const REFUSED_OPTIONS: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    [
      'numa',
      'num_batch',
      'num_gpu',
      'main_gpu',
      'low_vram',
      'f16_kv',
      'logits_all',
      'vocab_only',
      'use_mmap',
      'use_mlock',
      'embedding_only',
    ].map((k) => [k, 'a load-time option: this server loaded the model once at startup (see runner serve --help for its flags)']),
  ),
  num_thread: 'a load-time option: the threads of each slot are fixed at startup (runner serve --threads)',
  num_keep: 'this server never shifts the context (a generation ends when the context is full), so there are no tokens to keep',
}

/** Options accepted only at the value where they do nothing, since the sampler lacks them. */
const NEUTRAL_OPTIONS: Readonly<Record<string, {readonly value: number | boolean; readonly why: string}>> = {
  typical_p: {value: 1, why: 'locally typical sampling is not in the sampler; only 1 (off) is accepted'},
  tfs_z: {value: 1, why: 'tail-free sampling is not in the sampler; only 1 (off) is accepted'},
  mirostat: {value: 0, why: 'Mirostat is not in the sampler; only 0 (off) is accepted'},
  // The sampler penalizes a newline like any other token, which is penalize_newline: true.
  penalize_newline: {value: true, why: 'the repetition penalties treat a newline like any other token; only true is accepted'},
}

/** Which request field each sampling option came from, so its refusal names the field. */
const SAMPLING_PARAMS: Readonly<Record<string, string>> = {
  temperature: 'options.temperature',
  topK: 'options.top_k',
  topP: 'options.top_p',
  minP: 'options.min_p',
  repeatPenalty: 'options.repeat_penalty',
  presencePenalty: 'options.presence_penalty',
  frequencyPenalty: 'options.frequency_penalty',
  penaltyLastN: 'options.repeat_last_n',
  seed: 'options.seed',
  topLogprobs: 'top_logprobs',
}

/** A field refused unless it holds its "none" value (Ollama's Go client always sends `template: ""`). */
interface EmptyOrRefused {
  readonly empty: (v: unknown) => boolean
  readonly why: string
}
const noString = (v: unknown) => v === undefined || v === null || v === ''
const noList = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0)

const GENERATE_REFUSED: Readonly<Record<string, EmptyOrRefused>> = {
  suffix: {empty: noString, why: 'fill-in-the-middle is not supported'},
  template: {
    empty: noString,
    why: "the server renders the model's own chat template (or runner serve --chat-template); a per-request Go template is not supported",
  },
  context: {empty: noList, why: 'it is deprecated in Ollama; send the conversation to /api/chat instead'},
  images: {empty: noList, why: 'the runner is text-only'},
  // Ollama's experimental image generation.
  ...Object.fromEntries(
    ['width', 'height', 'steps'].map((k) => [
      k,
      {empty: (v: unknown) => v === undefined || v === null, why: 'image generation is not supported'},
    ]),
  ),
}

const MESSAGE_REFUSED: Readonly<Record<string, EmptyOrRefused>> = {
  images: {empty: noList, why: 'the runner is text-only'},
  thinking: {empty: noString, why: "a model's thinking cannot be replayed through its chat template here"},
}

/** Fields both routes share. */
const COMMON = {
  model: {type: 'string', minLength: 1},
  stream: typed('boolean'),
  format: {},
  options: OPTIONS_SCHEMA,
  keep_alive: {type: ['string', 'number']},
  think: {},
  logprobs: typed('boolean'),
  top_logprobs: typed('integer', {minimum: 0, maximum: MAX_TOP_LOGPROBS}),
} as const

export const OLLAMA_CHAT_SCHEMA = {
  type: 'object',
  required: ['model'],
  additionalProperties: false,
  // `messages` is checked message by message (ollamaHistory, then the chat module's validateHistory).
  properties: {...COMMON, messages: {}, tools: {}},
} as const

export const OLLAMA_GENERATE_SCHEMA = {
  type: 'object',
  required: ['model'],
  additionalProperties: false,
  properties: {
    ...COMMON,
    prompt: typed('string'),
    system: typed('string'),
    raw: typed('boolean'),
    ...Object.fromEntries(Object.keys(GENERATE_REFUSED).map((k) => [k, {}])),
  },
} as const

type Body = Record<string, unknown>

function refuseFields(record: Body, table: Readonly<Record<string, EmptyOrRefused>>, at: string): void {
  for (const [key, rule] of Object.entries(table)) {
    if (!rule.empty(record[key]))
      throw new ApiError(400, `${at}${key} is not supported: ${rule.why}`, `${at}${key}`, 'unsupported_parameter')
  }
}

/** Refuse the options the server knows it cannot honour, and unknown ones, before the schema types the rest. */
function refuseOptions(raw: Body): void {
  const options = (raw as Body).options
  if (!isRecord(options)) return
  for (const [key, value] of Object.entries(options)) {
    const param = `options.${key}`
    const why = own(REFUSED_OPTIONS, key)
    if (why !== undefined) throw new ApiError(400, `${param} is not supported: ${why}`, param, 'unsupported_parameter')
    if (!(key in OPTIONS_SCHEMA.properties)) {
      throw new ApiError(
        400,
        `${param} is not an option of Ollama's API this server knows (honoured: ${Object.keys(OPTIONS_SCHEMA.properties).join(', ')})`,
        param,
        'unknown_parameter',
      )
    }
    const neutral = own(NEUTRAL_OPTIONS, key)
    if (neutral && value !== null && value !== neutral.value)
      throw new ApiError(400, `${param} = ${JSON.stringify(value)} is not supported: ${neutral.why}`, param, 'unsupported_value')
  }
}

const isRecord = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v)

/** null means "not given", in the body and in options, as Ollama's server decodes it. */
function withoutNulls(record: Body): Body {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== null))
}

/**
 * Check the body against the route's schema, refusing by name first what cannot be honoured. The
 * checked copy has no null fields (so a handler never has to tell null from absent).
 */
function validate(schema: object, raw: unknown, refused: Readonly<Record<string, EmptyOrRefused>> = {}): Body {
  if (!isRecord(raw)) return validateBody(schema, raw, {})
  refuseFields(raw, refused, '')
  refuseOptions(raw)
  const body = withoutNulls(raw)
  if (isRecord(body.options)) body.options = withoutNulls(body.options)
  return validateBody(schema, body, {})
}

/**
 * `keep_alive`: how long the model stays loaded after the request (./keep-alive.ts; the fleet
 * honours it when the request ends). Here only its spelling is checked, naming the field.
 */
export function checkKeepAlive(value: unknown): void {
  requestKeepAlive(value)
}

/** `think`: the served models have no thinking mode here, so only "no thinking" is accepted. */
function checkThink(value: unknown): void {
  if (value === undefined || value === null || value === false) return
  throw new ApiError(
    400,
    `think = ${JSON.stringify(value)} is not supported: this server has no thinking mode (send think: false or leave it out)`,
    'think',
    'unsupported_parameter',
  )
}

/** Ollama's tools (OpenAI's function shape); no tool_choice, so the model decides. */
function chatTools(tools: unknown): RequestTools {
  return openAiTools({tools})
}

type Obj = Record<string, unknown>

/** Ollama's `tool_calls: [{function: {name, arguments: {...}}}]` with ids given in order (Ollama has none). */
function ollamaCalls(v: unknown, at: string, turn: number): ChatToolCall[] {
  if (!Array.isArray(v)) throw badParam(at, `${at} must be an array of tool calls`, 'invalid_type')
  return v.map((c: unknown, j) => {
    const fn = (c as Obj | null)?.function as Obj | undefined
    if (typeof fn !== 'object' || fn === null || typeof fn.name !== 'string')
      throw badParam(`${at}[${j}].function`, `${at}[${j}].function must be {name, arguments}`, 'invalid_type')
    const args = fn.arguments ?? {}
    if (typeof args !== 'object' || args === null || Array.isArray(args))
      throw badParam(`${at}[${j}].function.arguments`, `${at}[${j}].function.arguments must be an object`, 'invalid_type')
    return {id: `call_${turn}_${j}`, name: fn.name, arguments: JSON.stringify(args)}
  })
}

/** Ollama's messages in OpenAI's message shape (which the chat module validates): Ollama's own fields refused by name, content a string. */
function ollamaHistory(messages: unknown): unknown {
  if (!Array.isArray(messages)) return messages
  let open: ChatToolCall[] = []
  return messages.map((m: unknown, i) => {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return m
    const record = m as Body
    const at = `messages[${i}]`
    refuseFields(record, MESSAGE_REFUSED, `${at}.`)
    for (const key of Object.keys(record)) {
      if (!['role', 'content', 'tool_calls', 'tool_name'].includes(key) && !(key in MESSAGE_REFUSED))
        throw badParam(
          `${at}.${key}`,
          `${at}.${key} is not a field of Ollama's message (role, content, images, thinking, tool_calls, tool_name)`,
        )
    }
    // A message may leave content out (Ollama reads it as empty); when present it is a string.
    const content = record.content ?? ''
    if (typeof content !== 'string') throw badParam(`${at}.content`, `${at}.content must be a string`, 'invalid_type')
    if (record.role === 'tool') {
      const call = open.shift()
      if (!call) throw badParam(`${at}.role`, `${at} is a tool result, but no call of the assistant turn before it is left to answer`)
      if (record.tool_name !== undefined && record.tool_name !== null && record.tool_name !== call.name)
        throw badParam(
          `${at}.tool_name`,
          `${at}.tool_name "${String(record.tool_name)}" is not the function of the call it answers ("${call.name}")`,
        )
      return {role: 'tool', content, tool_call_id: call.id}
    }
    if (record.tool_name !== undefined && record.tool_name !== null && record.tool_name !== '')
      throw badParam(`${at}.tool_name`, `${at}.tool_name goes with role "tool"`)
    const calls = record.tool_calls === undefined || record.tool_calls === null ? [] : ollamaCalls(record.tool_calls, `${at}.tool_calls`, i)
    if (calls.length > 0 && record.role !== 'assistant') throw badParam(`${at}.tool_calls`, `${at}.tool_calls goes with role "assistant"`)
    if (record.role === 'assistant') open = [...calls]
    const openAiCalls = calls.map((c) => ({id: c.id, type: 'function', function: {name: c.name, arguments: c.arguments}}))
    return {role: record.role, content, ...(calls.length > 0 ? {tool_calls: openAiCalls} : {})}
  })
}

export async function prepareOllamaChat(env: RequestEnv, raw: unknown): Promise<OllamaPrepared> {
  const body = validate(OLLAMA_CHAT_SCHEMA, raw)
  checkRequestLimits(body, LIMITED_FIELDS.ollamaChat, env.limits)
  const common = commonFields(env, body)
  const tools = chatTools(body.tools)
  const messages = ollamaHistory(body.messages)
  // No messages: Ollama's "load the model" request (the model is always loaded here).
  if (messages === undefined || (Array.isArray(messages) && messages.length === 0)) return load(env, body, common)
  if (common.constraint && tools.tools.length > 0) throw badParam('format', 'format with tools is not supported: leave one out')
  let history
  try {
    history = validateHistory(messages, 'messages', {endWith: 'any', tools: true, systemAnywhere: true})
  } catch (error) {
    throw toApiError(error)
  }
  const chat = await buildChatPrompt(env, {messages: history, tools, api: 'openai', at: (i) => `messages[${i}]`})
  const prepared = finish(env, body, common, chat.prompt, 'messages')
  // Thinking stays in the content: Ollama separates it only when asked (think: true, refused here).
  const answer = chat.answer && chat.answer.toolNames.size > 0 ? {...chat.answer, think: 'none' as const} : undefined
  return {...prepared, ...(chat.constraint ? {constraint: chat.constraint} : {}), ...(answer ? {answer} : {})}
}

export async function prepareOllamaGenerate(env: RequestEnv, raw: unknown): Promise<OllamaPrepared> {
  const body = validate(OLLAMA_GENERATE_SCHEMA, raw, GENERATE_REFUSED)
  checkRequestLimits(body, LIMITED_FIELDS.ollamaGenerate, env.limits)
  const common = commonFields(env, body)
  const text = (body.prompt as string | undefined) ?? ''
  const system = (body.system as string | undefined) ?? ''
  const rawMode = body.raw === true
  if (rawMode && system !== '') throw badParam('system', 'system needs the chat template, which raw: true skips; put it in the prompt')
  // An empty prompt: Ollama's "load the model" request.
  if (text === '') return load(env, body, common)
  refuseUnfittable(env.tokenizer, env.nCtx, text.length + system.length, 'prompt')
  let prompt: number[]
  try {
    // raw: the prompt is already templated (special tokens are parsed, BOS as the vocabulary asks);
    // otherwise it is one user turn, after the system message, through the model's chat template.
    const history = [...(system ? [{role: 'system', content: system}] : []), {role: 'user', content: text}]
    prompt = await env.work.encode(rawMode ? text : await env.work.render(validateHistory(history, 'messages')), 'chat')
  } catch (error) {
    throw toApiError(error)
  }
  return finish(env, body, common, prompt, 'prompt')
}

interface Common {
  readonly stream: boolean
  readonly logprobs: boolean
  readonly topLogprobs: number
  readonly constraint: ReturnType<typeof ollamaFormat>
}

function commonFields(env: RequestEnv, body: Body): Common {
  checkOllamaModel(env, body.model)
  checkKeepAlive(body.keep_alive)
  checkThink(body.think)
  const logprobs = (body.logprobs as boolean | undefined) ?? false
  const topLogprobs = (body.top_logprobs as number | undefined) ?? 0
  if (topLogprobs > 0 && !logprobs) throw badParam('top_logprobs', 'top_logprobs needs logprobs: true')
  // Ollama streams unless told not to.
  return {stream: (body.stream as boolean | undefined) ?? true, logprobs, topLogprobs, constraint: ollamaFormat(body.format)}
}

/** The options as the loop takes them, checked the same way whether or not anything runs. */
interface ResolvedOptions {
  /** The request's context: options.num_ctx, at most the slot's. */
  readonly numCtx: number
  /** options.num_predict when it is a limit. */
  readonly numPredict: number | undefined
  readonly sampling: GenerationRequest['sampling']
  readonly stop: readonly string[]
}

function resolveOptions(env: RequestEnv, body: Body, common: Common): ResolvedOptions {
  const o = (body.options ?? {}) as Record<string, unknown>
  const get = <T>(key: string): T | undefined => o[key] as T | undefined
  const numCtx = get<number>('num_ctx') ?? env.nCtx
  if (numCtx > env.nCtx) {
    throw new ApiError(
      400,
      `options.num_ctx = ${numCtx} is larger than a slot's context of ${env.nCtx} tokens, which is fixed when the server starts (runner serve --ctx)`,
      'options.num_ctx',
      'unsupported_value',
    )
  }
  const numPredict = get<number>('num_predict')
  // -1 (Ollama's default) and -2 ("fill the context"): until the end of text or a full context.
  if (numPredict !== undefined && numPredict < 1 && numPredict !== -1 && numPredict !== -2) {
    throw badParam('options.num_predict', `options.num_predict = ${numPredict} must be a positive number of tokens, or -1 for no limit`)
  }
  const seed = get<number>('seed')
  // Ollama's -1 is "a random seed"; JSON numbers beyond 2^53 would already have been rounded.
  if (seed !== undefined && seed !== -1 && (!Number.isSafeInteger(seed) || seed < 0))
    throw badParam('options.seed', `options.seed = ${seed} must be an integer in [0, 2^53), or -1 for a random seed`)
  const lastN = get<number>('repeat_last_n')
  try {
    const sampling = resolveSamplingOptions({
      temperature: get('temperature'),
      topK: get('top_k'),
      topP: get('top_p'),
      minP: get('min_p'),
      repeatPenalty: get('repeat_penalty'),
      presencePenalty: get('presence_penalty'),
      frequencyPenalty: get('frequency_penalty'),
      // Ollama's -1: the whole context.
      penaltyLastN: lastN === -1 ? numCtx : lastN,
      seed: seed === -1 ? undefined : seed,
      logprobs: common.logprobs,
      topLogprobs: common.topLogprobs,
    })
    return {
      numCtx,
      numPredict: numPredict !== undefined && numPredict > 0 ? numPredict : undefined,
      sampling,
      stop: get<string[]>('stop') ?? [],
    }
  } catch (error) {
    throw toApiError(error, SAMPLING_PARAMS)
  }
}

/** A load request runs nothing, but its options are checked as if it did (Ollama loads with them). */
function load(env: RequestEnv, body: Body, common: Common): OllamaPrepared {
  resolveOptions(env, body, common)
  return {load: true, stream: common.stream}
}

function finish(env: RequestEnv, body: Body, common: Common, prompt: number[], promptParam: string): OllamaGeneration {
  const {numCtx, numPredict, sampling, stop} = resolveOptions(env, body, common)
  if (!fitPrompt(prompt.length, numCtx, 1).fits) {
    throw new ApiError(
      400,
      `the ${promptParam} is ${prompt.length} tokens, which leaves no room for a reply in a context of ${numCtx} tokens` +
        (numCtx < env.nCtx ? ' (options.num_ctx)' : ' (runner serve --ctx)'),
      promptParam,
      'context_length_exceeded',
    )
  }
  const room = numCtx - prompt.length
  return {
    prompt,
    // num_predict is a ceiling: a full context (options.num_ctx or the slot's) also ends the reply.
    maxTokens: numPredict === undefined ? room : Math.min(numPredict, room),
    sampling,
    stop,
    stream: common.stream,
    logprobs: common.logprobs,
    ...(common.constraint ? {constraint: common.constraint} : {}),
  }
}

const SHOW_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    model: {type: 'string', minLength: 1},
    // Ollama's older name for `model`.
    name: {type: 'string', minLength: 1},
    verbose: {type: 'boolean'},
    system: {},
    template: {},
    options: {},
  },
} as const

/** Ollama's Go client always sends these, empty; anything else asks for the model edited on the fly. */
const SHOW_REFUSED: Readonly<Record<string, EmptyOrRefused>> = Object.fromEntries(
  ['system', 'template', 'options'].map((k) => [
    k,
    {
      empty: (v: unknown) => noString(v) || (isRecord(v) && Object.keys(v).length === 0),
      why: '/api/show describes the served model as it is; give it with each request instead',
    },
  ]),
)

/** POST /api/show: which model (`model`, or Ollama's older `name`) and whether to list whole arrays. */
export function prepareShow(env: RequestEnv, raw: unknown): {readonly verbose: boolean} {
  const body = validate(SHOW_SCHEMA, raw, SHOW_REFUSED)
  const name = body.model ?? body.name
  if (name === undefined) throw new ApiError(400, 'you must provide a model parameter', 'model', 'missing_required_parameter')
  if (body.model !== undefined && body.name !== undefined && body.model !== body.name)
    throw badParam('name', 'model and name (its older spelling) disagree; give one')
  checkOllamaModel(env, name)
  return {verbose: body.verbose === true}
}
