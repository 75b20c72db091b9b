/**
 * Anthropic's Messages API (`POST /v1/messages`) over the same slots, template and sampler as the
 * OpenAI routes: the request becomes a chat history (the `system` field first), the answer one
 * text block; streams use Anthropic's named events; errors use Anthropic's error object.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {randomBytes} from 'node:crypto'

import {fitPrompt} from '../generate/index.js'
import {resolveSamplingOptions} from '../sampling/index.js'
import {type AnswerEvent, AnswerParser, type ParsedAnswer} from '../tools/index.js'
import {anthropicHistory} from './anthropic-messages.js'
import {AnthropicBlocks} from './anthropic-stream.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import {buildChatPrompt} from './chat-prompt.js'
import {type GenerationDelta, type GenerationOutcome, runGeneration} from './generation.js'
import {checkModel, type RequestEnv} from './requests.js'
import {validateBody} from './schemas.js'
import {checkRequestLimits, LIMITED_FIELDS} from './request-limits.js'
import {SseWriter} from './sse.js'
import {anthropicOutputConfig} from './structured.js'
import type {ServerState} from './state.js'
import {anthropicThinking, runBudgeted} from './thinking.js'
import {anthropicTools} from './tool-fields.js'

const textBlock = {
  type: 'object',
  required: ['type', 'text'],
  // cache_control is accepted: the prefix cache reuses what it marks (usage.cache_read_input_tokens).
  properties: {type: {const: 'text'}, text: {type: 'string'}, cache_control: {type: ['object', 'null']}},
  additionalProperties: false,
}

export const MESSAGES_SCHEMA = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  additionalProperties: false,
  properties: {
    model: {type: 'string', minLength: 1},
    max_tokens: {type: 'integer', minimum: 1},
    // Checked by validateHistory, which names the message and field.
    messages: {},
    system: {anyOf: [{type: 'string'}, {type: 'array', items: textBlock}]},
    temperature: {type: 'number', minimum: 0, maximum: 1},
    top_p: {type: 'number', exclusiveMinimum: 0, maximum: 1},
    top_k: {type: 'integer', minimum: 0, maximum: 2 ** 31 - 1},
    stop_sequences: {type: 'array', maxItems: 16, items: {type: 'string', minLength: 1}},
    stream: {type: 'boolean'},
    metadata: {type: 'object', properties: {user_id: {type: ['string', 'null']}}, additionalProperties: false},
    // Structured outputs: checked field by field in ./structured.ts.
    output_config: {type: 'object'},
    // Checked field by field in ./tool-fields.ts and ./thinking.ts.
    tools: {},
    tool_choice: {},
    thinking: {},
  },
} as const

export const UNSUPPORTED: Readonly<Record<string, string>> = {
  container: 'containers are not supported',
  mcp_servers: 'MCP servers are not supported',
  service_tier: 'there is one service tier',
}

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use'

const STOP_REASON: Readonly<Record<GenerationOutcome['ended'], StopReason>> = {
  eos: 'end_turn',
  stopped: 'end_turn',
  'stop-string': 'stop_sequence',
  length: 'max_tokens',
  context: 'max_tokens',
}

function stopReason(o: GenerationOutcome, answer: ParsedAnswer | undefined): StopReason {
  const reason = STOP_REASON[o.ended]
  return reason === 'end_turn' && answer && answer.calls.length > 0 ? 'tool_use' : reason
}

/** Usage as the SDK's Usage type has it: the fields that mean nothing on a local server are null. */
function usage(o: Pick<GenerationOutcome, 'promptTokens' | 'completionTokens' | 'cachedTokens'>) {
  return {
    input_tokens: o.promptTokens,
    output_tokens: o.completionTokens,
    cache_read_input_tokens: o.cachedTokens,
    cache_creation_input_tokens: 0,
    cache_creation: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: null,
    inference_geo: null,
    speed: null,
  }
}

/** Message fields of Anthropic's that a local server has no value for (the SDK's types require them, as null). */
const MESSAGE_NULLS = {container: null, diagnostics: null, stop_details: null} as const

/**
 * A validated Messages body as the chat prompt it renders to (the `system` field first, then the
 * turns, with tools and thinking's template switch): what /v1/messages evaluates and
 * /v1/messages/count_tokens counts. `maxTokens` bounds a thinking budget (count_tokens has none).
 */
export async function anthropicChat(
  env: RequestEnv,
  body: Record<string, unknown>,
  maxTokens = Number.POSITIVE_INFINITY,
  fitContext = true,
) {
  checkRequestLimits(body, LIMITED_FIELDS.anthropic, env.limits, 'anthropic')
  const system =
    body.system === undefined
      ? undefined
      : typeof body.system === 'string'
        ? body.system
        : (body.system as Array<{text: string}>).map((b) => b.text).join('')
  const history = anthropicHistory(body.messages, system)
  const tools = anthropicTools(body)
  const format = anthropicOutputConfig(body.output_config as Parameters<typeof anthropicOutputConfig>[0])
  if (format && tools.choice.mode !== 'none')
    throw badParam(
      'output_config.format',
      'output_config.format with tools is not supported: give tool_choice {type: "none"}, or leave format out',
    )
  const thinking = anthropicThinking(env, body.thinking, maxTokens)
  const chat = await buildChatPrompt(env, {
    messages: history.messages,
    tools,
    api: 'anthropic',
    at: (i) => history.origin[i] ?? 'messages',
    ...(thinking ? {variables: thinking.variables} : {}),
    phased: thinking?.budget !== undefined,
    fitContext,
  })
  return {chat, format, thinking}
}

/** The prompt tokens of a Messages body (count_tokens). */
export async function anthropicPrompt(env: RequestEnv, body: Record<string, unknown>): Promise<number[]> {
  // Counted whatever its length: a history longer than a slot's context is counted all the same.
  return (await anthropicChat(env, body, Number.POSITIVE_INFINITY, false)).chat.prompt
}

async function prepare(env: RequestEnv, raw: unknown) {
  const body = validateBody(MESSAGES_SCHEMA, raw, UNSUPPORTED)
  checkModel(env, body)
  const maxTokens = body.max_tokens as number
  const {chat, format, thinking} = await anthropicChat(env, body, maxTokens)
  const prompt = chat.prompt
  const fit = fitPrompt(prompt.length, env.nCtx, maxTokens)
  // With --context-shift an answer may outgrow the slot: only the prompt must fit.
  if (fit.promptAlone || (!fit.fits && !env.contextShift)) {
    throw new ApiError(
      400,
      `prompt is too long: ${prompt.length} tokens + max_tokens ${maxTokens} > ${env.nCtx}, the context of a slot (--ctx)`,
      fit.promptAlone ? 'messages' : 'max_tokens',
      'context_length_exceeded',
    )
  }
  let sampling
  try {
    sampling = resolveSamplingOptions({
      temperature: body.temperature as number | undefined,
      topP: body.top_p as number | undefined,
      topK: body.top_k as number | undefined,
    })
  } catch (error) {
    throw toApiError(error, {temperature: 'temperature', topP: 'top_p', topK: 'top_k'})
  }
  // With a thinking budget the answer runs in two phases (./thinking.ts): thinking (held to the
  // think block when the answer is constrained), then the answer under the request's constraint.
  const budget = thinking?.budget
  const afterThinking = budget === undefined ? undefined : (format ?? chat.phases?.after)
  const constraint = budget === undefined ? (format ?? chat.constraint) : afterThinking && chat.phases?.thinking
  return {
    prompt,
    rendered: chat.rendered,
    budget,
    afterThinking,
    maxTokens,
    sampling,
    stop: (body.stop_sequences as string[] | undefined) ?? [],
    stream: body.stream === true,
    ...(constraint ? {constraint} : {}),
    ...(chat.answer ? {answer: chat.answer} : {}),
  }
}

/** A generation, in two phases when thinking has a budget. */
function run(
  s: ServerState,
  p: Awaited<ReturnType<typeof prepare>>,
  signal: AbortSignal,
  onDelta?: (d: GenerationDelta) => void,
): Promise<GenerationOutcome> {
  if (p.budget === undefined) return runGeneration(s.generation, p, signal, onDelta)
  return runBudgeted(s.generation, s.env, {...p, budget: p.budget}, signal, onDelta)
}

export async function messagesRoute(s: ServerState, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const p = await prepare(s.env, req.body)
  const id = `msg_${randomBytes(12).toString('hex')}`
  const model = s.env.modelId
  const life = s.track(req, reply)
  try {
    if (!p.stream) {
      const o = await run(s, p, life.signal)
      const blocks = new AnthropicBlocks()
      const parser = p.answer ? new AnswerParser(p.answer) : undefined
      for (const e of parser ? [...parser.push(o.text), ...parser.finish()] : [{type: 'text' as const, text: o.text}]) blocks.send(e)
      const answer = parser?.result()
      return {
        id,
        type: 'message',
        role: 'assistant',
        model,
        ...MESSAGE_NULLS,
        content: blocks.end(),
        stop_reason: stopReason(o, answer),
        stop_sequence: o.stopString ?? null,
        usage: usage(o),
      }
    }
    reply.hijack()
    const sse = new SseWriter(reply.raw, (e) => e.anthropicBody(), 'error')
    const blocks = new AnthropicBlocks(sse)
    const parser = p.answer ? new AnswerParser(p.answer) : undefined
    const send = (events: readonly AnswerEvent[]) => events.forEach((e) => blocks.send(e))
    const message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      ...MESSAGE_NULLS,
      usage: usage({promptTokens: p.prompt.length, completionTokens: 0, cachedTokens: 0}),
    }
    let opened = false
    const open = () => {
      if (!opened) sse.send({type: 'message_start', message}, 'message_start')
      opened = true
    }
    try {
      const o = await run(s, p, life.signal, (d) => {
        open()
        if (parser) send(parser.push(d.text))
        else if (d.text) blocks.send({type: 'text', text: d.text})
      })
      open()
      if (parser) send(parser.finish())
      blocks.end()
      sse.send(
        {
          type: 'message_delta',
          delta: {stop_reason: stopReason(o, parser?.result()), stop_sequence: o.stopString ?? null},
          usage: usage(o),
        },
        'message_delta',
      )
      sse.send({type: 'message_stop'}, 'message_stop')
      sse.end()
    } catch (error) {
      sse.fail(toApiError(error))
    }
    return reply
  } finally {
    life.end()
  }
}
