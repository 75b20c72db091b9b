import {quoted} from '../util/index.js'
import {ByteSource} from './byte-source.js'
import {GgufError, GgufErrorCode} from './errors.js'
import {type GgmlTypeInfo, ggmlTypeById, tensorByteSize} from './types.js'
import {FIXED_VALUE_TYPES, type GgufArray, type GgufKv, type GgufValue, GgufValueType, minEncodedSize, valueTypeName} from './values.js'

export const GGUF_MAGIC = 'GGUF'
export const GGUF_DEFAULT_ALIGNMENT = 32
/** ggml's GGML_MAX_DIMS. */
export const GGUF_MAX_DIMS = 4
/** ggml's GGML_MAX_NAME: a tensor name must fit in 63 bytes plus its terminating zero. */
export const GGUF_MAX_TENSOR_NAME_BYTES = 63

/** Ceilings above any real model, so that a hostile header is refused before it sizes an allocation. */
export const GGUF_LIMITS = {
  tensorCount: 1_000_000,
  kvCount: 1_000_000,
  keyBytes: 65_535,
  arrayDepth: 8,
  alignment: 1 << 20,
} as const

export interface GgufTensorInfo {
  readonly name: string
  readonly type: GgmlTypeInfo
  /** Dimensions in ggml order: shape[0] = ne0, the contiguous dimension. */
  readonly shape: readonly number[]
  readonly nElements: number
  readonly byteSize: number
  /** Offset relative to the start of the tensor data section, as stored in the file. */
  readonly relativeOffset: number
  /** Absolute byte offset of the data in `file`. */
  readonly offset: number
  /** The file holding the data (differs between the shards of a split model). */
  readonly file: string
  /** Byte offset of this tensor's info record in the header, for error messages. */
  readonly infoOffset: number
}

export interface GgufFile {
  readonly path: string
  readonly version: number
  readonly fileSize: number
  readonly alignment: number
  /** Metadata in file order. */
  readonly kvs: readonly GgufKv[]
  readonly metadata: ReadonlyMap<string, GgufKv>
  readonly tensors: readonly GgufTensorInfo[]
  /** Absolute offset where the tensor data section starts. */
  readonly dataOffset: number
  /** Byte offset of each kv record, by key, for error messages later in the pipeline. */
  readonly kvOffsets: ReadonlyMap<string, number>
}

const utf8 = new TextDecoder('utf-8', {fatal: true})

/** A cursor over a ByteSource that names every field it reads. */
class HeaderCursor {
  pos = 0
  constructor(private readonly src: ByteSource) {}

  get remaining(): number {
    return this.src.size - this.pos
  }

  fail(code: string, field: string, detail: string, offset = this.pos): never {
    throw new GgufError(code, field, offset, detail, this.src.path)
  }

  private take(n: number, field: string): Buffer {
    const b = this.src.bytes(this.pos, n, field)
    this.pos += n
    return b
  }

  u8(field: string): number {
    return this.take(1, field).readUInt8(0)
  }
  u32(field: string): number {
    return this.take(4, field).readUInt32LE(0)
  }
  u64(field: string): bigint {
    return this.take(8, field).readBigUInt64LE(0)
  }
  i64(field: string): bigint {
    return this.take(8, field).readBigInt64LE(0)
  }

  /** A count that must fit in what is left of the file at `minBytesEach` bytes per item. */
  count(field: string, minBytesEach: number, ceiling: number, code: string): number {
    const at = this.pos
    const n = this.u64(field)
    const fits = BigInt(Math.floor(this.remaining / Math.max(1, minBytesEach)))
    if (n > BigInt(ceiling)) this.fail(code, field, `${n} is over the limit of ${ceiling}`, at)
    if (n > fits) this.fail(code, field, `${n} items of at least ${minBytesEach} bytes cannot fit in the ${this.remaining} bytes left`, at)
    return Number(n)
  }

  string(field: string, maxBytes = Number.MAX_SAFE_INTEGER): string {
    const at = this.pos
    const len = this.u64(`${field}.length`)
    if (len > BigInt(maxBytes)) this.fail(GgufErrorCode.stringLength, field, `length ${len} is over the limit of ${maxBytes}`, at)
    if (len > BigInt(this.remaining)) {
      this.fail(GgufErrorCode.stringLength, field, `length ${len} runs past the end of the file (${this.remaining} bytes left)`, at)
    }
    const bytes = this.take(Number(len), field)
    try {
      return utf8.decode(bytes)
    } catch {
      return this.fail(GgufErrorCode.badUtf8, field, 'is not valid UTF-8', at + 8)
    }
  }

  valueType(field: string): GgufValueType {
    const at = this.pos
    const t = this.u32(field)
    if (t > GgufValueType.FLOAT64) this.fail(GgufErrorCode.badValueType, field, `unknown value type ${t}`, at)
    return t as GgufValueType
  }

  value(type: GgufValueType, field: string, depth: number): GgufValue {
    switch (type) {
      case GgufValueType.STRING:
        return this.string(field)
      case GgufValueType.ARRAY:
        return this.array(field, depth + 1)
      case GgufValueType.BOOL:
        return this.bool(field)
      default:
        return this.fixedScalar(type, field)
    }
  }

  private bool(field: string): boolean {
    const at = this.pos
    const b = this.u8(field)
    if (b > 1) this.fail(GgufErrorCode.badBool, field, `bool byte is ${b}, not 0 or 1`, at)
    return b === 1
  }

  private fixedScalar(type: GgufValueType, field: string): number | bigint {
    const info = FIXED_VALUE_TYPES.get(type)!
    const b = this.take(info.size, field)
    switch (type) {
      case GgufValueType.UINT8:
        return b.readUInt8(0)
      case GgufValueType.INT8:
        return b.readInt8(0)
      case GgufValueType.UINT16:
        return b.readUInt16LE(0)
      case GgufValueType.INT16:
        return b.readInt16LE(0)
      case GgufValueType.UINT32:
        return b.readUInt32LE(0)
      case GgufValueType.INT32:
        return b.readInt32LE(0)
      case GgufValueType.FLOAT32:
        return b.readFloatLE(0)
      case GgufValueType.UINT64:
        return b.readBigUInt64LE(0)
      case GgufValueType.INT64:
        return b.readBigInt64LE(0)
      default:
        return b.readDoubleLE(0) // FLOAT64
    }
  }

  private array(field: string, depth: number): GgufArray {
    const at = this.pos
    if (depth > GGUF_LIMITS.arrayDepth)
      this.fail(GgufErrorCode.arrayDepth, field, `arrays nested deeper than ${GGUF_LIMITS.arrayDepth}`, at)
    const itemType = this.valueType(`${field}.item_type`)
    const n = this.count(`${field}.length`, minEncodedSize(itemType), Number.MAX_SAFE_INTEGER, GgufErrorCode.arrayLength)
    const fixed = FIXED_VALUE_TYPES.get(itemType)
    if (fixed?.arrayCtor) {
      const out = new fixed.arrayCtor(n)
      new Uint8Array(out.buffer).set(this.take(n * fixed.size, `${field}.items`))
      return {itemType, items: out}
    }
    const items: GgufValue[] = new Array(n)
    for (let i = 0; i < n; i++) items[i] = this.value(itemType, `${field}[${i}]`, depth)
    return {itemType, items: items as GgufArray['items']}
  }
}

/** Parse the header of one GGUF file (metadata and tensor table); tensor data is never read. */
export function readGgufFile(path: string): GgufFile {
  const src = new ByteSource(path)
  try {
    return parse(src)
  } finally {
    src.close()
  }
}

function parse(src: ByteSource): GgufFile {
  const c = new HeaderCursor(src)
  const magic = src.bytes(0, 4, 'magic').toString('latin1')
  if (magic !== GGUF_MAGIC) c.fail(GgufErrorCode.badMagic, 'magic', `expected "GGUF", found ${quoted(magic)}`, 0)
  c.pos = 4
  const version = c.u32('version')
  // A big-endian file stores version 2 or 3 as 0x02000000 or 0x03000000.
  if (version === 0x02000000 || version === 0x03000000) {
    c.fail(GgufErrorCode.bigEndian, 'version', 'big-endian GGUF files are not supported; convert the file to little-endian', 4)
  }
  if (version !== 2 && version !== 3) {
    c.fail(GgufErrorCode.unsupportedVersion, 'version', `version ${version} is not supported (only GGUF v2 and v3)`, 4)
  }
  // A tensor info is at least: name length 8, n_dims 4, one dim 8, type 4, offset 8.
  const tensorCount = c.count('tensor_count', 32, GGUF_LIMITS.tensorCount, GgufErrorCode.tensorCount)
  // A kv is at least: key length 8, value type 4, one byte of value.
  const kvCount = c.count('kv_count', 13, GGUF_LIMITS.kvCount, GgufErrorCode.kvCount)

  const kvs: GgufKv[] = []
  const metadata = new Map<string, GgufKv>()
  const kvOffsets = new Map<string, number>()
  for (let i = 0; i < kvCount; i++) {
    const at = c.pos
    const key = c.string(`kv[${i}].key`, GGUF_LIMITS.keyBytes)
    // An empty key names nothing (llama.cpp refuses it too); a NUL cuts a key short for every C reader (strcmp, c_str).
    if (key.length === 0) c.fail(GgufErrorCode.badKey, `kv[${i}].key`, 'the key is empty', at)
    refuseNul(c, key, `kv[${i}].key`, `key ${quoted(key)}`, at)
    if (metadata.has(key)) c.fail(GgufErrorCode.duplicateKey, `kv[${i}].key`, `duplicate key ${quoted(key)}`, at)
    const type = c.valueType(`${key}.type`)
    const value = c.value(type, key, 0)
    const kv = {key, type, value}
    kvs.push(kv)
    metadata.set(key, kv)
    kvOffsets.set(key, at)
  }

  const alignment = readAlignment(c, metadata.get('general.alignment'), kvOffsets.get('general.alignment') ?? 0)

  const infos: Array<Omit<GgufTensorInfo, 'offset'>> = []
  const names = new Set<string>()
  for (let i = 0; i < tensorCount; i++) infos.push(readTensorInfo(c, i, names, src.path))

  const dataOffset = alignUp(c.pos, alignment)
  const dataSize = src.size - dataOffset
  if (tensorCount > 0 && dataSize < 0) {
    c.fail(GgufErrorCode.truncated, 'tensor_data', `the file ends at byte ${src.size}, before the tensor data section`, c.pos)
  }
  const tensors = infos.map((t) => ({...t, offset: dataOffset + t.relativeOffset}))
  checkExtents(c, tensors, alignment, dataOffset, dataSize)
  return {path: src.path, version, fileSize: src.size, alignment, kvs, metadata, tensors, dataOffset, kvOffsets}
}

/** Refuse a name holding a NUL byte, at the byte offset of the NUL (`at` is where the string's length field starts). */
function refuseNul(c: HeaderCursor, name: string, field: string, what: string, at: number, code: string = GgufErrorCode.badKey): void {
  const nul = name.indexOf('\0')
  if (nul < 0) return
  const byte = at + 8 + Buffer.byteLength(name.slice(0, nul))
  c.fail(code, field, `${what} holds a NUL byte; names are C strings in ggml and llama.cpp`, byte)
}

function readAlignment(c: HeaderCursor, kv: GgufKv | undefined, at: number): number {
  if (!kv) return GGUF_DEFAULT_ALIGNMENT
  if (kv.type !== GgufValueType.UINT32) {
    c.fail(GgufErrorCode.badAlignment, 'general.alignment', `must be a u32, found ${valueTypeName(kv.type)}`, at)
  }
  const a = kv.value as number
  if (a === 0 || (a & (a - 1)) !== 0 || a > GGUF_LIMITS.alignment) {
    c.fail(GgufErrorCode.badAlignment, 'general.alignment', `${a} is not a power of two between 1 and ${GGUF_LIMITS.alignment}`, at)
  }
  return a
}

function readTensorInfo(c: HeaderCursor, i: number, names: Set<string>, file: string): Omit<GgufTensorInfo, 'offset'> {
  const infoOffset = c.pos
  const name = c.string(`tensor[${i}].name`, c.remaining)
  const label = `tensor '${name}'`
  if (name.length === 0) c.fail(GgufErrorCode.tensorName, `tensor[${i}].name`, 'empty tensor name', infoOffset)
  if (Buffer.byteLength(name) > GGUF_MAX_TENSOR_NAME_BYTES) {
    c.fail(GgufErrorCode.tensorName, `tensor[${i}].name`, `${quoted(name)} is longer than ${GGUF_MAX_TENSOR_NAME_BYTES} bytes`, infoOffset)
  }
  // ggml keeps a tensor's name in a C string: a NUL would make it another tensor's name, or a prefix of it.
  refuseNul(c, name, `tensor[${i}].name`, `tensor name ${quoted(name)}`, infoOffset, GgufErrorCode.tensorName)
  if (names.has(name)) c.fail(GgufErrorCode.duplicateTensor, `tensor[${i}].name`, `duplicate tensor name ${quoted(name)}`, infoOffset)
  names.add(name)

  const dimsAt = c.pos
  const nDims = c.u32(`${label}.n_dims`)
  if (nDims < 1 || nDims > GGUF_MAX_DIMS)
    c.fail(GgufErrorCode.badNDims, `${label}.n_dims`, `${nDims} is not between 1 and ${GGUF_MAX_DIMS}`, dimsAt)
  const shape: number[] = []
  let product = 1n
  for (let d = 0; d < nDims; d++) {
    const at = c.pos
    const ne = c.i64(`${label}.ne[${d}]`)
    if (ne < 1n) c.fail(GgufErrorCode.badDim, `${label}.ne[${d}]`, `dimension ${ne} is not positive`, at)
    product *= ne
    if (product > BigInt(Number.MAX_SAFE_INTEGER)) {
      c.fail(GgufErrorCode.shapeOverflow, `${label}.ne[${d}]`, `the element count overflows (product of dimensions ≥ 2^53)`, at)
    }
    shape.push(Number(ne))
  }

  const typeAt = c.pos
  const typeId = c.u32(`${label}.type`)
  const type = ggmlTypeById(typeId)
  if (!type) c.fail(GgufErrorCode.unknownType, `${label}.type`, `unknown ggml type id ${typeId}`, typeAt)
  if (type.removed)
    c.fail(
      GgufErrorCode.removedType,
      `${label}.type`,
      `type ${type.name} (id ${typeId}) was removed from ggml; re-quantize the model`,
      typeAt,
    )
  const bytes = tensorByteSize(type, BigInt(shape[0]!), product)
  if (typeof bytes === 'string') c.fail(GgufErrorCode.blockMultiple, `${label}.ne[0]`, bytes, dimsAt + 4)

  const offsetAt = c.pos
  const relativeOffset = c.u64(`${label}.offset`)
  if (relativeOffset > BigInt(Number.MAX_SAFE_INTEGER)) {
    c.fail(GgufErrorCode.tensorOutOfFile, `${label}.offset`, `offset ${relativeOffset} is beyond any file`, offsetAt)
  }
  return {
    name,
    type,
    shape,
    nElements: Number(product),
    byteSize: Number(bytes),
    relativeOffset: Number(relativeOffset),
    file,
    infoOffset,
  }
}

function checkExtents(c: HeaderCursor, tensors: GgufTensorInfo[], alignment: number, dataOffset: number, dataSize: number): void {
  for (const t of tensors) {
    const field = `tensor '${t.name}'.offset`
    const at = t.infoOffset
    if (t.relativeOffset % alignment !== 0) {
      c.fail(GgufErrorCode.misalignedTensor, field, `offset ${t.relativeOffset} is not a multiple of the alignment ${alignment}`, at)
    }
    if (t.relativeOffset + t.byteSize > dataSize) {
      c.fail(
        GgufErrorCode.tensorOutOfFile,
        field,
        `data [${dataOffset + t.relativeOffset}, ${dataOffset + t.relativeOffset + t.byteSize}) runs past the end of the file at ${dataOffset + dataSize}`,
        at,
      )
    }
  }
  const byStart = [...tensors].sort((a, b) => a.relativeOffset - b.relativeOffset)
  for (let i = 1; i < byStart.length; i++) {
    const prev = byStart[i - 1]!
    const cur = byStart[i]!
    if (cur.relativeOffset < prev.relativeOffset + prev.byteSize) {
      c.fail(GgufErrorCode.tensorOverlap, `tensor '${cur.name}'.offset`, `data overlaps tensor '${prev.name}'`, cur.infoOffset)
    }
  }
}

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment
}
