/**
 * The routes, as a table: method, path, whether the API key guards it, and the handler. Handlers
 * get the server's state explicitly (no globals) and either return a JSON body or take over the
 * reply (streams).
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {messagesRoute} from './anthropic.js'
import {countTokensRoute} from './anthropic-count.js'
import {toApiError} from './api-error.js'
import {type GenerationDelta, runGeneration} from './generation.js'
import {
  chatChunk,
  chatCompletion,
  chatLogprobs,
  completionId,
  completionLogprobs,
  type ResponseMeta,
  textChunk,
  textCompletion,
  usageChunk,
  usageOf,
} from './openai-format.js'
import {listModels, retrieveModel} from './models-route.js'
import {type PreparedRequest, prepareChat, prepareCompletion, renderChat} from './requests.js'
import {APPLY_TEMPLATE_SCHEMA, validateBody} from './schemas.js'
import {SseWriter} from './sse.js'
import type {ServerState} from './state.js'
import {detokenize, tokenize} from './tokenize-routes.js'
import {PROMETHEUS_CONTENT_TYPE} from './metrics.js'

export interface Route {
  readonly method: 'GET' | 'POST'
  readonly url: string
  /** Guarded by --api-key when one is set. */
  readonly auth: boolean
  readonly summary: string
  readonly handler: (state: ServerState, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>
}

export const ROUTES: readonly Route[] = [
  {
    method: 'POST',
    url: '/v1/chat/completions',
    auth: true,
    summary: 'chat completion (OpenAI), streaming or not',
    handler: (s, q, r) => generateRoute(s, 'chat', q, r),
  },
  {
    method: 'POST',
    url: '/v1/completions',
    auth: true,
    summary: 'text completion (OpenAI legacy), streaming or not',
    handler: (s, q, r) => generateRoute(s, 'text', q, r),
  },
  {method: 'POST', url: '/v1/messages', auth: true, summary: "Anthropic's Messages API, streaming or not", handler: messagesRoute},
  {
    method: 'GET',
    url: '/v1/models',
    auth: true,
    summary: "the served model (Anthropic's shape with an anthropic-version header)",
    handler: listModels,
  },
  {
    method: 'GET',
    url: '/v1/models/:model',
    auth: true,
    summary: 'one model by id',
    handler: retrieveModel,
  },
  {
    method: 'POST',
    url: '/v1/messages/count_tokens',
    auth: true,
    summary: "the prompt tokens of a Messages request (Anthropic's count_tokens)",
    handler: countTokensRoute,
  },
  {
    method: 'GET',
    url: '/v1/capabilities',
    auth: true,
    summary: 'what this server and model can do (effective settings)',
    handler: async (s) => s.capabilities,
  },
  {
    method: 'POST',
    url: '/apply-template',
    auth: true,
    summary: 'the prompt a chat history renders to (llama-server compatible)',
    handler: async (s, q) => applyTemplate(s, q.body),
  },
  {
    method: 'POST',
    url: '/tokenize',
    auth: true,
    summary: 'text to token ids, optionally with pieces (llama-server compatible)',
    handler: async (s, q) => tokenize(s, q.body),
  },
  {
    method: 'POST',
    url: '/detokenize',
    auth: true,
    summary: 'token ids to text (llama-server compatible)',
    handler: async (s, q) => detokenize(s, q.body),
  },
  {method: 'GET', url: '/health', auth: false, summary: 'liveness and slot use', handler: async (s, _q, r) => health(s, r)},
  {
    method: 'GET',
    url: '/metrics',
    auth: true,
    summary: 'Prometheus metrics',
    handler: async (s, _q, r) => r.type(PROMETHEUS_CONTENT_TYPE).send(s.metrics.render()),
  },
]

async function applyTemplate(s: ServerState, raw: unknown) {
  const body = validateBody(APPLY_TEMPLATE_SCHEMA, raw)
  try {
    return {prompt: renderChat(s.env, body.messages, {addGenerationPrompt: (body.add_generation_prompt as boolean | undefined) ?? true})}
  } catch (error) {
    throw toApiError(error)
  }
}

async function health(s: ServerState, reply: FastifyReply) {
  const body = {
    status: s.closing ? 'shutting_down' : 'ok',
    slots_idle: s.scheduler.slots.length - s.scheduler.busy,
    slots_busy: s.scheduler.busy,
    queue_depth: s.scheduler.queued,
  }
  return reply.code(s.closing ? 503 : 200).send(body)
}

/** Chat and text completions share everything but the request's prompt and the response's shape. */
async function generateRoute(s: ServerState, kind: 'chat' | 'text', req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const prepared = kind === 'chat' ? prepareChat(s.env, req.body) : prepareCompletion(s.env, req.body)
  const meta: ResponseMeta = {
    id: completionId(kind === 'chat' ? 'chatcmpl' : 'cmpl'),
    created: Math.floor(Date.now() / 1000),
    model: s.env.modelId,
    systemFingerprint: s.env.systemFingerprint,
  }
  const life = s.track(req, reply)
  try {
    if (!prepared.stream) {
      const outcome = await runGeneration(s.generation, prepared, life.signal)
      return kind === 'chat' ? chatCompletion(meta, outcome, prepared.logprobs) : textCompletion(meta, outcome, prepared.logprobs)
    }
    reply.hijack()
    await stream(s, kind, prepared, meta, life.signal, new SseWriter(reply.raw))
    return reply
  } finally {
    life.end()
  }
}

async function stream(
  s: ServerState,
  kind: 'chat' | 'text',
  p: PreparedRequest,
  meta: ResponseMeta,
  signal: AbortSignal,
  sse: SseWriter,
): Promise<void> {
  const usage = p.includeUsage
  let opened = false
  const open = () => {
    if (opened) return
    opened = true
    if (kind === 'chat') sse.send(chatChunk(meta, {role: 'assistant', content: ''}, {usage}))
  }
  const onDelta = (d: GenerationDelta) => {
    open()
    if (kind === 'chat') {
      sse.send(chatChunk(meta, {content: d.text}, {logprobs: p.logprobs ? chatLogprobs(d.tokens) : null, usage}))
    } else {
      sse.send(textChunk(meta, d.text, {logprobs: p.logprobs ? completionLogprobs(d.tokens) : null, usage}))
    }
  }
  try {
    const outcome = await runGeneration(s.generation, p, signal, onDelta)
    open()
    if (kind === 'chat') sse.send(chatChunk(meta, {}, {finishReason: outcome.finishReason, usage}))
    else sse.send(textChunk(meta, '', {finishReason: outcome.finishReason, usage}))
    if (usage) sse.send(usageChunk(meta, kind === 'chat' ? 'chat.completion.chunk' : 'text_completion', usageOf(outcome)))
    sse.done()
  } catch (error) {
    sse.fail(toApiError(error))
  }
}
