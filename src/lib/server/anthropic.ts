/**
 * Anthropic's Messages API (`POST /v1/messages`) over the same slots, template and sampler as the
 * OpenAI routes: the request becomes a chat history (the `system` field first), the answer one
 * text block; streams use Anthropic's named events; errors use Anthropic's error object.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {randomBytes} from 'node:crypto'

import {encodeChatPrompt, validateHistory} from '../chat/index.js'
import {fitPrompt} from '../generate/index.js'
import {resolveSamplingOptions} from '../sampling/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import {type GenerationOutcome, runGeneration} from './generation.js'
import {checkModel, type RequestEnv} from './requests.js'
import {validateBody} from './schemas.js'
import {SseWriter} from './sse.js'
import {anthropicOutputConfig} from './structured.js'
import type {ServerState} from './state.js'

const textBlock = {
  type: 'object',
  required: ['type', 'text'],
  properties: {type: {const: 'text'}, text: {type: 'string'}},
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
  },
} as const

export const UNSUPPORTED: Readonly<Record<string, string>> = {
  tools: 'tool use is not supported',
  tool_choice: 'tool use is not supported',
  thinking: 'extended thinking is not supported',
  container: 'containers are not supported',
  mcp_servers: 'MCP servers are not supported',
  service_tier: 'there is one service tier',
}

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence'

const STOP_REASON: Readonly<Record<GenerationOutcome['ended'], StopReason>> = {
  eos: 'end_turn',
  stopped: 'end_turn',
  'stop-string': 'stop_sequence',
  length: 'max_tokens',
  context: 'max_tokens',
}

function stopReason(o: GenerationOutcome): StopReason {
  return STOP_REASON[o.ended]
}

function usage(o: Pick<GenerationOutcome, 'promptTokens' | 'completionTokens' | 'cachedTokens'>) {
  return {
    input_tokens: o.promptTokens,
    output_tokens: o.completionTokens,
    cache_read_input_tokens: o.cachedTokens,
    cache_creation_input_tokens: 0,
  }
}

/**
 * The prompt tokens a validated Messages body renders to (the `system` field first, then the
 * turns, through the model's template): what /v1/messages evaluates and /v1/messages/count_tokens counts.
 */
export function anthropicPrompt(env: RequestEnv, body: Record<string, unknown>): number[] {
  if (Array.isArray(body.messages)) {
    body.messages.forEach((m: unknown, i) => {
      const role = (m as {role?: unknown} | null)?.role
      if (role === 'system' || role === 'developer') {
        throw badParam(
          `messages.${i}.role`,
          `messages.${i}.role "${String(role)}": Anthropic's API takes the system prompt in the top-level "system" field`,
        )
      }
    })
  }
  const history = validateHistory(body.messages, 'messages')
  const system =
    body.system === undefined
      ? undefined
      : typeof body.system === 'string'
        ? body.system
        : (body.system as Array<{text: string}>).map((b) => b.text).join('')
  const messages = system ? [{role: 'system' as const, content: system}, ...history] : history
  try {
    return encodeChatPrompt(env.tokenizer, env.template.render(messages))
  } catch (error) {
    throw toApiError(error)
  }
}

function prepare(env: RequestEnv, raw: unknown) {
  const body = validateBody(MESSAGES_SCHEMA, raw, UNSUPPORTED)
  checkModel(env, body)
  const prompt = anthropicPrompt(env, body)
  const maxTokens = body.max_tokens as number
  const fit = fitPrompt(prompt.length, env.nCtx, maxTokens)
  if (!fit.fits) {
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
  const constraint = anthropicOutputConfig(body.output_config as Parameters<typeof anthropicOutputConfig>[0])
  return {
    prompt,
    maxTokens,
    sampling,
    stop: (body.stop_sequences as string[] | undefined) ?? [],
    stream: body.stream === true,
    ...(constraint ? {constraint} : {}),
  }
}

export async function messagesRoute(s: ServerState, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const p = prepare(s.env, req.body)
  const id = `msg_${randomBytes(12).toString('hex')}`
  const model = s.env.modelId
  const life = s.track(req, reply)
  try {
    if (!p.stream) {
      const o = await runGeneration(s.generation, p, life.signal)
      return {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [{type: 'text', text: o.text}],
        stop_reason: stopReason(o),
        stop_sequence: o.stopString ?? null,
        usage: usage(o),
      }
    }
    reply.hijack()
    const sse = new SseWriter(reply.raw, (e) => e.anthropicBody(), 'error')
    let opened = false
    const open = () => {
      if (opened) return
      opened = true
      const message = {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {input_tokens: p.prompt.length, output_tokens: 0},
      }
      sse.send({type: 'message_start', message}, 'message_start')
      sse.send({type: 'content_block_start', index: 0, content_block: {type: 'text', text: ''}}, 'content_block_start')
    }
    try {
      const o = await runGeneration(s.generation, p, life.signal, (d) => {
        open()
        if (d.text) sse.send({type: 'content_block_delta', index: 0, delta: {type: 'text_delta', text: d.text}}, 'content_block_delta')
      })
      open()
      sse.send({type: 'content_block_stop', index: 0}, 'content_block_stop')
      sse.send(
        {type: 'message_delta', delta: {stop_reason: stopReason(o), stop_sequence: o.stopString ?? null}, usage: usage(o)},
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
