import {closeSync, openSync, readSync} from 'node:fs'
import {basename} from 'node:path'

import {loadAddon} from '../engine/index.js'
import {type GgufKv, type GgufModelFiles, GgufValueType, type GgufWriteOptions, writeGguf} from '../gguf/index.js'
import type {LoraMerge} from './merge-lora.js'
import {FILE_TYPE, type QuantizeOptions, type TensorDecision} from './plan.js'
import {ChunkPool} from './pool.js'

export interface QuantizeSummary {
  readonly output: string
  readonly tensors: number
  readonly converted: number
  readonly bytesBefore: number
  readonly bytesAfter: number
  readonly fileBytes: number
  /** Bits per weight over every tensor, after. */
  readonly bitsPerWeight: number
  readonly ms: number
}

/** Values converted per step, so a tensor of any size streams through bounded memory. */
const CHUNK_VALUES = 1 << 22

/**
 * The tensor's bytes converted to `to`, in whole rows, read with positioned reads. Up to
 * 2 x threads chunks are in flight on the pool; they come back in order, so the output does not
 * depend on the thread count.
 */
async function* convert(d: TensorDecision, pool: ChunkPool, merges: readonly LoraMerge[] = []): AsyncIterable<Uint8Array> {
  const t = d.tensor
  const ne0 = t.shape[0]!
  const rows = t.nElements / ne0
  const rowBytes = t.byteSize / rows
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_VALUES / ne0))
  const inFlight: Array<Promise<Uint8Array>> = []
  const fd = openSync(t.file, 'r')
  try {
    for (let r = 0; r < rows; r += rowsPerChunk) {
      const n = Math.min(rowsPerChunk, rows - r)
      const src = new Uint8Array(n * rowBytes)
      let got = 0
      while (got < src.length) got += readSync(fd, src, got, src.length - got, t.offset + r * rowBytes + got)
      // Each job gets only its rows of b (a slice, so a worker is not sent the whole of it per chunk).
      const merge = merges.map((m) => ({...m, b: m.b.slice(r * m.rank, (r + n) * m.rank)}))
      const job = pool.convert({from: d.from.name, to: d.to.name, src, values: n * ne0, rowValues: ne0, merge})
      job.catch(() => {}) // awaited in order below; an early failure must not go unhandled meanwhile
      inFlight.push(job)
      if (inFlight.length >= 2 * pool.threads) yield await inFlight.shift()!
    }
    while (inFlight.length > 0) yield await inFlight.shift()!
  } finally {
    closeSync(fd)
  }
}

/** Metadata of the output: the input's, without split keys, with file type and provenance updated. */
function outputKvs(
  model: GgufModelFiles,
  base: readonly GgufKv[],
  decisions: readonly TensorDecision[],
  options: QuantizeOptions,
): GgufKv[] {
  const quantized = decisions.some((d) => d.to.blockSize > 1)
  const set: GgufKv[] = [
    {key: 'general.file_type', type: GgufValueType.UINT32, value: FILE_TYPE[options.type.toUpperCase()] ?? 0},
    ...(quantized ? [{key: 'general.quantization_version', type: GgufValueType.UINT32, value: 2}] : []),
    {key: 'runner.quantize.type', type: GgufValueType.STRING, value: options.type.toUpperCase()},
    {key: 'runner.quantize.pure', type: GgufValueType.BOOL, value: Boolean(options.pure)},
    {key: 'runner.quantize.keep_output', type: GgufValueType.BOOL, value: Boolean(options.keepOutput)},
    {key: 'runner.quantize.plan_rules', type: GgufValueType.UINT32, value: options.plan?.length ?? 0},
    {key: 'runner.quantize.source', type: GgufValueType.STRING, value: basename(model.path)},
    {key: 'runner.quantize.tool', type: GgufValueType.STRING, value: `runner ${loadAddon().version()}`},
  ]
  const replaced = new Map(set.map((kv) => [kv.key, kv]))
  // A sharded input becomes one file: it must not claim to be part of a set.
  const kept = base.filter((kv) => !kv.key.startsWith('split.')).map((kv) => replaced.get(kv.key) ?? kv)
  const present = new Set(kept.map((kv) => kv.key))
  return [...kept, ...set.filter((kv) => !present.has(kv.key))]
}

export async function quantizeModel(
  model: GgufModelFiles,
  out: string,
  decisions: readonly TensorDecision[],
  options: QuantizeOptions,
  /** Bytes of the output written so far, of its total (header and padding included): a progress line. */
  onBytes?: (written: number, total: number) => void,
  /** Metadata to start from (default: the model's; remove-sublayer passes its rewritten set). */
  baseKvs: readonly GgufKv[] = model.kvs,
  /** Worker threads converting chunks (1: on this thread). The bytes are the same for any count. */
  threads = 1,
  /** Refuse an existing output (no --force) and stop on Ctrl+C: as writeGguf. */
  write: Pick<GgufWriteOptions, 'exclusive' | 'signal'> = {},
  /** LoRA deltas by tensor name (--merge-lora): those tensors are rewritten even where their type stays. */
  merges: ReadonlyMap<string, readonly LoraMerge[]> = new Map(),
): Promise<QuantizeSummary> {
  const t0 = performance.now()
  const pool = new ChunkPool(threads)
  const tensors = decisions.map((d) => ({
    name: d.tensor.name,
    type: d.to,
    shape: d.tensor.shape,
    data:
      d.to.id === d.from.id && !merges.has(d.tensor.name)
        ? {file: d.tensor.file, offset: d.tensor.offset}
        : () => convert(d, pool, merges.get(d.tensor.name)),
  }))
  let result
  try {
    result = await writeGguf(
      out,
      {version: 3, kvs: outputKvs(model, baseKvs, decisions, options), tensors},
      {
        ...write,
        inputs: model.shards.map((s) => s.path),
        onBytes,
      },
    )
  } finally {
    await pool.close()
  }
  const params = decisions.reduce((n, d) => n + d.tensor.nElements, 0)
  const bytesAfter = decisions.reduce((n, d) => n + (d.tensor.nElements / d.to.blockSize) * d.to.bytesPerBlock, 0)
  return {
    output: result.path,
    tensors: decisions.length,
    converted: decisions.filter((d) => d.to.id !== d.from.id || merges.has(d.tensor.name)).length,
    bytesBefore: decisions.reduce((n, d) => n + d.tensor.byteSize, 0),
    bytesAfter,
    fileBytes: result.bytes,
    bitsPerWeight: (8 * bytesAfter) / params,
    ms: performance.now() - t0,
  }
}
