/**
 * GET /v1/models and /v1/models/{id} in the two shapes clients parse: OpenAI's model objects, and
 * Anthropic's ModelInfo page when the request carries `anthropic-version` (every @anthropic-ai/sdk
 * request does). One model is served, so the list has one entry, as llama-server's has; the other
 * accepted ids are listed in its `aliases` (llama-server's field). Retrieving any accepted id
 * answers with the served model, the way Anthropic's API resolves an alias to its model.
 */
import type {FastifyRequest} from 'fastify'

import {thinkingSupport} from './thinking.js'
import {badParam} from './api-error.js'
import {otherIds, requireModel} from './model-ids.js'
import type {ServerState} from './state.js'

/** The request asks for Anthropic's shapes (its SDK sends this header on every call). */
export function isAnthropicRequest(req: FastifyRequest): boolean {
  return req.headers['anthropic-version'] !== undefined
}

function openAiModel(s: ServerState) {
  const ids = s.env.modelIds
  return {id: ids.served, object: 'model', created: s.createdAt, owned_by: 'runner', aliases: otherIds(ids)}
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

/** Thinking as the model's template allows it (./thinking.ts). */
function thinkingCapability(s: ServerState) {
  const t = thinkingSupport(s.env)
  return {
    supported: t.enabled,
    types: {adaptive: no, between_tools: no, disabled: {supported: t.disabled}, enabled: {supported: t.enabled}},
  }
}

function anthropicModel(s: ServerState) {
  const id = s.env.modelIds.served
  // A prompt needs at least one position left for the answer.
  const most = Math.max(0, s.env.nCtx - 1)
  return {
    type: 'model',
    id,
    display_name: id,
    // The release date is unknown: the server's start, the instant the OpenAI shape's `created` gives.
    created_at: new Date(s.createdAt * 1000).toISOString().replace('.000Z', 'Z'),
    capabilities: {...ANTHROPIC_CAPABILITIES, thinking: thinkingCapability(s)},
    deprecated_at: null,
    lifecycle: 'active',
    line: null,
    max_input_tokens: most,
    max_tokens: most,
    retires_at: null,
    aliases: otherIds(s.env.modelIds),
  }
}

const LIFECYCLES = new Set(['active', 'deprecated', 'retired'])

/** Anthropic's list query (`limit`, `after_id`, `before_id`, `lifecycle[]`), each honoured or refused by name. */
function anthropicPage(s: ServerState, query: Record<string, unknown>) {
  const item = anthropicModel(s)
  let items = [item]
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? (value as unknown[]).map(String) : [String(value)]
    switch (key) {
      case 'limit': {
        const n = Number(values[0])
        if (values.length !== 1 || !Number.isInteger(n) || n < 1 || n > 1000)
          throw badParam('limit', `limit = ${values.join(',')} must be an integer in [1, 1000]`)
        break
      }
      case 'after_id':
      case 'before_id':
        // The one model has nothing after or before it.
        if (values.length !== 1) throw badParam(key, `${key} must be given once`)
        if (values[0] !== item.id)
          throw badParam(key, `${key} "${values[0]}" is not the id of a listed model (the list has one: ${item.id})`)
        items = []
        break
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
  return {data: items, has_more: false, first_id: items[0]?.id ?? null, last_id: items.at(-1)?.id ?? null}
}

export async function listModels(s: ServerState, req: FastifyRequest): Promise<unknown> {
  if (isAnthropicRequest(req)) return anthropicPage(s, (req.query ?? {}) as Record<string, unknown>)
  return {object: 'list', data: [openAiModel(s)]}
}

export async function retrieveModel(s: ServerState, req: FastifyRequest): Promise<unknown> {
  const id = (req.params as {model: string}).model
  requireModel(s.env.modelIds, id)
  return isAnthropicRequest(req) ? anthropicModel(s) : openAiModel(s)
}
