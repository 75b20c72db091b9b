/**
 * GET /v1/models and /v1/models/{id} in the two shapes clients parse: OpenAI's model objects, and
 * Anthropic's ModelInfo page when the request carries `anthropic-version` (every @anthropic-ai/sdk
 * request does). Every model the server can serve is listed, loaded or not, with its `state`
 * (./fleet.ts); the other accepted ids are in its `aliases` (llama-server's field). Retrieving any
 * accepted id answers with its model, the way Anthropic's API resolves an alias to its model. POST
 * /v1/models/{id}/load and /unload (llama-server's router: POST /models/load and /models/unload with
 * {"model": id}) load a model ahead of requests and unload it now.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {thinkingSupport} from './thinking.js'
import {badParam} from './api-error.js'
import type {CatalogEntry} from './catalog.js'
import type {ModelHost} from './model-host.js'
import type {ServerCore} from './state.js'

/** The request asks for Anthropic's shapes (its SDK sends this header on every call). */
export function isAnthropicRequest(req: FastifyRequest): boolean {
  return req.headers['anthropic-version'] !== undefined
}

/** A model's listing: its ids and, beyond OpenAI's fields, its state (loaded or not) and expiry. */
function openAiModel(core: ServerCore, entry: CatalogEntry) {
  const d = core.fleet.describeEntry(entry)
  const {id, aliases, ...rest} = d
  return {id, object: 'model', created: core.createdAt, owned_by: 'runner', aliases, ...(core.fleet.entries.length > 1 ? rest : {})}
}

const no = {supported: false} as const

/**
 * What /v1/messages does, in ModelInfo's capability keys (all present, as Anthropic's API sends
 * them; `thinking` is the template's, added per model). test/server/conventions.test.ts sends a request for each claim and checks the route agrees.
 */
export const ANTHROPIC_CAPABILITIES = {
  batch: no,
  citations: no,
  code_execution: no,
  context_management: {supported: false, clear_thinking_20251015: null, clear_tool_uses_20250919: null, compact_20260112: null},
  effort: {supported: false, low: no, medium: no, high: no, max: no, xhigh: null},
  image_input: no,
  pdf_input: no,
  server_tools: {supported: false, code_execution: no, web_search: no},
  structured_outputs: {supported: true},
} as const

/** Thinking as the model's template allows it (./thinking.ts); unknown (null) until the model has loaded. */
function thinkingCapability(host: ModelHost | undefined) {
  if (!host) return null
  const t = thinkingSupport(host.env)
  return {
    supported: t.enabled,
    types: {adaptive: no, between_tools: no, disabled: {supported: t.disabled}, enabled: {supported: t.enabled}},
  }
}

function anthropicModel(core: ServerCore, entry: CatalogEntry) {
  const host = core.fleet.hostOf(entry)
  const d = core.fleet.describeEntry(entry)
  // A prompt needs at least one position left for the answer; unknown until the model loads.
  const most = host ? Math.max(0, host.env.nCtx - 1) : null
  return {
    type: 'model',
    id: entry.id,
    display_name: entry.id,
    // The release date is unknown: the server's start, the instant the OpenAI shape's `created` gives.
    created_at: new Date(core.createdAt * 1000).toISOString().replace('.000Z', 'Z'),
    capabilities: {...ANTHROPIC_CAPABILITIES, thinking: thinkingCapability(host)},
    deprecated_at: null,
    lifecycle: 'active',
    line: null,
    max_input_tokens: most,
    max_tokens: most,
    retires_at: null,
    aliases: d.aliases,
    ...(core.fleet.entries.length > 1 ? {state: d.state} : {}),
  }
}

const LIFECYCLES = new Set(['active', 'deprecated', 'retired'])

/** Anthropic's list query (`limit`, `after_id`, `before_id`, `lifecycle[]`), each honoured or refused by name. */
function anthropicPage(core: ServerCore, query: Record<string, unknown>) {
  let items = core.fleet.entries.map((e) => anthropicModel(core, e))
  const all = items
  let limit = 20
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? (value as unknown[]).map(String) : [String(value)]
    switch (key) {
      case 'limit': {
        const n = Number(values[0])
        if (values.length !== 1 || !Number.isInteger(n) || n < 1 || n > 1000)
          throw badParam('limit', `limit = ${values.join(',')} must be an integer in [1, 1000]`)
        limit = n
        break
      }
      case 'after_id':
      case 'before_id': {
        if (values.length !== 1) throw badParam(key, `${key} must be given once`)
        const at = all.findIndex((m) => m.id === values[0])
        if (at < 0) throw badParam(key, `${key} "${values[0]}" is not the id of a listed model (${all.map((m) => m.id).join(', ')})`)
        items = items.filter((m) => (key === 'after_id' ? all.indexOf(m) > at : all.indexOf(m) < at))
        break
      }
      case 'lifecycle':
      case 'lifecycle[]':
        for (const v of values)
          if (!LIFECYCLES.has(v)) throw badParam('lifecycle', `lifecycle "${v}" must be active, deprecated or retired`)
        if (!values.includes('active')) items = []
        break
      default:
        throw badParam(
          key,
          `Unrecognized query parameter: ${key} (GET /v1/models takes limit, after_id, before_id, lifecycle)`,
          'unknown_parameter',
        )
    }
  }
  const page = items.slice(0, limit)
  return {data: page, has_more: items.length > page.length, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null}
}

export async function listModels(core: ServerCore, req: FastifyRequest): Promise<unknown> {
  if (isAnthropicRequest(req)) return anthropicPage(core, (req.query ?? {}) as Record<string, unknown>)
  return {object: 'list', data: core.fleet.entries.map((e) => openAiModel(core, e))}
}

/** The model a load or unload names: the path's {id}, or llama-server's body `{"model": id}`. */
function pathModel(core: ServerCore, req: FastifyRequest): CatalogEntry {
  const fromPath = (req.params as {model?: string}).model
  if (fromPath !== undefined) return core.fleet.require(fromPath)
  const body = req.body as {model?: unknown} | undefined
  if (typeof body?.model !== 'string') throw badParam('model', 'give the model to load or unload as {"model": "ID"}')
  return core.fleet.require(body.model)
}

export async function retrieveModel(core: ServerCore, req: FastifyRequest): Promise<unknown> {
  const entry = pathModel(core, req)
  return isAnthropicRequest(req) ? anthropicModel(core, entry) : openAiModel(core, entry)
}

/** POST /v1/models/{id}/load: load now (within --load-timeout), as a first request would. */
export async function loadModelRoute(core: ServerCore, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const entry = pathModel(core, req)
  const wait = core.waitSignal(req, reply)
  try {
    const lease = await core.fleet.acquire(entry, {signal: wait.signal})
    lease.release()
  } finally {
    wait.done()
  }
  return {success: true, ...core.fleet.describeEntry(entry)}
}

/** POST /v1/models/{id}/unload: at once when idle, else when the requests using it end (202). */
export async function unloadModelRoute(core: ServerCore, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const entry = pathModel(core, req)
  const {inFlight} = await core.fleet.unload(entry)
  return reply.code(inFlight > 0 ? 202 : 200).send({success: true, ...core.fleet.describeEntry(entry)})
}
