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

type Pending = {resolve: (reply: PromptReply) => void; reject: (error: Error) => void; timer: NodeJS.Timeout}

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

/** One worker and the jobs it holds. */
class PromptWorker {
  readonly pending = new Map<number, Pending>()
  readonly worker: Worker
  /** Settles once the worker has built its template and tokenizer (or failed to). */
  readonly ready: Promise<void>
  hasStarted = false

  constructor(data: PromptWorkerData, heapMb: number, onExit: (w: PromptWorker, error: Error) => void) {
    this.worker = new Worker(workerUrl(), {workerData: data, resourceLimits: {maxOldGenerationSizeMb: heapMb}})
    this.worker.unref()
    let started: () => void = () => {}
    let failedToStart: (error: Error) => void = () => {}
    this.ready = new Promise((resolve, reject) => {
      started = resolve
      failedToStart = reject
    })
    this.worker.on('message', (reply: PromptReply | 'ready') => {
      if (reply === 'ready') {
        this.hasStarted = true
        return started()
      }
      const p = this.pending.get(reply.id)
      this.pending.delete(reply.id)
      if (p) clearTimeout(p.timer)
      p?.resolve(reply)
    })
    const fail = (error: Error) => {
      failedToStart(error)
      for (const p of this.pending.values()) {
        clearTimeout(p.timer)
        p.reject(error)
      }
      this.pending.clear()
      onExit(this, error)
    }
    this.worker.on('error', fail)
    this.worker.on('exit', (code) => fail(new Error(`the prompt worker exited (${code})`)))
  }
}

export class PromptWorkers implements PromptWork {
  private readonly workers: PromptWorker[] = []
  private next = 0
  private nextId = 0
  private closed = false
  private readonly data: PromptWorkerData
  private readonly deadlineMs: number

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
    try {
      await Promise.all(this.workers.map((w) => w.ready))
    } catch (error) {
      throw new RunnerError('SERVE_PROMPT_WORKER', `a prompt worker thread could not start: ${(error as Error).message}`)
    }
  }

  private spawn(): PromptWorker {
    return new PromptWorker(this.data, this.options.heapMb, (gone) => {
      const i = this.workers.indexOf(gone)
      // Replaced only once it had started: a worker that cannot start would fail again at once.
      if (i >= 0 && !this.closed && gone.hasStarted) this.workers[i] = this.spawn()
    })
  }

  private run(job: PromptJobBody): Promise<PromptReply> {
    if (this.closed) return Promise.reject(new ApiError(503, 'the server is shutting down', null, 'shutting_down'))
    // The worker with the fewest jobs waiting; ties go round in turn.
    const start = this.next++ % this.workers.length
    const order = this.workers.map((_, i) => this.workers[(start + i) % this.workers.length]!)
    const w = order.reduce((a, b) => (b.pending.size < a.pending.size ? b : a))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        w.pending.delete(id)
        reject(
          new ApiError(500, `rendering or tokenizing this request took over ${this.deadlineMs} ms; it was stopped`, null, 'prompt_timeout'),
        )
        void w.worker.terminate()
      }, this.deadlineMs)
      w.pending.set(id, {resolve, reject, timer})
      w.worker.postMessage({...job, id})
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
