// Helpers for the server tests: an in-process server on a free loopback port, an OpenAI client for
// it (no retries: a retried 503 or 408 would hide the status under test), and /metrics readings.
import {connect, type Socket} from 'node:net'

import OpenAI from 'openai'

import {type RunningServer, type ServeOptions, startServer} from '../../src/lib/server/index.js'

export interface TestServer {
  readonly server: RunningServer
  readonly url: string
  readonly client: OpenAI
  close(): Promise<void>
}

export async function startTestServer(options: Omit<ServeOptions, 'host' | 'port'>): Promise<TestServer> {
  const server = await startServer({host: '127.0.0.1', port: 0, ...options})
  const client = new OpenAI({baseURL: `${server.url}/v1`, apiKey: options.apiKey ?? 'unused', maxRetries: 0, timeout: 60_000})
  return {server, url: server.url, client, close: () => server.close(1000)}
}

/** One sample of /metrics, by name and (optionally) exact label text. */
export async function metric(url: string, name: string, labels = '', headers: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, {headers})).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `))
  return line === undefined ? 0 : Number(line.split(' ')[1])
}

/** Poll until /metrics shows no busy slot and nothing queued (or fail after timeoutMs). */
export async function waitIdle(url: string, timeoutMs = 5000): Promise<number> {
  const t0 = performance.now()
  for (;;) {
    const busy = await metric(url, 'runner_slots_busy')
    const queued = await metric(url, 'runner_queue_depth')
    if (busy === 0 && queued === 0) return performance.now() - t0
    if (performance.now() - t0 > timeoutMs) throw new Error(`slots still busy (${busy}) or queued (${queued}) after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** POST a raw body (for what the OpenAI client cannot send: bad JSON, oversize bodies). */
export async function postRaw(
  url: string,
  path: string,
  body: string,
  headers: Record<string, string> = {'content-type': 'application/json'},
) {
  const r = await fetch(`${url}${path}`, {method: 'POST', headers, body})
  return {
    status: r.status,
    headers: r.headers,
    body: (await r.json()) as {error: {message: string; type: string; param: string | null; code: string | null}},
  }
}

/** A raw connection, and everything the server sends until it closes it (or `ms` pass). */
export function rawExchange(
  url: string,
  write: (s: Socket) => void,
  ms: number,
): Promise<{text: string; closed: boolean; afterMs: number}> {
  const {hostname, port} = new URL(url)
  return new Promise((resolve) => {
    const t0 = performance.now()
    const s = connect(Number(port), hostname)
    let text = ''
    const done = (closed: boolean) => {
      clearTimeout(timer)
      s.destroy()
      resolve({text, closed, afterMs: performance.now() - t0})
    }
    const timer = setTimeout(() => done(false), ms)
    s.on('data', (d) => (text += d.toString('latin1')))
    s.on('close', () => done(true))
    s.on('error', () => done(true))
    s.on('connect', () => write(s))
  })
}
