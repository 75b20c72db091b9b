import {Worker} from 'node:worker_threads'

import {ExitCode, RunnerError} from '../errors.js'
import {type ChunkJob, convertChunk} from './chunk-worker.js'

type Pending = {resolve: (out: Uint8Array) => void; reject: (error: Error) => void}

/**
 * Converts chunks on `threads` worker threads (or inline with one thread), each chunk independent,
 * results returned in submission order by the caller awaiting each promise in turn.
 */
export class ChunkPool {
  private readonly workers: Worker[] = []
  private readonly pending = new Map<number, Pending>()
  private next = 0

  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 1 || threads > 256)
      throw new RunnerError('QUANT_BAD_THREADS', `--threads ${threads} must be an integer from 1 to 256`, ExitCode.usage)
    if (threads === 1) return
    // Compiled: chunk-worker.js beside this file. Under tsx (tests, scripts): the .ts, loaded through tsx.
    const url = new URL(import.meta.url.endsWith('.ts') ? './chunk-worker.ts' : './chunk-worker.js', import.meta.url)
    const execArgv = import.meta.url.endsWith('.ts') ? ['--import', 'tsx'] : []
    for (let i = 0; i < threads; i++) {
      const w = new Worker(url, {execArgv})
      w.on('message', (m: {id: number; out?: Uint8Array; error?: string}) => {
        const p = this.pending.get(m.id)
        this.pending.delete(m.id)
        if (m.error !== undefined || !m.out) p?.reject(new RunnerError('QUANT_WORKER_FAILED', `a quantize worker failed: ${m.error}`))
        else p?.resolve(m.out)
      })
      w.on('error', (error) => {
        for (const p of this.pending.values()) p.reject(error)
        this.pending.clear()
      })
      this.workers.push(w)
    }
  }

  /** Convert one chunk; `src` is transferred to the worker (do not use it afterwards). */
  convert(job: Omit<ChunkJob, 'id'>): Promise<Uint8Array> {
    if (this.workers.length === 0) return Promise.resolve(convertChunk(job))
    const id = this.next++
    const worker = this.workers[id % this.workers.length]!
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject})
      worker.postMessage({...job, id}, [job.src.buffer as ArrayBuffer])
    })
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()))
  }
}
