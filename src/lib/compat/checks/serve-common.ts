/**
 * What serve_smoke and tool_call share: the official `openai` client (a devDependency, so loaded
 * only when a check runs, and its absence is a `when` reason), and a server started in-process on
 * a free loopback port for one row, closed after the check whatever happened.
 */
import type OpenAI from 'openai'

import {type RunningServer, startServer} from '../../server/index.js'
import type {CheckEnv, CheckParams, ParamSpec, RosterRow} from '../types.js'
import {numberParam} from '../types.js'

export const NO_OPENAI_REASON = 'the openai package is not installed'

type OpenaiImport = () => Promise<{default: typeof OpenAI}>

/** The `openai` package's client class, or undefined when it is not installed (`load`: the import, for tests). */
export async function openaiClient(load: OpenaiImport = () => import('openai')): Promise<typeof OpenAI | undefined> {
  try {
    return (await load()).default
  } catch {
    return undefined
  }
}

/** `when` of both checks: the client must be importable. */
export async function openaiMissing(load?: OpenaiImport): Promise<string | undefined> {
  return (await openaiClient(load)) === undefined ? NO_OPENAI_REASON : undefined
}

export const SERVE_DEFAULT_CTX = 1024

export const SERVE_PARAMS: Readonly<Record<string, ParamSpec>> = {
  nCtx: {
    type: 'integer',
    minimum: 16,
    description: `KV positions of the server's one slot (default ${SERVE_DEFAULT_CTX}; the tool prompt of a model without tool support is about 360 tokens)`,
  },
}

export interface Served {
  readonly server: RunningServer
  readonly client: OpenAI
  /** Where the chat template came from (/v1/capabilities): model, fallback-chatml or override. */
  readonly templateOrigin: string
  readonly startMs: number
}

/** Milliseconds since t0, to 0.1 ms. */
export const since = (t0: number): number => Math.round((performance.now() - t0) * 10) / 10

/** Start the row's model on 127.0.0.1 port 0 (one slot, env.threads threads), run `fn`, close the server. */
export async function withServer<T>(row: RosterRow, params: CheckParams, env: CheckEnv, fn: (s: Served) => Promise<T>): Promise<T> {
  const OpenAIClient = await openaiClient()
  if (!OpenAIClient) throw new Error(NO_OPENAI_REASON)
  const nCtx = numberParam(params, 'nCtx', SERVE_DEFAULT_CTX)
  const t0 = performance.now()
  const server = await startServer({modelPath: row.path, host: '127.0.0.1', port: 0, parallel: 1, nCtx, threadsPerSlot: env.threads})
  try {
    const startMs = since(t0)
    // No retries: a retried 503 would hide what the server said.
    const client = new OpenAIClient({baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000})
    const caps = (await (await fetch(`${server.url}/v1/capabilities`, {signal: env.signal})).json()) as {chat_template?: {origin?: string}}
    return await fn({
      server,
      client,
      templateOrigin: caps.chat_template?.origin ?? '?',
      startMs,
    })
  } finally {
    await server.close(1000)
  }
}

/** An error's message for evidence (the client's APIError carries the HTTP status). */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const status = (error as {status?: unknown}).status
    return typeof status === 'number' ? `HTTP ${status}: ${error.message}` : error.message
  }
  return String(error)
}

/** A reply text quoted for evidence, cut at 80 characters. */
export function quote(text: string | null | undefined): string {
  if (text === null || text === undefined) return String(text)
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)
}
