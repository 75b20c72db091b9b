/**
 * Ollama's embedding routes over the same embedder as /v1/embeddings (./embeddings.ts): `POST
 * /api/embed` (`input` a string or strings → `embeddings`, unit length as Ollama returns them) and
 * the older `POST /api/embeddings` (`prompt` → `embedding`). Inputs longer than a slot's context are
 * refused, `truncate` or not: the server never cuts an input silently.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {shortestFloat32} from '../embed/index.js'
import {badParam} from './api-error.js'
import {embedOnSlot} from './embeddings.js'
import {checkKeepAlive, checkOllamaModel} from './ollama-requests.js'
import type {Route} from './routes.js'
import {validateBody} from './schemas.js'
import type {ServerState} from './state.js'

const COMMON = {
  model: {type: 'string', minLength: 1},
  keep_alive: {type: ['string', 'number']},
  // Embedding has no sampling: options must be empty.
  options: {type: ['object', 'null'], maxProperties: 0},
} as const

const EMBED_SCHEMA = {
  type: 'object',
  required: ['model', 'input'],
  additionalProperties: false,
  properties: {
    ...COMMON,
    input: {
      anyOf: [
        {type: 'string', minLength: 1},
        {type: 'array', minItems: 1, items: {type: 'string', minLength: 1}},
      ],
    },
    truncate: {type: 'boolean'},
    dimensions: {type: 'integer', minimum: 1},
  },
} as const

const EMBEDDINGS_SCHEMA = {
  type: 'object',
  required: ['model', 'prompt'],
  additionalProperties: false,
  properties: {...COMMON, prompt: {type: 'string', minLength: 1}},
} as const

const vector = (v: Float32Array) => Array.from(v, shortestFloat32)

async function embed(s: ServerState, req: FastifyRequest, reply: FastifyReply) {
  const t0 = performance.now()
  const body = validateBody(EMBED_SCHEMA, req.body, {})
  checkOllamaModel(s.env, body.model)
  checkKeepAlive(body.keep_alive)
  const dims = body.dimensions as number | undefined
  const nEmbd = s.scheduler.slots[0]!.session.context.model.config.nEmbd
  if (dims !== undefined && dims !== nEmbd)
    throw badParam('dimensions', `dimensions = ${dims}: this model's embeddings have ${nEmbd} dimensions and cannot be shortened`)
  const list = typeof body.input === 'string' ? [body.input] : (body.input as string[])
  const result = await embedOnSlot(s, req, reply, {items: list, param: (i) => (typeof body.input === 'string' ? 'input' : `input[${i}]`)})
  return {
    model: body.model,
    embeddings: result.embeddings.map(vector),
    total_duration: Math.round((performance.now() - t0) * 1e6),
    load_duration: Math.round(s.loadMs * 1e6),
    prompt_eval_count: result.tokenCounts.reduce((a, b) => a + b, 0),
  }
}

async function embeddingsLegacy(s: ServerState, req: FastifyRequest, reply: FastifyReply) {
  const body = validateBody(EMBEDDINGS_SCHEMA, req.body, {})
  checkOllamaModel(s.env, body.model)
  checkKeepAlive(body.keep_alive)
  const result = await embedOnSlot(s, req, reply, {items: [body.prompt as string], param: () => 'prompt'})
  return {embedding: vector(result.embeddings[0]!)}
}

export const OLLAMA_EMBED_ROUTES: readonly Route[] = [
  // Desktop tools check that an Ollama server is up by this line (Ollama's own answer on /).
  {
    method: 'GET',
    url: '/',
    model: 'none',
    auth: false,
    summary: "Ollama's liveness line",
    handler: async (_s, _q, r) => r.type('text/plain; charset=utf-8').send('Ollama is running'),
  },
  {
    method: 'POST',
    url: '/api/embed',
    model: 'required',
    keepAlive: true,
    auth: true,
    summary: "Ollama's embeddings (unit length), one per input",
    handler: embed,
  },
  {
    method: 'POST',
    url: '/api/embeddings',
    model: 'required',
    keepAlive: true,
    auth: true,
    summary: "Ollama's older embedding route (prompt → embedding)",
    handler: embeddingsLegacy,
  },
]
