/**
 * The routes, as a table: method, path, whether the API key guards it, where the request names its
 * model, and the handler. A model's routes get that model loaded and held for the request (a
 * ServerState); the server's own routes (lists, health, metrics) get the ServerCore. Handlers get
 * what they read explicitly (no globals) and either return a JSON body or take over the reply
 * (streams).
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {messagesRoute} from './anthropic.js'
import {countTokensRoute} from './anthropic-count.js'
import {toApiError} from './api-error.js'
import {completionsRoute} from './completions.js'
import {embeddingsRoute} from './embeddings.js'
import {OLLAMA_ROUTES} from './ollama.js'
import {OLLAMA_EMBED_ROUTES} from './ollama-embed.js'
import {listModels, loadModelRoute, retrieveModel, unloadModelRoute} from './models-route.js'
import {detokenize, tokenize} from './tokenize-routes.js'
import {PROMETHEUS_CONTENT_TYPE} from './metrics.js'
import {renderChat} from './requests.js'
import {responsesRoute} from './responses.js'
import {APPLY_TEMPLATE_SCHEMA, validateBody} from './schemas.js'
import type {ServerCore, ServerState} from './state.js'

interface RouteBase {
  readonly method: 'GET' | 'POST'
  readonly url: string
  /** Guarded by --api-key when one is set. */
  readonly auth: boolean
  readonly summary: string
}

/** A route of one model: the body's `model` names it (required, or optional: the first model when absent). */
export interface ModelRoute extends RouteBase {
  readonly model: 'required' | 'optional'
  /** The body may carry Ollama's `keep_alive` (./keep-alive.ts). */
  readonly keepAlive?: boolean
  readonly handler: (state: ServerState, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>
}

/** A route of the server (lists, health, metrics, load and unload): no model is held for it. */
export interface ServerRoute extends RouteBase {
  readonly model: 'none'
  readonly handler: (core: ServerCore, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>
}

export type Route = ModelRoute | ServerRoute

export const ROUTES: readonly Route[] = [
  {
    method: 'POST',
    url: '/v1/chat/completions',
    model: 'required',
    auth: true,
    summary: 'chat completion (OpenAI), streaming or not',
    handler: (s, q, r) => completionsRoute(s, 'chat', q, r),
  },
  {
    method: 'POST',
    url: '/v1/completions',
    model: 'required',
    auth: true,
    summary: 'text completion (OpenAI legacy), streaming or not',
    handler: (s, q, r) => completionsRoute(s, 'text', q, r),
  },
  {
    method: 'POST',
    url: '/v1/messages',
    model: 'required',
    auth: true,
    summary: "Anthropic's Messages API, streaming or not",
    handler: messagesRoute,
  },
  {
    method: 'POST',
    url: '/v1/responses',
    model: 'required',
    auth: true,
    summary: "OpenAI's Responses API (stateless), streaming or not",
    handler: responsesRoute,
  },
  {
    method: 'POST',
    url: '/v1/embeddings',
    model: 'required',
    auth: true,
    summary: 'embeddings (OpenAI): one pooled, unit-length vector per input',
    handler: embeddingsRoute,
  },
  {
    method: 'GET',
    url: '/v1/models',
    model: 'none',
    auth: true,
    summary: "the models this server serves, loaded or not (Anthropic's shape with an anthropic-version header)",
    handler: listModels,
  },
  {
    method: 'GET',
    url: '/v1/models/:model',
    model: 'none',
    auth: true,
    summary: 'one model by id',
    handler: retrieveModel,
  },
  {
    method: 'POST',
    url: '/v1/models/:model/load',
    model: 'none',
    auth: true,
    summary: 'load a model now (within --load-timeout), as its first request would',
    handler: loadModelRoute,
  },
  {
    method: 'POST',
    url: '/v1/models/:model/unload',
    model: 'none',
    auth: true,
    summary: 'unload a model: now when idle (200), else when its requests end (202)',
    handler: unloadModelRoute,
  },
  {
    method: 'POST',
    url: '/models/load',
    model: 'none',
    auth: true,
    summary: 'llama-server router\'s load: {"model": id}',
    handler: loadModelRoute,
  },
  {
    method: 'POST',
    url: '/models/unload',
    model: 'none',
    auth: true,
    summary: 'llama-server router\'s unload: {"model": id}',
    handler: unloadModelRoute,
  },
  {
    method: 'POST',
    url: '/v1/messages/count_tokens',
    model: 'required',
    auth: true,
    summary: "the prompt tokens of a Messages request (Anthropic's count_tokens)",
    handler: countTokensRoute,
  },
  {
    method: 'GET',
    url: '/v1/capabilities',
    model: 'none',
    auth: true,
    summary: 'what this server and its models can do (effective settings, loaded models, signature policy)',
    handler: async (core) => core.capabilities(),
  },
  {
    method: 'POST',
    url: '/apply-template',
    model: 'optional',
    auth: true,
    summary: 'the prompt a chat history renders to (llama-server compatible)',
    handler: async (s, q) => applyTemplate(s, q.body),
  },
  {
    method: 'POST',
    url: '/tokenize',
    model: 'optional',
    auth: true,
    summary: 'text to token ids, optionally with pieces (llama-server compatible)',
    handler: async (s, q) => tokenize(s, q.body),
  },
  {
    method: 'POST',
    url: '/detokenize',
    model: 'optional',
    auth: true,
    summary: 'token ids to text (llama-server compatible)',
    handler: async (s, q) => detokenize(s, q.body),
  },
  {
    method: 'GET',
    url: '/health',
    model: 'none',
    auth: false,
    summary: 'liveness, slot use, and which models are loaded and loading',
    handler: async (core, _q, r) => health(core, r),
  },
  {
    method: 'GET',
    url: '/metrics',
    model: 'none',
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

async function health(core: ServerCore, reply: FastifyReply) {
  const hosts = core.fleet.loadedHosts()
  const slots = hosts.reduce((n, h) => n + h.scheduler.slots.length, 0)
  const busy = hosts.reduce((n, h) => n + h.scheduler.busy, 0)
  const models = core.fleet.describe()
  const named = (state: string) => models.filter((m) => m.state === state).map((m) => m.id)
  const body = {
    status: core.closing ? 'shutting_down' : 'ok',
    slots_idle: slots - busy,
    slots_busy: busy,
    queue_depth: hosts.reduce((n, h) => n + h.scheduler.queued, 0),
    models: {loaded: named('loaded'), loading: named('loading'), failed: named('failed')},
  }
  return reply.code(core.closing ? 503 : 200).send(body)
}
