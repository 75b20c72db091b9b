/**
 * `runner serve`'s request log (--log-format): one line per request once its response has ended,
 * with the method, the route (the route pattern, or the path without its query when no route
 * matched), the status (499: the client left first, as nginx and our metrics count it), the prompt
 * and completion tokens when the request ran the model, and the time in ms. Never the body, the
 * query or the headers: prompts and keys (Authorization, x-api-key) stay out of logs.
 *
 * The token counts come from deep inside a route (runGeneration, the embedding path), which does not
 * see the request; an AsyncLocalStorage started by the onRequest hook carries each request's tally
 * there, as @fastify/request-context does, without threading it through every route.
 */
import {AsyncLocalStorage} from 'node:async_hooks'

import type {FastifyInstance, FastifyRequest} from 'fastify'

import {printable, printableJson} from '../util/index.js'

export const LOG_FORMATS = ['text', 'json', 'none'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/** One request's log entry. */
export interface RequestLogEntry {
  readonly time: string
  readonly method: string
  readonly route: string
  readonly status: number
  /** Present when the request ran the model (generation or embeddings), summed over its runs. */
  readonly prompt_tokens?: number
  readonly completion_tokens?: number
  readonly ms: number
}

interface Tally {
  prompt: number
  completion: number
  counted: boolean
}

const tallies = new AsyncLocalStorage<Tally>()

/** Count tokens to the request being served, if any (a test calling a route's code directly has none). */
export function countRequestTokens(prompt: number, completion: number): void {
  const t = tallies.getStore()
  if (!t) return
  t.prompt += prompt
  t.completion += completion
  t.counted = true
}

/** Each format's one line; `none` prints nothing (and installs nothing). */
const FORMATS: Readonly<Record<Exclude<LogFormat, 'none'>, (e: RequestLogEntry) => string>> = {
  // The route may be any path a client sent (a 404): escaped, and quoted in the JSON form.
  json: (e) => printableJson(e),
  text: (e) => {
    const tokens = e.prompt_tokens === undefined ? '' : ` · ${e.prompt_tokens} prompt + ${e.completion_tokens} completion tokens`
    return `${e.time} ${e.method} ${printable(e.route, {max: 120})} ${e.status}${tokens} · ${e.ms} ms`
  },
}

/**
 * Log every request through `write` once its response ends (finished, failed or cut off). Installed
 * before any other hook, so the time counts from arrival and a request refused by a hook (401) is logged.
 */
export function installRequestLog(app: FastifyInstance, format: LogFormat, write: (line: string) => void): void {
  if (format === 'none') return
  const render = FORMATS[format]
  app.addHook('onRequest', (req, reply, done) => {
    const started = performance.now()
    const tally: Tally = {prompt: 0, completion: 0, counted: false}
    reply.raw.once('close', () => {
      const entry: RequestLogEntry = {
        time: new Date().toISOString(),
        method: req.method,
        route: routeOf(req),
        status: reply.raw.writableFinished ? reply.raw.statusCode : 499,
        ...(tally.counted ? {prompt_tokens: tally.prompt, completion_tokens: tally.completion} : {}),
        ms: Math.round(performance.now() - started),
      }
      write(render(entry))
    })
    // The rest of the request (hooks, handler) runs inside this tally's context.
    tallies.run(tally, done)
  })
}

function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? req.url.split('?')[0]!
}
