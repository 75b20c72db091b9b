/**
 * A quantize worker thread: converts chunks of whole rows (source bytes → floats → the target type)
 * with the same reference quantizers the main thread uses, so the bytes do not depend on which
 * thread converted a chunk. With --merge-lora the rows get their adapters' deltas in between.
 */
import {parentPort} from 'node:worker_threads'

import {loraMergeRows, quantizeRef, toFloat} from '../engine/index.js'
import type {LoraMerge} from './merge-lora.js'

export interface ChunkJob {
  readonly id: number
  readonly from: string
  readonly to: string
  readonly src: Uint8Array
  readonly values: number
  /** Values per row (needed with merge). */
  readonly rowValues: number
  /** LoRA deltas to add to these rows first (--merge-lora); each b holds only these rows. */
  readonly merge?: readonly LoraMerge[]
}

export function convertChunk(job: Omit<ChunkJob, 'id'>): Uint8Array {
  const rows = toFloat(job.from, job.src, job.values)
  for (const m of job.merge ?? []) loraMergeRows(rows, job.rowValues, m.a, m.b, m.rank, m.alpha, m.scale)
  return quantizeRef(job.to, rows)
}

parentPort?.on('message', (job: ChunkJob) => {
  try {
    const out = convertChunk(job)
    parentPort!.postMessage({id: job.id, out}, [out.buffer as ArrayBuffer])
  } catch (error) {
    parentPort!.postMessage({id: job.id, error: (error as Error).message})
  }
})
