/**
 * Request bodies as JSON, checked before they are parsed: UTF-8 (RFC 8259: JSON exchanged between
 * systems is UTF-8; a lossy decode would turn bad bytes into U+FFFD and accept them) and a bound on
 * nesting, found by one scan without recursion, so that no later step (validation, error messages,
 * templates) recurses through a hostile 10,000-level value. Then Fastify's own parser, which also
 * refuses `__proto__` and `constructor.prototype` keys.
 */
import type {FastifyRequest} from 'fastify'

import {ApiError} from './api-error.js'

/** Deeper than any real request (schemas and tool arguments included), shallow enough for every recursive step after. */
export const MAX_BODY_DEPTH = 128

type Done = (error: Error | null, body?: unknown) => void
type Parser = (req: FastifyRequest, body: string, done: Done) => void

const utf8 = new TextDecoder('utf-8', {fatal: true})

/** The deepest nesting of objects and arrays in a JSON text (strings skipped), stopping past `limit`. */
export function nestingDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0
  let deepest = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // A string: skip to its closing quote, escapes included.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++
    } else if (c === 0x7b || c === 0x5b) {
      depth++
      if (depth > deepest) deepest = depth
      if (deepest > limit) return deepest
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return deepest
}

export function checkedJsonParser(parse: Parser) {
  return (req: FastifyRequest, body: Buffer, done: Done): void => {
    let text: string
    try {
      text = utf8.decode(body)
    } catch {
      done(new ApiError(400, 'the request body is not valid UTF-8 (JSON must be UTF-8: RFC 8259)', null, 'invalid_encoding'))
      return
    }
    if (nestingDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      done(new ApiError(400, `the request body nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep`, null, 'invalid_json'))
      return
    }
    parse(req, text, (error, body) => (error ? done(jsonError(error, text, req.headers['content-type'])) : done(null, body)))
  }
}

/**
 * A body that does not parse, said plainly: the parser's own reason (V8's, or a forbidden
 * `__proto__` key), and for a body sent as something other than JSON (curl -d sends form encoding)
 * what to send instead. Fastify's own message claims the content type was application/json.
 */
function jsonError(error: Error, text: string, contentType: string | undefined): ApiError {
  let reason = error.message
  if ((error as Error & {code?: string}).code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    try {
      JSON.parse(text)
      // It parses: what Fastify's parser refused is a prototype-poisoning key.
      reason = 'it holds a "__proto__" or "constructor": {"prototype": …} key, which is refused'
    } catch (syntax) {
      reason = (syntax as Error).message
    }
  }
  const sentAs =
    contentType !== undefined && !/\bjson\b/i.test(contentType)
      ? ` (it was sent as ${JSON.stringify(contentType.slice(0, 100))}; send JSON with "Content-Type: application/json", e.g. curl -H 'Content-Type: application/json' -d '{...}')`
      : ''
  return new ApiError(400, `the request body is not valid JSON${sentAs}: ${reason.slice(0, 200)}`, null, 'invalid_json')
}
