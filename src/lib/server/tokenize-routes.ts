/**
 * POST /tokenize and /detokenize as llama-server has them (tools/server/README.md), on the
 * served model's tokenizer, which reproduces llama.cpp's llama_tokenize and token_to_piece:
 *   {content, add_special = false, parse_special = true, with_pieces = false} → {tokens}
 *   {tokens} → {content}
 * `content` is a string, or an array of strings and token ids (llama-server's mixed prompt: only a
 * first string gets BOS). With `with_pieces` each token is {id, piece}: the piece a string when it
 * is valid UTF-8, else its bytes as an array of numbers. Detokenizing concatenates the pieces,
 * special tokens rendered (llama-server's tokens_to_str). Tokenizing is synchronous; the body limit
 * (--body-limit) bounds how long one call can hold the event loop (docs/http-api.md gives the rate).
 */
import {TokenizerError} from '../tokenizer/index.js'
import {ApiError, badParam} from './api-error.js'
import {REQUEST_LIMIT_FLAGS} from './request-limits.js'
import {validateBody} from './schemas.js'
import type {ServerState} from './state.js'

export const TOKENIZE_SCHEMA = {
  type: 'object',
  required: ['content'],
  additionalProperties: false,
  properties: {
    content: {type: ['string', 'array'], items: {type: ['string', 'integer']}},
    add_special: {type: 'boolean'},
    parse_special: {type: 'boolean'},
    with_pieces: {type: 'boolean'},
  },
} as const

export const DETOKENIZE_SCHEMA = {
  type: 'object',
  required: ['tokens'],
  additionalProperties: false,
  properties: {tokens: {type: 'array', items: {type: 'integer'}}},
} as const

const strictUtf8 = new TextDecoder('utf-8', {fatal: true, ignoreBOM: true})
const lossyUtf8 = new TextDecoder('utf-8', {ignoreBOM: true})

/** The piece as llama-server writes it: a string when the bytes are valid UTF-8, else the bytes. */
function pieceJson(bytes: Uint8Array): string | number[] {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return [...bytes]
  }
}

function checkId(s: ServerState, id: number, param: string): void {
  if (id < 0 || id >= s.env.tokenizer.vocabSize)
    throw badParam(param, `${param} = ${id} is not a token id (the vocabulary has ${s.env.tokenizer.vocabSize} tokens)`)
}

export async function tokenize(s: ServerState, raw: unknown): Promise<unknown> {
  const body = validateBody(TOKENIZE_SCHEMA, raw, {})
  const addSpecial = (body.add_special as boolean | undefined) ?? false
  const parseSpecial = (body.parse_special as boolean | undefined) ?? true
  const parts = typeof body.content === 'string' ? [body.content] : (body.content as Array<string | number>)
  // Each text part is one job for a prompt worker: their count is bounded as a message's parts are
  // (token ids, checked here, are not).
  const texts = parts.filter((p) => typeof p === 'string').length
  if (texts > s.env.limits.contentParts)
    throw new ApiError(
      400,
      `Invalid 'content': too many text parts. Expected at most ${s.env.limits.contentParts}, but got ${texts} instead (the server's ${REQUEST_LIMIT_FLAGS.contentParts.flag}); join them into one string`,
      'content',
      'array_above_max_length',
    )
  const tok = s.env.tokenizer
  const ids: number[] = []
  for (const [i, part] of parts.entries()) {
    if (typeof part === 'number') {
      checkId(s, part, typeof body.content === 'string' ? 'content' : `content[${i}]`)
      ids.push(part)
      continue
    }
    try {
      // BOS (and EOS) only for a string that opens the content, as llama-server's tokenize_mixed.
      for (const id of await s.env.work.encode(part, {addSpecial: addSpecial && i === 0, parseSpecial})) ids.push(id)
    } catch (error) {
      if (error instanceof TokenizerError) throw badParam(Array.isArray(body.content) ? `content[${i}]` : 'content', error.message)
      throw error
    }
  }
  if (body.with_pieces !== true) return {tokens: ids}
  return {tokens: ids.map((id) => ({id, piece: pieceJson(tok.pieceBytes(id, {special: true}))}))}
}

export async function detokenize(s: ServerState, raw: unknown): Promise<unknown> {
  const body = validateBody(DETOKENIZE_SCHEMA, raw, {})
  const ids = body.tokens as number[]
  ids.forEach((id, i) => checkId(s, id, `tokens[${i}]`))
  const tok = s.env.tokenizer
  const pieces = ids.map((id) => tok.pieceBytes(id, {special: true}))
  const bytes = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of pieces) {
    bytes.set(p, at)
    at += p.length
  }
  // Bytes that are not UTF-8 become U+FFFD, as llama-server's JSON writer replaces them (error_handler_t::replace).
  return {content: lossyUtf8.decode(bytes)}
}
