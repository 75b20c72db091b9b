/**
 * The routes, as a table: method, path, whether the API key guards it, and the handler. Handlers
 * get the server's state explicitly (no globals) and either return a JSON body or take over the
 * reply (streams).
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {messagesRoute} from './anthropic.js'
import {countTokensRoute} from './anthropic-count.js'
import {toApiError} from './api-error.js'
import {completionsRoute} from './completions.js'
import {embeddingsRoute} from './embeddings.js'
import {OLLAMA_ROUTES} from './ollama.js'
import {OLLAMA_EMBED_ROUTES} from './ollama-embed.js'
import {listModels, retrieveModel} from './models-route.js'
import {detokenize, tokenize} from './tokenize-routes.js'
import {PROMETHEUS_CONTENT_TYPE} from './metrics.js'
import {renderChat} from './requests.js'
import {responsesRoute} from './responses.js'
import {APPLY_TEMPLATE_SCHEMA, validateBody} from './schemas.js'
import type {ServerState} from './state.js'

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
    handler: (s, q, r) => completionsRoute(s, 'chat', q, r),
  },
  {
    method: 'POST',
    url: '/v1/completions',
    auth: true,
    summary: 'text completion (OpenAI legacy), streaming or not',
    handler: (s, q, r) => completionsRoute(s, 'text', q, r),
  },
  {method: 'POST', url: '/v1/messages', auth: true, summary: "Anthropic's Messages API, streaming or not", handler: messagesRoute},
  {
    method: 'POST',
    url: '/v1/responses',
    auth: true,
    summary: "OpenAI's Responses API (stateless), streaming or not",
    handler: responsesRoute,
  },
  {
    method: 'POST',
    url: '/v1/embeddings',
    auth: true,
    summary: 'embeddings (OpenAI): one pooled, unit-length vector per input',
    handler: embeddingsRoute,
  },
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
  ...OLLAMA_ROUTES,
  ...OLLAMA_EMBED_ROUTES,
]

async function applyTemplate(s: ServerState, raw: unknown) {
  const body = validateBody(APPLY_TEMPLATE_SCHEMA, raw)
  try {
    return {prompt: await renderChat(s.env, body, {addGenerationPrompt: (body.add_generation_prompt as boolean | undefined) ?? true})}
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
