/**
 * What a running server owns, passed explicitly to every handler: the request environment (model
 * id, tokenizer, template, context size), the scheduler and its slots, the metrics, and the
 * requests in flight (each with an AbortController that a timeout, a client leaving or a shutdown
 * raises, and a promise that settles once its slot is free again).
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import type {GgufModelFiles} from '../gguf/index.js'

import {ApiError} from './api-error.js'
import type {GenerationContext} from './generation.js'
import type {Metrics} from './metrics.js'
import type {RequestEnv} from './requests.js'
import type {Scheduler} from './scheduler.js'

export interface RequestLife {
  readonly signal: AbortSignal
  /** The handler is done with the request (its generation settled). */
  end(): void
}

interface InFlight {
  readonly controller: AbortController
  readonly done: Promise<void>
}

export class ServerState {
  closing = false
  readonly createdAt = Math.floor(Date.now() / 1000)
  private readonly inFlight = new Set<InFlight>()

  constructor(
    readonly env: RequestEnv,
    readonly generation: GenerationContext,
    readonly scheduler: Scheduler,
    readonly metrics: Metrics,
    readonly capabilities: Record<string, unknown>,
    /** Per-request limit in milliseconds, counted from arrival (queue and prefill included). */
    private readonly timeoutMs: number,
    /** The served file's parsed header (Ollama's /api/show, /api/tags and /api/ps describe the model from it). */
    readonly gguf?: GgufModelFiles,
  ) {}

  get inFlightCount(): number {
    return this.inFlight.size
  }

  track(req: FastifyRequest, reply: FastifyReply): RequestLife {
    const controller = new AbortController()
    const startedAt = (req as FastifyRequest & {startedAt?: number}).startedAt ?? performance.now()
    const remaining = Math.max(0, this.timeoutMs - (performance.now() - startedAt))
    const timer = setTimeout(() => {
      controller.abort(
        new ApiError(
          408,
          `the request did not finish within the server's timeout of ${this.timeoutMs / 1000} s (--timeout)`,
          null,
          'request_timeout',
        ),
      )
    }, remaining)
    const onClose = () => {
      // 'close' before the response finished: the client went away. Free its slot now.
      if (!reply.raw.writableFinished)
        controller.abort(new ApiError(499, 'the client closed the connection', null, 'client_closed_request'))
    }
    reply.raw.on('close', onClose)
    let finish!: () => void
    const entry: InFlight = {controller, done: new Promise<void>((resolve) => (finish = resolve))}
    this.inFlight.add(entry)
    return {
      signal: controller.signal,
      end: () => {
        clearTimeout(timer)
        reply.raw.off('close', onClose)
        this.inFlight.delete(entry)
        finish()
      },
    }
  }

  /** Wait for in-flight requests, up to graceMs; then abort the rest (503) and wait for their slots. */
  async drain(graceMs: number): Promise<void> {
    const all = () => Promise.all([...this.inFlight].map((e) => e.done))
    let timer: NodeJS.Timeout | undefined
    const timedOut = await Promise.race([
      all().then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ])
    clearTimeout(timer)
    if (timedOut) {
      for (const e of this.inFlight) e.controller.abort(new ApiError(503, 'the server is shutting down', null, 'server_shutting_down'))
      await all()
    }
  }
}
