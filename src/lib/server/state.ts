/**
 * What a running server owns, passed explicitly to every handler. ServerCore is the server-wide
 * part: the fleet of models (./fleet.ts), the metrics, the capabilities document, and the requests
 * in flight (each with an AbortController that a timeout, a client leaving or a shutdown raises,
 * and a promise that settles once its slot is free again). ServerState is what a model's routes
 * see: the core and the one loaded model the request named (its request environment, scheduler
 * and slots), held for the request's whole life.
 */
import type {FastifyReply, FastifyRequest} from 'fastify'

import type {GgufModelFiles} from '../gguf/index.js'

import {ApiError} from './api-error.js'
import type {Fleet} from './fleet.js'
import type {GenerationContext} from './generation.js'
import type {Metrics} from './metrics.js'
import type {ModelHost} from './model-host.js'
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

export class ServerCore {
  closing = false
  readonly createdAt = Math.floor(Date.now() / 1000)
  private readonly inFlight = new Set<InFlight>()

  constructor(
    readonly fleet: Fleet,
    readonly metrics: Metrics,
    /** /v1/capabilities, built when asked (the loaded models change). */
    readonly capabilities: () => Record<string, unknown>,
    /** Per-request limit in milliseconds, counted from arrival (queue, model load and prefill included). */
    readonly timeoutMs: number,
  ) {}

  get inFlightCount(): number {
    return this.inFlight.size
  }

  /** The request's timeout, as a reason to abort with. */
  timeoutError(): ApiError {
    return new ApiError(
      408,
      `the request did not finish within the server's timeout of ${this.timeoutMs / 1000} s (--timeout)`,
      null,
      'request_timeout',
    )
  }

  /** Milliseconds left of the request's timeout. */
  remainingMs(req: FastifyRequest): number {
    const startedAt = (req as FastifyRequest & {startedAt?: number}).startedAt ?? performance.now()
    return Math.max(0, this.timeoutMs - (performance.now() - startedAt))
  }

  /** Aborted when the request's timeout passes or its client leaves: what waiting for a model load honours. */
  waitSignal(req: FastifyRequest, reply: FastifyReply): {readonly signal: AbortSignal; done(): void} {
    const {controller, done} = this.abortable(req, reply)
    return {signal: controller.signal, done}
  }

  /** As waitSignal, and counted in flight until `end` (shutdown waits for it, then aborts it with 503). */
  track(req: FastifyRequest, reply: FastifyReply): RequestLife {
    const {controller, done} = this.abortable(req, reply)
    let finish!: () => void
    const entry: InFlight = {controller, done: new Promise<void>((resolve) => (finish = resolve))}
    this.inFlight.add(entry)
    return {
      signal: controller.signal,
      end: () => {
        done()
        this.inFlight.delete(entry)
        finish()
      },
    }
  }

  /** A controller the request's timeout (408) and its client leaving (499) abort; `done` stops both. */
  private abortable(req: FastifyRequest, reply: FastifyReply): {controller: AbortController; done: () => void} {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(this.timeoutError()), this.remainingMs(req))
    const onClose = () => {
      // 'close' before the response finished: the client went away. Free its slot now.
      if (!reply.raw.writableFinished)
        controller.abort(new ApiError(499, 'the client closed the connection', null, 'client_closed_request'))
    }
    reply.raw.on('close', onClose)
    return {
      controller,
      done: () => {
        clearTimeout(timer)
        reply.raw.off('close', onClose)
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

/** The core and one loaded model: what the routes of a model (chat, embeddings, tokenize...) read. */
export class ServerState {
  constructor(
    readonly core: ServerCore,
    readonly host: ModelHost,
    /** Milliseconds the request waited for its model to load (0: it was loaded). */
    readonly loadMs = 0,
  ) {}

  get env(): RequestEnv {
    return this.host.env
  }

  get generation(): GenerationContext {
    return this.host.generation
  }

  get scheduler(): Scheduler {
    return this.host.scheduler
  }

  /** The served file's parsed header (Ollama's /api/show describes the model from it). */
  get gguf(): GgufModelFiles {
    return this.host.model.gguf
  }

  get metrics(): Metrics {
    return this.core.metrics
  }

  get closing(): boolean {
    return this.core.closing
  }

  get createdAt(): number {
    return this.core.createdAt
  }

  track(req: FastifyRequest, reply: FastifyReply): RequestLife {
    return this.core.track(req, reply)
  }
}
