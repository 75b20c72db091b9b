/**
 * Template rendering and tokenization for requests, off the event loop: a small pool of worker
 * threads (./prompt-worker.ts), each with its own copy of the template and tokenizer. A job that
 * outlives its deadline (a template past its time budget that somehow keeps going) or a worker that
 * runs out of its heap is answered with an error and the worker replaced; the server stays healthy.
 * `inlinePromptWork` does the same work on the calling thread (tools, tests).
 */
import {Worker} from 'node:worker_threads'

import {type ChatMessage, ChatHistoryError, type ChatTemplate, type RenderOptions} from '../chat/index.js'
import {RunnerError} from '../errors.js'
import type {GgufModelFiles} from '../gguf/index.js'
import {type Tokenizer, TokenizerError, type TokenizerErrorCodeValue} from '../tokenizer/index.js'
import {ApiError} from './api-error.js'
import {type EncodeMode, encodeText, type PromptJob, type PromptReply, type PromptWorkerData, type WorkerFailure} from './prompt-jobs.js'

export interface PromptWork {
  render(messages: readonly ChatMessage[], options?: RenderOptions): Promise<string>
  encode(text: string, mode: EncodeMode): Promise<number[]>
  close(): Promise<void>
}

export function inlinePromptWork(template: ChatTemplate, tokenizer: Tokenizer): PromptWork {
  return {
    render: async (messages, options = {}) => template.render(messages, options),
    encode: async (text, mode) => encodeText(tokenizer, text, mode),
    close: async () => {},
  }
}

export interface PromptWorkerOptions {
  readonly workers: number
  /** Heap of each worker, MiB: a render or tokenization past it fails alone. */
  readonly heapMb: number
}

/** Time a job may take beyond the template's own time budget before its worker is replaced. */
const DEADLINE_MARGIN_MS = 5000

/** A job without its id (Omit over each member of the union). */
type PromptJobBody = PromptJob extends infer J ? (J extends unknown ? Omit<J, 'id'> : never) : never

/** A job waiting for a worker, or running on one. */
interface Queued {
  readonly job: PromptJobBody
  readonly resolve: (reply: PromptReply) => void
  readonly reject: (error: Error) => void
}

/** Jobs that may wait for a worker; more are refused with 503, as the slot queue refuses. */
export const PROMPT_QUEUE_LIMIT = 256

/**
 * The worker's module: prompt-worker.js beside this file once compiled. Under tsx (tests, scripts)
 * the compiled copy in dist/, which `npm test` builds first: Node 20 does not pass tsx's loader
 * (`--import tsx`) on to worker threads.
 */
function workerUrl(): URL {
  const here = import.meta.url
  if (!here.endsWith('.ts')) return new URL('./prompt-worker.js', here)
  return new URL(here.replace(/\/src\/lib\/server\/prompt-work\.ts$/, '/dist/src/lib/server/prompt-worker.js'))
}

/** One worker thread and the one job it runs at a time. */
class PromptWorker {
  readonly worker: Worker
  /** Settles once the worker has built its template and tokenizer (or failed to); never rejects unhandled. */
  readonly ready: Promise<boolean>
  hasStarted = false
  /** The job it runs, and the timer that stops it past its deadline. */
  current: {readonly queued: Queued; readonly id: number; readonly timer: NodeJS.Timeout} | undefined

  constructor(
    data: PromptWorkerData,
    heapMb: number,
    onReply: (w: PromptWorker, reply: PromptReply) => void,
    onExit: (w: PromptWorker, error: Error) => void,
  ) {
    this.worker = new Worker(workerUrl(), {workerData: data, resourceLimits: {maxOldGenerationSizeMb: heapMb}})
    this.worker.unref()
    let started: (ok: boolean) => void = () => {}
    this.ready = new Promise((resolve) => (started = resolve))
    this.worker.on('message', (reply: PromptReply | 'ready') => {
      if (reply !== 'ready') return onReply(this, reply)
      this.hasStarted = true
      started(true)
    })
    let gone = false
    const fail = (error: Error) => {
      if (gone) return
      gone = true
      started(false)
      onExit(this, error)
    }
    this.worker.on('error', fail)
    this.worker.on('exit', (code) => fail(new Error(`the prompt worker exited (${code})`)))
  }
}

export class PromptWorkers implements PromptWork {
  private readonly workers: PromptWorker[] = []
  private readonly queue: Queued[] = []
  private nextId = 0
  private closed = false
  private readonly data: PromptWorkerData
  private readonly deadlineMs: number
  private startError: Error | undefined

  constructor(
    gguf: GgufModelFiles,
    template: ChatTemplate,
    private readonly options: PromptWorkerOptions,
  ) {
    this.data = {
      metadata: gguf.metadata,
      offsets: gguf.shards[0]?.kvOffsets ?? new Map(),
      file: gguf.path,
      template: {source: template.source, origin: template.origin, tokens: template.tokens, budget: template.budget},
    }
    this.deadlineMs = template.budget.milliseconds + DEADLINE_MARGIN_MS
    for (let i = 0; i < options.workers; i++) this.workers.push(this.spawn())
  }

  /** Every worker started; a worker that cannot start is a RunnerError here, at startup, not a 500 per request. */
  async started(): Promise<void> {
    const ok = await Promise.all(this.workers.map((w) => w.ready))
    if (ok.includes(false))
      throw new RunnerError('SERVE_PROMPT_WORKER', `a prompt worker thread could not start: ${this.startError?.message ?? 'it exited'}`)
  }

  private spawn(): PromptWorker {
    const w = new PromptWorker(
      this.data,
      this.options.heapMb,
      (worker, reply) => this.replied(worker, reply),
      (gone, error) => this.exited(gone, error),
    )
    void w.ready.then((ok) => ok && this.dispatch())
    return w
  }

  private replied(w: PromptWorker, reply: PromptReply): void {
    const current = w.current
    if (!current || current.id !== reply.id) return
    clearTimeout(current.timer)
    w.current = undefined
    current.queued.resolve(reply)
    this.dispatch()
  }

  /**
   * A worker is gone (stopped past its deadline, out of its heap, or crashed): its job fails with
   * the reason, the jobs queued behind it go to the others, and a worker that had started is
   * replaced. One that never started is not (it would fail again at once).
   */
  private exited(gone: PromptWorker, error: Error): void {
    const current = gone.current
    gone.current = undefined
    if (current) {
      clearTimeout(current.timer)
      current.queued.reject(error)
    }
    if (!gone.hasStarted) this.startError ??= error
    const i = this.workers.indexOf(gone)
    if (i < 0 || this.closed) return
    if (gone.hasStarted) this.workers[i] = this.spawn()
    else this.workers.splice(i, 1)
    if (this.workers.length === 0) {
      for (const q of this.queue.splice(0))
        q.reject(new ApiError(500, `the prompt workers cannot start: ${error.message}`, null, 'internal_error'))
    }
    this.dispatch()
  }

  /** Queued jobs to idle, started workers, in arrival order; each job's deadline runs from here. */
  private dispatch(): void {
    for (const w of this.workers) {
      if (this.queue.length === 0) return
      if (!w.hasStarted || w.current) continue
      const queued = this.queue.shift()!
      const id = this.nextId++
      const timer = setTimeout(() => {
        w.current = undefined
        queued.reject(
          new ApiError(500, `rendering or tokenizing this request took over ${this.deadlineMs} ms; it was stopped`, null, 'prompt_timeout'),
        )
        void w.worker.terminate()
      }, this.deadlineMs)
      w.current = {queued, id, timer}
      w.worker.postMessage({...queued.job, id})
    }
  }

  private run(job: PromptJobBody): Promise<PromptReply> {
    if (this.closed) return Promise.reject(new ApiError(503, 'the server is shutting down', null, 'server_shutting_down'))
    if (this.workers.length === 0) return Promise.reject(new ApiError(500, 'the prompt workers cannot start', null, 'internal_error'))
    if (this.queue.length >= PROMPT_QUEUE_LIMIT)
      return Promise.reject(
        new ApiError(
          503,
          `${PROMPT_QUEUE_LIMIT} requests are waiting to be rendered or tokenized; retry shortly`,
          null,
          'server_overloaded',
          {'retry-after': '1'},
        ),
      )
    return new Promise((resolve, reject) => {
      this.queue.push({job, resolve, reject})
      this.dispatch()
    })
  }

  async render(messages: readonly ChatMessage[], options: RenderOptions = {}): Promise<string> {
    const reply = await this.run({op: 'render', messages, options}).catch(outOfHeap)
    if ('failure' in reply) throw fromFailure(reply.failure)
    return (reply as {text: string}).text
  }

  async encode(text: string, mode: EncodeMode): Promise<number[]> {
    const reply = await this.run({op: 'encode', text, mode}).catch(outOfHeap)
    if ('failure' in reply) throw fromFailure(reply.failure)
    return Array.from((reply as {ids: Int32Array}).ids)
  }

  async close(): Promise<void> {
    this.closed = true
    for (const q of this.queue.splice(0)) q.reject(new ApiError(503, 'the server is shutting down', null, 'server_shutting_down'))
    await Promise.all(this.workers.map((w) => w.worker.terminate()))
  }
}

/** A worker that died of its heap limit: the request was too large to render or tokenize. */
function outOfHeap(error: Error & {code?: string}): never {
  if (error.code === 'ERR_WORKER_OUT_OF_MEMORY')
    throw new ApiError(
      413,
      'rendering or tokenizing this request needs more memory than a prompt worker has; send less',
      null,
      'request_too_large',
    )
  throw error
}

function fromFailure(f: WorkerFailure): Error {
  if (f.kind === 'history') return new ChatHistoryError(f.param, f.message, f.code)
  if (f.kind === 'tokenizer') return new TokenizerError(f.code as TokenizerErrorCodeValue, f.field, f.message, f.exitCode)
  if (f.kind === 'runner') return new RunnerError(f.code, f.message, f.exitCode)
  return new Error(f.message)
}
