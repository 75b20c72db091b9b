/**
 * POST /v1/embeddings (OpenAI's shape): one pooled, L2-normalised vector per input, as llama.cpp's
 * OpenAI-compatible endpoint computes them (src/lib/embed). The request takes a slot from the
 * scheduler like a generation, so it never races one on the same context; each input is evaluated
 * from position 0, and the slot's prefix cache then holds the last input's tokens (their KV rows are
 * the ones any prompt with those tokens would write, so nothing cached is wrong afterwards).
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import {type EmbedResult, embedTokens, EmbedInputError, embeddingTokens, modelPooling, shortestFloat32} from '../embed/index.js'
import type {Model} from '../engine/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import {checkModel} from './requests.js'
import {validateBody} from './schemas.js'
import {refuseUnfittable} from './request-limits.js'
import {countRequestTokens} from './request-log.js'
import type {ServerState} from './state.js'

/** OpenAI's limit on inputs in one request. */
export const MAX_EMBEDDING_INPUTS = 2048

const EMBEDDINGS_SCHEMA = {
  type: 'object',
  required: ['model', 'input'],
  additionalProperties: false,
  properties: {
    model: {type: 'string', minLength: 1},
    // Checked by inputsOf, which names the element (`input[2]`, `input[1][3]`).
    input: {},
    encoding_format: {enum: ['float', 'base64', null]},
    dimensions: {type: ['integer', 'null'], minimum: 1},
    user: {type: 'string'},
  },
} as const

export interface Inputs {
  readonly items: ReadonlyArray<string | readonly number[]>
  /** How a refusal names item i: `input` for a lone string or token list, else `input[i]`. */
  readonly param: (i: number) => string
}

const isTokenId = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0

/** OpenAI's four shapes of `input`: a string, strings, token ids, lists of token ids. */
function inputsOf(input: unknown): Inputs {
  const lone = {param: () => 'input'}
  if (typeof input === 'string') return {items: [input], ...lone}
  if (!Array.isArray(input))
    throw badParam('input', 'input must be a string, an array of strings, an array of token ids or an array of such arrays', 'invalid_type')
  if (input.length === 0) throw badParam('input', 'input is an empty array')
  if (input.length > MAX_EMBEDDING_INPUTS)
    throw badParam('input', `input has ${input.length} items; at most ${MAX_EMBEDDING_INPUTS} per request`)
  if (typeof input[0] === 'number') {
    const bad = input.findIndex((v) => !isTokenId(v))
    if (bad >= 0)
      throw badParam(
        `input[${bad}]`,
        `input[${bad}] = ${JSON.stringify(input[bad])} is not a token id; an array of token ids holds only non-negative integers`,
        'invalid_type',
      )
    return {items: [input as number[]], ...lone}
  }
  const param = (i: number) => `input[${i}]`
  input.forEach((item: unknown, i) => {
    if (typeof item === 'string') return
    if (!Array.isArray(item)) throw badParam(param(i), `${param(i)} must be a string or an array of token ids`, 'invalid_type')
    const bad = item.findIndex((v) => !isTokenId(v))
    if (bad >= 0)
      throw badParam(`${param(i)}[${bad}]`, `${param(i)}[${bad}] = ${JSON.stringify(item[bad])} is not a token id`, 'invalid_type')
  })
  return {items: input as Array<string | number[]>, param}
}

/** A slot's model (every slot serves the same one). */
function servedModel(s: ServerState): Model {
  return s.scheduler.slots[0]!.session.context.model
}

/** What /v1/capabilities says about embeddings. */
export function embeddingCapabilities(model: Model): Record<string, unknown> {
  let pooling: Record<string, unknown>
  try {
    const p = modelPooling(model.gguf, model.config.architecture)
    pooling = {pooling: p.pooling, pooling_source: p.source}
  } catch (error) {
    pooling = {pooling: null, refused: (error as Error).message}
  }
  return {
    route: '/v1/embeddings',
    dimensions: model.config.nEmbd,
    ...pooling,
    normalized: 'L2 (unit length), as llama.cpp’s OpenAI-compatible endpoint',
    encoding_formats: ['float', 'base64'],
    max_inputs: MAX_EMBEDDING_INPUTS,
  }
}

export async function embeddingsRoute(s: ServerState, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = validateBody(EMBEDDINGS_SCHEMA, req.body, {})
  checkModel(s.env, body)
  const model = servedModel(s)
  const dimensions = body.dimensions as number | null | undefined
  if (dimensions !== undefined && dimensions !== null && dimensions !== model.config.nEmbd) {
    throw new ApiError(
      400,
      `dimensions = ${dimensions}: this model's embeddings have ${model.config.nEmbd} dimensions and cannot be shortened; omit dimensions or send ${model.config.nEmbd}`,
      'dimensions',
      'unsupported_value',
    )
  }
  const base64 = body.encoding_format === 'base64'
  const result = await embedOnSlot(s, req, reply, inputsOf(body.input))
  {
    const total = result.tokenCounts.reduce((a, b) => a + b, 0)
    return {
      object: 'list',
      data: result.embeddings.map((v, index) => ({
        object: 'embedding',
        index,
        embedding: base64 ? toBase64(v) : Array.from(v, shortestFloat32),
      })),
      model: s.env.modelId,
      usage: {prompt_tokens: total, total_tokens: total},
    }
  }
}

/**
 * Embed inputs on a slot (the least recently used one, released once the engine has returned);
 * shared by /v1/embeddings and Ollama's /api/embed. Refusals name the input as `inputs.param` says.
 */
export async function embedOnSlot(s: ServerState, req: FastifyRequest, reply: FastifyReply, inputs: Inputs): Promise<EmbedResult> {
  const model = servedModel(s)
  const tokens = await tokenize(s, inputs)
  try {
    modelPooling(model.gguf, model.config.architecture)
  } catch (error) {
    throw new ApiError(400, (error as Error).message, 'model', 'model_not_supported')
  }
  const life = s.track(req, reply)
  try {
    const lease = await s.scheduler.acquire([], life.signal)
    try {
      const result = await embedTokens(lease.slot.session, tokens, {signal: life.signal})
      countRequestTokens(
        result.tokenCounts.reduce((a, b) => a + b, 0),
        0,
      )
      return result
    } catch (error) {
      throw life.signal.aborted ? life.signal.reason : toApiError(error)
    } finally {
      // embedTokens settles only once the engine has returned: the context is free again.
      lease.release()
    }
  } finally {
    life.end()
  }
}

/** Each input's tokens, a refusal naming the input (`input[i]`) and, over the slot's context, saying so. */
async function tokenize(s: ServerState, inputs: Inputs): Promise<number[][]> {
  try {
    // Texts through the prompt workers (off the event loop), then the same checks as token ids.
    inputs.items.forEach((x, i) => typeof x === 'string' && refuseUnfittable(s.env.tokenizer, s.env.nCtx, x.length, inputs.param(i)))
    const items = await Promise.all(
      inputs.items.map((x) => (typeof x === 'string' && x.length > 0 ? s.env.work.encode(x, {addSpecial: true, parseSpecial: false}) : x)),
    )
    return embeddingTokens(s.env.tokenizer, items, s.env.nCtx, inputs.param)
  } catch (error) {
    if (!(error instanceof EmbedInputError)) throw toApiError(error)
    throw badParam(
      inputs.param(error.index),
      error.message,
      error.code === 'EMBED_INPUT_TOO_LONG' ? 'context_length_exceeded' : 'invalid_value',
    )
  }
}

/** Little-endian float32 bytes in base64, as OpenAI sends `encoding_format: "base64"`. */
function toBase64(v: Float32Array): string {
  const bytes = Buffer.alloc(v.length * 4)
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i]!, i * 4)
  return bytes.toString('base64')
}
