/**
 * CORS for browser apps (`--cors ORIGIN`, repeatable, `*` for any origin; off by default). A
 * request from an allowed origin gets Access-Control-Allow-Origin (and Vary: Origin); an OPTIONS
 * preflight from one is answered here, before the API key is checked (browsers send preflights
 * without credentials). A request from any other origin gets no CORS header, so the browser keeps
 * the answer from the page. Headers go on the raw response, so streams, which write their own
 * head (./sse.ts), carry them too.
 */
import type {FastifyInstance} from 'fastify'

import {ExitCode, RunnerError} from '../errors.js'

/** The request headers the official SDKs send (authorization, Anthropic's and OpenAI's own), besides x-stainless-*. */
export const CORS_ALLOWED_HEADERS = [
  'accept',
  'authorization',
  'content-type',
  'x-api-key',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'idempotency-key',
] as const

/** The SDKs' telemetry headers (X-Stainless-OS, -Retry-Count, -Timeout, …): allowed when a preflight asks for them. */
const STAINLESS = /^x-stainless-[a-z0-9-]+$/

export const CORS_METHODS = 'GET, POST, OPTIONS'
/** Seconds a browser may cache a preflight: Chromium's upper bound (Firefox allows more). */
export const CORS_MAX_AGE = 7200
/** Response headers a page may read: Retry-After tells a client when to retry a 503. */
const EXPOSED = 'retry-after'

/** The origins --cors allows, normalised as browsers send Origin (lower-case host, no default port), or "*". */
export function parseCorsOrigins(values: readonly string[]): readonly string[] {
  return values.map((v) => {
    if (v === '*') return v
    let url: URL | undefined
    try {
      url = new URL(v)
    } catch {
      url = undefined
    }
    const bare = url && /^https?:$/.test(url.protocol) && url.pathname === '/' && !url.search && !url.hash && !url.username
    if (!url || !bare) {
      throw new RunnerError(
        'SERVE_BAD_OPTION',
        `--cors ${JSON.stringify(v)} must be an origin (http[s]://host[:port], no path) or "*"`,
        ExitCode.usage,
      )
    }
    return url.origin
  })
}

/** Install the CORS hook (first, before the API key hook); nothing when no origin is allowed. */
export function installCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return
  const any = origins.includes('*')
  const allowed = new Set(origins)
  app.addHook('onRequest', async (req, reply) => {
    const origin = req.headers.origin
    if (origin === undefined || !(any || allowed.has(origin))) return
    const res = reply.raw
    res.setHeader('access-control-allow-origin', any ? '*' : origin)
    // The answer depends on Origin whenever it is not "*": caches must key on it.
    if (!any) res.setHeader('vary', 'Origin')
    if (req.method !== 'OPTIONS') {
      res.setHeader('access-control-expose-headers', EXPOSED)
      return
    }
    const asked = String(req.headers['access-control-request-headers'] ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => STAINLESS.test(h))
    res.setHeader('access-control-allow-methods', CORS_METHODS)
    res.setHeader('access-control-allow-headers', [...CORS_ALLOWED_HEADERS, ...new Set(asked)].join(', '))
    res.setHeader('access-control-max-age', String(CORS_MAX_AGE))
    void reply.code(204).send()
    return reply
  })
}
