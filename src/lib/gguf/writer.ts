import {open, stat} from 'node:fs/promises'
import {resolve} from 'node:path'

import {checkFreeSpace, checkOutputPath, interruptedWrite, TempFile} from '../util/index.js'
import {GgufError, GgufErrorCode} from './errors.js'
import {alignUp, GGUF_DEFAULT_ALIGNMENT, GGUF_MAX_DIMS, GGUF_MAX_TENSOR_NAME_BYTES} from './reader.js'
import {type GgmlTypeInfo, ggmlTypeById, tensorByteSize} from './types.js'
import {FIXED_VALUE_TYPES, type GgufArray, type GgufKv, type GgufValue, GgufValueType, valueTypeName} from './values.js'

/** Where a tensor's bytes come from: in memory, a range of an existing file, or a generator of chunks. */
export type TensorData =
  Uint8Array | {readonly file: string; readonly offset: number} | (() => Iterable<Uint8Array> | AsyncIterable<Uint8Array>)

export interface GgufWriteTensor {
  readonly name: string
  readonly type: GgmlTypeInfo | number
  /** ggml order: shape[0] = ne0, the contiguous dimension. */
  readonly shape: readonly number[]
  readonly data: TensorData
}

export interface GgufWriteInput {
  readonly version?: 2 | 3
  readonly kvs: readonly GgufKv[]
  readonly tensors: readonly GgufWriteTensor[]
}

export interface GgufWriteOptions {
  /** Files this write reads from; the target may not be any of them. Files named by tensor data are added. */
  readonly inputs?: readonly string[]
  /** Called after each tensor with bytes written so far and the total. */
  readonly onProgress?: (written: number, total: number) => void
  /** Called after every chunk written (header, padding, each tensor's chunks) with bytes so far and the total: a progress line by bytes. */
  readonly onBytes?: (written: number, total: number) => void
  /** Refuse an existing file at the target (OUTPUT_EXISTS; quantize without --force) instead of replacing it. */
  readonly exclusive?: boolean
  /**
   * Ctrl+C: once raised, the write stops at the next chunk, the temporary file is removed, and the
   * error is INTERRUPTED (exit 130), saying so.
   */
  readonly signal?: AbortSignal
}

export interface GgufWriteResult {
  readonly path: string
  readonly bytes: number
  readonly dataOffset: number
}

const COPY_CHUNK = 4 << 20

/**
 * Write a GGUF v3 (or v2) file. Tensor data is laid out in the given order, each tensor at the next
 * multiple of `general.alignment` (default 32), gaps and the tail padded with zeros, as llama.cpp and
 * gguf-py do. The target is checked first (output-path.ts: a folder, a missing folder, permission,
 * an existing file when exclusive, free space for the whole file), so a conversion never runs only to
 * fail at the end. The file is written under a temporary name in the target's folder (temp-files.ts),
 * fsynced, then renamed over the target, so a crash never leaves a half-written model under the real
 * name; a failure or an interruption removes the temporary file.
 */
export async function writeGguf(path: string, input: GgufWriteInput, options: GgufWriteOptions = {}): Promise<GgufWriteResult> {
  const target = resolve(path)
  const layout = planLayout(input)
  await refuseOwnInput(target, [...(options.inputs ?? []), ...input.tensors.flatMap((t) => (isFileRange(t.data) ? [t.data.file] : []))])
  const {exists: targetExisted} = await checkOutputPath(target, {replace: !options.exclusive})
  await checkFreeSpace(target, layout.totalBytes)
  const {signal} = options
  if (signal?.aborted) throw interruptedWrite(target, {targetExisted})

  const out = await TempFile.create(target)
  try {
    let pos = 0
    const write = async (bytes: Uint8Array) => {
      await out.write(bytes, pos)
      pos += bytes.length
      options.onBytes?.(pos, layout.totalBytes)
      signal?.throwIfAborted()
    }
    await write(layout.header)
    await write(new Uint8Array(layout.dataOffset - layout.header.length))
    for (const [i, t] of input.tensors.entries()) {
      const want = layout.sizes[i]!
      const start = pos
      for await (const chunk of tensorChunks(t.data, want)) {
        if (pos - start + chunk.length > want) break
        await write(chunk)
      }
      if (pos - start !== want) {
        throw new GgufError(
          GgufErrorCode.writeBadTensor,
          `tensor '${t.name}'.data`,
          layout.dataOffset + layout.offsets[i]!,
          `got ${pos - start} or more bytes, expected ${want}`,
          target,
        )
      }
      await write(new Uint8Array(alignUp(pos, layout.alignment) - pos))
      options.onProgress?.(pos, layout.totalBytes)
    }
    await out.sync()
    signal?.throwIfAborted()
    await out.publish({exclusive: options.exclusive})
    return {path: target, bytes: pos, dataOffset: layout.dataOffset}
  } catch (error) {
    await out.discard()
    if (signal?.aborted) throw interruptedWrite(target, {removedTemp: out.path, targetExisted})
    throw error
  }
}

interface Layout {
  header: Uint8Array
  alignment: number
  dataOffset: number
  offsets: number[]
  sizes: number[]
  totalBytes: number
}

function planLayout(input: GgufWriteInput): Layout {
  const alignKv = input.kvs.find((kv) => kv.key === 'general.alignment')
  const alignment = alignKv ? (alignKv.value as number) : GGUF_DEFAULT_ALIGNMENT
  if (alignKv && (alignKv.type !== GgufValueType.UINT32 || alignment === 0 || (alignment & (alignment - 1)) !== 0)) {
    throw new GgufError(
      GgufErrorCode.badAlignment,
      'general.alignment',
      0,
      `${alignment} (${valueTypeName(alignKv.type)}) is not a u32 power of two`,
    )
  }
  const b = new ByteBuilder()
  b.raw(Buffer.from('GGUF', 'latin1'))
  b.u32(input.version ?? 3)
  b.u64(BigInt(input.tensors.length))
  b.u64(BigInt(input.kvs.length))
  const keys = new Set<string>()
  for (const [i, kv] of input.kvs.entries()) {
    // What the reader refuses is never written.
    if (kv.key.length === 0 || kv.key.includes('\0'))
      throw new GgufError(GgufErrorCode.badKey, `kv[${i}].key`, 0, 'a key must be non-empty and hold no NUL byte')
    if (keys.has(kv.key)) throw new GgufError(GgufErrorCode.duplicateKey, kv.key, 0, 'duplicate key')
    keys.add(kv.key)
    b.string(kv.key)
    b.u32(kv.type)
    encodeValue(b, kv.type, kv.value, kv.key)
  }
  const offsets: number[] = []
  const sizes: number[] = []
  const names = new Set<string>()
  let running = 0
  for (const t of input.tensors) {
    const type = typeof t.type === 'number' ? ggmlTypeById(t.type) : t.type
    const field = `tensor '${t.name}'`
    if (!type || type.removed)
      throw new GgufError(
        GgufErrorCode.unknownType,
        `${field}.type`,
        0,
        `type ${String(typeof t.type === 'number' ? t.type : t.type.name)} cannot be written`,
      )
    if (!t.name || Buffer.byteLength(t.name) > GGUF_MAX_TENSOR_NAME_BYTES || t.name.includes('\0'))
      throw new GgufError(GgufErrorCode.tensorName, field, 0, `name must be 1 to ${GGUF_MAX_TENSOR_NAME_BYTES} bytes, with no NUL byte`)
    if (names.has(t.name)) throw new GgufError(GgufErrorCode.duplicateTensor, field, 0, 'duplicate tensor name')
    names.add(t.name)
    if (t.shape.length < 1 || t.shape.length > GGUF_MAX_DIMS)
      throw new GgufError(GgufErrorCode.badNDims, `${field}.n_dims`, 0, `${t.shape.length} dimensions`)
    if (t.shape.some((d) => !Number.isSafeInteger(d) || d < 1))
      throw new GgufError(
        GgufErrorCode.badDim,
        `${field}.shape`,
        0,
        `[${t.shape.join(', ')}] has a dimension that is not a positive integer`,
      )
    const n = t.shape.reduce((a, d) => a * BigInt(d), 1n)
    const bytes = tensorByteSize(type, BigInt(t.shape[0]!), n)
    if (typeof bytes === 'string') throw new GgufError(GgufErrorCode.blockMultiple, `${field}.ne[0]`, 0, bytes)
    running = alignUp(running, alignment)
    offsets.push(running)
    sizes.push(Number(bytes))
    running += Number(bytes)
    b.string(t.name)
    b.u32(t.shape.length)
    for (const d of t.shape) b.i64(BigInt(d))
    b.u32(type.id)
    b.u64(BigInt(offsets[offsets.length - 1]!))
  }
  const header = b.finish()
  const dataOffset = alignUp(header.length, alignment)
  return {header, alignment, dataOffset, offsets, sizes, totalBytes: dataOffset + alignUp(running, alignment)}
}

function encodeValue(b: ByteBuilder, type: GgufValueType, value: GgufValue, field: string): void {
  const bad = (detail: string): never => {
    throw new GgufError(GgufErrorCode.writeBadValue, field, 0, detail)
  }
  switch (type) {
    case GgufValueType.STRING:
      if (typeof value !== 'string') bad(`expected a string for a string value, got ${typeof value}`)
      b.string(value as string)
      return
    case GgufValueType.BOOL:
      if (typeof value !== 'boolean') bad(`expected a boolean, got ${typeof value}`)
      b.raw(Uint8Array.of(value ? 1 : 0))
      return
    case GgufValueType.ARRAY: {
      const arr = value as GgufArray
      if (typeof arr !== 'object' || arr === null || !('itemType' in arr)) bad('expected an array value')
      b.u32(arr.itemType)
      b.u64(BigInt(arr.items.length))
      const fixed = FIXED_VALUE_TYPES.get(arr.itemType)
      if (fixed?.arrayCtor) {
        const view = arr.items
        if (!(view instanceof fixed.arrayCtor) || !ArrayBuffer.isView(view))
          return bad(`array of ${fixed.name} must be held in a ${fixed.arrayCtor.name}`)
        b.raw(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))
        return
      }
      const items = arr.items as readonly GgufValue[]
      for (let i = 0; i < items.length; i++) encodeValue(b, arr.itemType, items[i]!, `${field}[${i}]`)
      return
    }
    default: {
      const info = FIXED_VALUE_TYPES.get(type)
      if (!info) bad(`unknown value type ${type}`)
      const buf = Buffer.alloc(info!.size)
      try {
        writeScalar(buf, type, value)
      } catch (error) {
        bad(`${String(value)} does not fit a ${info!.name}: ${(error as Error).message}`)
      }
      b.raw(buf)
    }
  }
}

function writeScalar(buf: Buffer, type: GgufValueType, value: GgufValue): void {
  const num = () => {
    if (typeof value !== 'number') throw new TypeError(`expected a number, got ${typeof value}`)
    return value
  }
  const big = () => {
    if (typeof value !== 'bigint') throw new TypeError(`expected a bigint, got ${typeof value}`)
    return value
  }
  switch (type) {
    case GgufValueType.UINT8:
      buf.writeUInt8(num())
      break
    case GgufValueType.INT8:
      buf.writeInt8(num())
      break
    case GgufValueType.UINT16:
      buf.writeUInt16LE(num())
      break
    case GgufValueType.INT16:
      buf.writeInt16LE(num())
      break
    case GgufValueType.UINT32:
      buf.writeUInt32LE(num())
      break
    case GgufValueType.INT32:
      buf.writeInt32LE(num())
      break
    case GgufValueType.FLOAT32:
      buf.writeFloatLE(num())
      break
    case GgufValueType.FLOAT64:
      buf.writeDoubleLE(num())
      break
    case GgufValueType.UINT64:
      buf.writeBigUInt64LE(big())
      break
    case GgufValueType.INT64:
      buf.writeBigInt64LE(big())
      break
    default:
      throw new TypeError(`not a scalar type: ${type}`)
  }
}

function isFileRange(d: TensorData): d is {file: string; offset: number} {
  return typeof d === 'object' && !(d instanceof Uint8Array) && 'file' in d
}

async function* tensorChunks(data: TensorData, size: number): AsyncIterable<Uint8Array> {
  if (data instanceof Uint8Array) {
    yield data
    return
  }
  if (typeof data === 'function') {
    yield* data()
    return
  }
  const src = await open(data.file, 'r')
  try {
    for (let done = 0; done < size;) {
      const buf = Buffer.allocUnsafe(Math.min(COPY_CHUNK, size - done))
      const {bytesRead} = await src.read(buf, 0, buf.length, data.offset + done)
      if (bytesRead === 0) return
      done += bytesRead
      yield buf.subarray(0, bytesRead)
    }
  } finally {
    await src.close()
  }
}

/** Refuse when the target is one of the inputs: same path, or the same file through another name. */
async function refuseOwnInput(target: string, inputs: readonly string[]): Promise<void> {
  const targetStat = await stat(target).catch(() => undefined)
  for (const input of inputs) {
    const same =
      resolve(input) === target ||
      (targetStat &&
        (await stat(input).then(
          (s) => s.dev === targetStat.dev && s.ino === targetStat.ino,
          () => false,
        )))
    if (same) {
      throw new GgufError(
        GgufErrorCode.writeOverwritesInput,
        'output',
        0,
        `refusing to overwrite the input file ${input}; write to a new path`,
        target,
      )
    }
  }
}

/** Little-endian header bytes built up in chunks. */
class ByteBuilder {
  private chunks: Uint8Array[] = []
  private length = 0

  raw(bytes: Uint8Array): void {
    this.chunks.push(bytes)
    this.length += bytes.length
  }
  u32(v: number): void {
    const b = Buffer.alloc(4)
    b.writeUInt32LE(v)
    this.raw(b)
  }
  u64(v: bigint): void {
    const b = Buffer.alloc(8)
    b.writeBigUInt64LE(v)
    this.raw(b)
  }
  i64(v: bigint): void {
    const b = Buffer.alloc(8)
    b.writeBigInt64LE(v)
    this.raw(b)
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8')
    this.u64(BigInt(bytes.length))
    this.raw(bytes)
  }
  finish(): Uint8Array {
    return Buffer.concat(this.chunks, this.length)
  }
}
