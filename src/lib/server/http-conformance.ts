/**
 * What HTTP itself asks of the server, in each API's own error shape: 405 with `Allow` for a path
 * that exists under another method (RFC 9110 §15.5.6), and the errors Node's parser raises before
 * any route runs (a bad Content-Length, obs-fold, NUL in a header: 400; headers too large: 431; a
 * request too slow: 408; RFC 9112), which Fastify would otherwise answer in its own shape that no
 * client library parses.
 */
import {STATUS_CODES} from 'node:http'
import type {Socket} from 'node:net'

import {ApiError} from './api-error.js'
import {errorBodyFor} from './error-shape.js'

/** A route's method and path pattern (`/v1/models/:model`). */
export interface RoutePattern {
  readonly method: string
  readonly url: string
}

/** The methods a path answers to, by the route table; HEAD with GET (Fastify exposes it), OPTIONS with CORS. */
export function allowedMethods(routes: readonly RoutePattern[], path: string, cors: boolean): string[] {
  const methods = new Set<string>()
  for (const r of routes) {
    const pattern = new RegExp(`^${r.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}$`)
    if (!pattern.test(path)) continue
    methods.add(r.method)
    if (r.method === 'GET') methods.add('HEAD')
  }
  if (methods.size > 0 && cors) methods.add('OPTIONS')
  return [...methods].sort()
}

/** 405 for a known path asked with another method, or undefined for a path no route has. */
export function methodNotAllowed(routes: readonly RoutePattern[], method: string, url: string, cors: boolean): ApiError | undefined {
  const path = url.split('?')[0]!
  const allow = allowedMethods(routes, path, cors)
  if (allow.length === 0) return undefined
  return new ApiError(405, `${path} does not answer ${method.slice(0, 16)}; it answers ${allow.join(', ')}`, null, 'method_not_allowed', {
    allow: allow.join(', '),
  })
}

/** What Node's HTTP parser reports, as the status and a message that says what was wrong. */
const PARSER_ERRORS: Readonly<Record<string, {status: number; message: string}>> = {
  ERR_HTTP_REQUEST_TIMEOUT: {status: 408, message: 'the request was not received in time (--headers-timeout, --body-timeout)'},
  HPE_HEADER_OVERFLOW: {status: 431, message: "the request's headers are larger than the server accepts (16 KiB)"},
  HPE_INVALID_CONTENT_LENGTH: {status: 400, message: 'the Content-Length header is not a valid length'},
  HPE_UNEXPECTED_CONTENT_LENGTH: {status: 400, message: 'the request has both Content-Length and Transfer-Encoding'},
  HPE_INVALID_HEADER_TOKEN: {
    status: 400,
    message: 'a header is not valid HTTP (a control character, or a line folded onto the next: RFC 9112 §5.2)',
  },
  HPE_INVALID_TRANSFER_ENCODING: {status: 400, message: 'the Transfer-Encoding header is not valid'},
  HPE_INVALID_METHOD: {status: 400, message: 'the request method is not valid HTTP'},
}

/** The request line and anthropic-version header of whatever part of the request the parser saw. */
function requestOf(raw: Buffer | undefined): {url: string; headers: Record<string, string>} {
  const text = raw ? raw.subarray(0, 8192).toString('latin1') : ''
  const url = /^[A-Z]+ (\/\S*) HTTP\//.exec(text)?.[1] ?? '/'
  const headers: Record<string, string> = /\r\nanthropic-version:/i.test(text) ? {'anthropic-version': '1'} : {}
  return {url, headers}
}

/** Fastify's clientErrorHandler: the parser's refusal in the shape of the API the request was for, then close. */
export function clientErrorHandler(error: Error & {code?: string; rawPacket?: unknown}, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const known = PARSER_ERRORS[error.code ?? '']
  const status = known?.status ?? 400
  const e = new ApiError(
    status,
    known?.message ?? `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`,
    null,
    'invalid_http',
  )
  const {url, headers} = requestOf(Buffer.isBuffer(error.rawPacket) ? error.rawPacket : undefined)
  const body = JSON.stringify(errorBodyFor(url, headers, e))
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}
