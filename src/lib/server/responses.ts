/**
 * OpenAI's Responses API (`POST /v1/responses`), stateless: the request becomes a chat history,
 * tools and a format (./responses-input.ts), runs on the same slots, template, sampler and tool
 * parser as chat completions, and comes back as output items or their event stream
 * (./responses-output.ts). Errors are OpenAI-shaped; after a stream started, an `error` event.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {fitPrompt} from '../generate/index.js'
import {resolveSamplingOptions} from '../sampling/index.js'
import {type AnswerEvent, AnswerParser} from '../tools/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import {buildChatPrompt} from './chat-prompt.js'
import {type GenerationOutcome, type GenerationRequest, runGeneration} from './generation.js'
import {checkModel, type RequestEnv} from './requests.js'
import {checkResponsesFields, responsesFormat, responsesHistory, responsesTools} from './responses-input.js'
import {newId, ResponseBuilder} from './responses-output.js'
import {validateBody} from './schemas.js'
import {checkRequestLimits, LIMITED_FIELDS} from './request-limits.js'
import {SseWriter} from './sse.js'
import type {ServerState} from './state.js'

const nullable = (type: string, extra: Record<string, unknown> = {}) => ({type: [type, 'null'], ...extra})

export const RESPONSES_SCHEMA = {
  type: 'object',
  required: ['model', 'input'],
  additionalProperties: false,
  properties: {
    model: {type: 'string', minLength: 1},
    // Checked item by item in ./responses-input.ts, naming each.
    input: {},
    instructions: {},
    tools: {},
    tool_choice: {},
    text: {},
    parallel_tool_calls: nullable('boolean'),
    max_output_tokens: nullable('integer', {minimum: 1}),
    temperature: nullable('number', {minimum: 0, maximum: 2}),
    top_p: nullable('number', {exclusiveMinimum: 0, maximum: 1}),
    stream: nullable('boolean'),
    metadata: {type: ['object', 'null'], maxProperties: 16, additionalProperties: {type: 'string', maxLength: 512}},
    user: {type: 'string'},
    safety_identifier: {type: 'string'},
    prompt_cache_key: {type: 'string'},
    store: {},
    truncation: {},
    service_tier: {},
    include: {},
    reasoning: {},
    top_logprobs: {},
    stream_options: {},
    previous_response_id: {},
    conversation: {},
    background: {},
    prompt: {},
    context_management: {},
    moderation: {},
    max_tool_calls: {},
  },
} as const

type Body = Record<string, unknown>

interface PreparedResponse extends GenerationRequest {
  readonly body: Body
  readonly stream: boolean
  readonly answer: ConstructorParameters<typeof AnswerParser>[0] | undefined
}

async function prepare(env: RequestEnv, raw: unknown): Promise<PreparedResponse> {
  const body = validateBody(RESPONSES_SCHEMA, raw, {})
  checkRequestLimits(body, LIMITED_FIELDS.responses, env.limits)
  checkModel(env, body)
  checkResponsesFields(body)
  const history = responsesHistory(body.instructions, body.input)
  const tools = responsesTools(body)
  const format = responsesFormat(body.text)
  if (format && tools.choice.mode !== 'none')
    throw badParam('text.format', 'text.format with tools is not supported: give tool_choice "none", or leave the format out')
  const chat = await buildChatPrompt(env, {
    messages: history.messages,
    tools,
    api: 'openai',
    at: (i) => history.origin[i] ?? 'input',
    historyParam: 'input',
  })
  const maxTokens = (body.max_output_tokens as number | null | undefined) ?? undefined
  const fit = fitPrompt(chat.prompt.length, env.nCtx, Math.max(1, maxTokens ?? 0))
  // With --context-shift an answer may outgrow the slot: only the input must fit.
  if (fit.promptAlone || (maxTokens !== undefined && !fit.fits && !env.contextShift)) {
    throw new ApiError(
      400,
      `the input is ${chat.prompt.length} tokens${maxTokens === undefined ? '' : ` and max_output_tokens ${maxTokens}`}, more than a slot's context of ${env.nCtx} (--ctx)`,
      fit.promptAlone ? 'input' : 'max_output_tokens',
      'context_length_exceeded',
    )
  }
  let sampling
  try {
    sampling = resolveSamplingOptions({
      temperature: (body.temperature as number | null) ?? undefined,
      topP: (body.top_p as number | null) ?? undefined,
    })
  } catch (error) {
    throw toApiError(error, {temperature: 'temperature', topP: 'top_p'})
  }
  const constraint = format ?? chat.constraint
  return {
    body,
    prompt: chat.prompt,
    maxTokens: maxTokens ?? env.nCtx - chat.prompt.length,
    sampling,
    stop: [],
    stream: body.stream === true,
    answer: chat.answer,
    ...(constraint ? {constraint} : {}),
  }
}

/** The response object: what was asked (echoed as OpenAI does) and what came out. */
function responseObject(p: PreparedResponse, id: string, created: number, model: string, output: unknown[], o?: GenerationOutcome) {
  const b = p.body
  const incomplete = o !== undefined && o.finishReason === 'length'
  return {
    id,
    object: 'response',
    created_at: created,
    status: o === undefined ? 'in_progress' : incomplete ? 'incomplete' : 'completed',
    ...(o === undefined ? {} : {completed_at: Math.floor(Date.now() / 1000)}),
    model,
    output,
    // The SDK computes output_text itself; its type requires it, so the server sends it too.
    output_text: outputText(output),
    error: null,
    incomplete_details: incomplete ? {reason: 'max_output_tokens'} : null,
    instructions: b.instructions ?? null,
    metadata: b.metadata ?? {},
    parallel_tool_calls: b.parallel_tool_calls === true,
    temperature: b.temperature ?? null,
    top_p: b.top_p ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    text: {format: (b.text as {format?: unknown} | undefined)?.format ?? {type: 'text'}},
    previous_response_id: null,
    reasoning: {effort: null, summary: null},
    store: false,
    truncation: 'disabled',
    service_tier: 'default',
    ...(b.user === undefined ? {} : {user: b.user}),
    usage:
      o === undefined
        ? null
        : {
            input_tokens: o.promptTokens,
            input_tokens_details: {cached_tokens: o.cachedTokens},
            output_tokens: o.completionTokens,
            output_tokens_details: {reasoning_tokens: 0},
            total_tokens: o.promptTokens + o.completionTokens,
          },
  }
}

function outputText(output: readonly unknown[]): string {
  return output
    .flatMap((item) => {
      const i = item as {type?: string; content?: Array<{type?: string; text?: string}>}
      return i.type === 'message' ? (i.content ?? []).filter((c) => c.type === 'output_text').map((c) => c.text ?? '') : []
    })
    .join('')
}

export async function responsesRoute(s: ServerState, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const p = await prepare(s.env, req.body)
  const id = newId('resp')
  const created = Math.floor(Date.now() / 1000)
  const model = s.env.modelId
  const life = s.track(req, reply)
  try {
    if (!p.stream) {
      const builder = new ResponseBuilder()
      const o = await runGeneration(s.generation, p, life.signal)
      feed(p, builder, o.text)
      return responseObject(p, id, created, model, builder.finish(), o)
    }
    reply.hijack()
    let sequence = 0
    const sse = new SseWriter(
      reply.raw,
      (e) => e.body(),
      'error',
      (e) => ({type: 'error', code: e.code, message: e.message, param: e.param, sequence_number: sequence}),
    )
    const builder = new ResponseBuilder((event) => {
      sequence = (event.sequence_number as number) + 1
      sse.send(event, event.type as string)
    })
    const parser = p.answer ? new AnswerParser(p.answer) : undefined
    const send = (events: readonly AnswerEvent[]) => events.forEach((e) => builder.add(e))
    let opened = false
    const open = () => {
      if (opened) return
      opened = true
      const snapshot = responseObject(p, id, created, model, [])
      builder.send('response.created', {response: snapshot})
      builder.send('response.in_progress', {response: snapshot})
    }
    try {
      const o = await runGeneration(s.generation, p, life.signal, (d) => {
        open()
        if (parser) send(parser.push(d.text))
        else if (d.text) builder.add({type: 'text', text: d.text})
      })
      open()
      if (parser) send(parser.finish())
      const response = responseObject(p, id, created, model, builder.finish(), o)
      builder.send(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', {response})
      sse.end()
    } catch (error) {
      sse.fail(toApiError(error))
    }
    return reply
  } finally {
    life.end()
  }
}

/** A non-streamed answer through the same parser and builder as a stream. */
function feed(p: PreparedResponse, builder: ResponseBuilder, text: string): void {
  if (!p.answer) {
    if (text) builder.add({type: 'text', text})
    return
  }
  const parser = new AnswerParser(p.answer)
  for (const e of [...parser.push(text), ...parser.finish()]) builder.add(e)
}
