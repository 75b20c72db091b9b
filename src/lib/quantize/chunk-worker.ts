/**
 * A quantize worker thread: converts chunks of whole rows (source bytes → floats → the target type)
 * with the same reference quantizers the main thread uses, so the bytes do not depend on which
 * thread converted a chunk.
 */
import {parentPort} from 'node:worker_threads'

import {quantizeRef, toFloat} from '../engine/index.js'

export interface ChunkJob {
  readonly id: number
  readonly from: string
  readonly to: string
  readonly src: Uint8Array
  readonly values: number
}

export function convertChunk(job: Omit<ChunkJob, 'id'>): Uint8Array {
  return quantizeRef(job.to, toFloat(job.from, job.src, job.values))
}

parentPort?.on('message', (job: ChunkJob) => {
  try {
    const out = convertChunk(job)
    parentPort!.postMessage({id: job.id, out}, [out.buffer as ArrayBuffer])
  } catch (error) {
    parentPort!.postMessage({id: job.id, error: (error as Error).message})
  }
})
