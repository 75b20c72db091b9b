/**
 * Hostile and malformed GGUF files: every one must be refused with a GgufError carrying the exact
 * stable code, quickly, without allocating anything sized by the hostile field.
 *
 * The files are made by our own writer from a small valid model, then patched at the byte offsets of
 * the field under test (offsets located with the reader on the valid file). The rules checked are
 * the GGUF format's own (ggml's gguf.cpp enforces the same: n_dims ≤ 4, known type ids, aligned and
 * in-file tensor data, power-of-two alignment, unique keys and tensor names).
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'
import {setFlagsFromString} from 'node:v8'
import {runInNewContext} from 'node:vm'

import {
  type GgufArray,
  GgufError,
  type GgufFile,
  type GgufKv,
  GgufValueType,
  GgmlType,
  readGgufFile,
  readGgufModel,
  writeGguf,
} from '../../../src/lib/gguf/index.js'
import {SeededRandom} from '../../../src/lib/util/random.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

const kvs: GgufKv[] = [
  {key: 'general.architecture', type: GgufValueType.STRING, value: 'llama'},
  {key: 'general.alignment', type: GgufValueType.UINT32, value: 32},
  {key: 'test.k1', type: GgufValueType.UINT32, value: 7},
  {key: 'test.k2', type: GgufValueType.UINT32, value: 8},
  {key: 'test.flag', type: GgufValueType.BOOL, value: true},
  {key: 'test.arr', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(1, 2, 3)}},
  {key: 'test.str', type: GgufValueType.STRING, value: 'hello'},
  {key: 'test.strs', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: ['a', 'bc']}},
]
const F32_BYTES = 8 * 2 * 4
const Q4_BYTES = 2 * 18

// Set up at top level (not in before()) because the cases below are built from the base file's offsets.
const dir = mkdtempSync(join(tmpdir(), 'runner-hostile-'))
await writeGguf(join(dir, 'base.gguf'), {
  kvs,
  tensors: [
    {name: 't.a', type: GgmlType.F32, shape: [8, 2], data: new Uint8Array(F32_BYTES).fill(1)},
    {name: 't.b', type: GgmlType.Q4_0, shape: [32, 2], data: new Uint8Array(Q4_BYTES).fill(2)},
  ],
})
const info: GgufFile = readGgufFile(join(dir, 'base.gguf'))
const base: Buffer = readFileSync(join(dir, 'base.gguf'))

after(() => rmSync(dir, {recursive: true, force: true}))

/** Byte offset of a kv's value (after key length, key and type). */
function kvValueAt(key: string): number {
  return info.kvOffsets.get(key)! + 8 + Buffer.byteLength(key) + 4
}

function tensorAt(name: string) {
  const t = info.tensors.find((x) => x.name === name)!
  const nDims = t.infoOffset + 8 + Buffer.byteLength(name)
  return {
    name: t.infoOffset,
    nDims,
    ne: (d: number) => nDims + 4 + 8 * d,
    type: nDims + 4 + 8 * t.shape.length,
    offset: nDims + 4 + 8 * t.shape.length + 4,
  }
}

type Patch = (b: Buffer) => Buffer

const u32At =
  (at: number, v: number): Patch =>
  (b) => (b.writeUInt32LE(v, at), b)
const u64At =
  (at: number, v: bigint): Patch =>
  (b) => (b.writeBigUInt64LE(v, at), b)
const i64At =
  (at: number, v: bigint): Patch =>
  (b) => (b.writeBigInt64LE(v, at), b)
const bytesAt =
  (at: number, s: string | Buffer): Patch =>
  (b) => (Buffer.from(s).copy(b, at), b)

function refuse(name: string, bytes: Buffer): GgufError {
  const path = join(dir, `${name.replace(/\W+/g, '_')}.gguf`)
  writeFileSync(path, bytes)
  gc()
  const mem0 = process.memoryUsage()
  const t0 = performance.now()
  let caught: unknown
  try {
    readGgufModel(path)
  } catch (error) {
    caught = error
  }
  const ms = performance.now() - t0
  const mem1 = process.memoryUsage()
  assert.ok(caught !== undefined, `${name}: the file was accepted`)
  assert.ok(caught instanceof GgufError, `${name}: threw ${String(caught)} instead of a GgufError`)
  assert.ok(ms < 100, `${name}: took ${ms.toFixed(1)} ms`)
  const grew = mem1.heapUsed + mem1.arrayBuffers - (mem0.heapUsed + mem0.arrayBuffers)
  assert.ok(grew < bytes.length + (1 << 20), `${name}: memory grew by ${grew} bytes for a ${bytes.length}-byte file`)
  return caught
}

interface Case {
  name: string
  patch: () => Buffer
  code: string
  field?: RegExp
  /** The exact byte offset the refusal must name. */
  offset?: number
}

const patched =
  (...patches: Patch[]) =>
  () =>
    patches.reduce((b, p) => p(b), Buffer.from(base))
const truncatedTo = (n: () => number) => () => Buffer.from(base.subarray(0, n()))

const cases: Case[] = [
  {name: 'bad magic', patch: patched(bytesAt(0, 'GGUX')), code: 'GGUF_BAD_MAGIC', field: /magic/},
  {name: 'version 1', patch: patched(u32At(4, 1)), code: 'GGUF_UNSUPPORTED_VERSION', field: /version/},
  {name: 'version 4', patch: patched(u32At(4, 4)), code: 'GGUF_UNSUPPORTED_VERSION', field: /version/},
  {name: 'big-endian v3', patch: patched(u32At(4, 0x03000000)), code: 'GGUF_BIG_ENDIAN', field: /version/},
  {name: 'huge tensor count', patch: patched(u64At(8, 1n << 40n)), code: 'GGUF_TENSOR_COUNT', field: /tensor_count/},
  {name: 'tensor count 2^64-1', patch: patched(u64At(8, (1n << 64n) - 1n)), code: 'GGUF_TENSOR_COUNT', field: /tensor_count/},
  {name: 'tensor count past the file', patch: patched(u64At(8, 100_000n)), code: 'GGUF_TENSOR_COUNT', field: /tensor_count/},
  {name: 'huge kv count', patch: patched(u64At(16, 1n << 50n)), code: 'GGUF_KV_COUNT', field: /kv_count/},
  {name: 'key length past EOF', patch: patched(u64At(24, 1n << 33n)), code: 'GGUF_STRING_LENGTH', field: /kv\[0\]\.key/},
  {
    name: 'string value length past EOF',
    patch: patched(u64At(kvValueAt('test.str'), 1n << 62n)),
    code: 'GGUF_STRING_LENGTH',
    field: /test\.str/,
  },
  {
    name: 'array length past EOF',
    patch: patched(u64At(kvValueAt('test.arr') + 4, 1n << 60n)),
    code: 'GGUF_ARRAY_LENGTH',
    field: /test\.arr/,
  },
  {
    name: 'string array length past EOF',
    patch: patched(u64At(kvValueAt('test.strs') + 4, 1n << 31n)),
    code: 'GGUF_ARRAY_LENGTH',
    field: /test\.strs/,
  },
  {name: 'unknown value type', patch: patched(u32At(kvValueAt('test.k1') - 4, 13)), code: 'GGUF_BAD_VALUE_TYPE', field: /test\.k1/},
  {name: 'unknown array item type', patch: patched(u32At(kvValueAt('test.arr'), 99)), code: 'GGUF_BAD_VALUE_TYPE', field: /test\.arr/},
  {
    name: 'bool that is not 0 or 1',
    patch: patched((b) => ((b[kvValueAt('test.flag')] = 7), b)),
    code: 'GGUF_BAD_BOOL',
    field: /test\.flag/,
  },
  {
    name: 'invalid UTF-8 in a string',
    patch: patched(bytesAt(kvValueAt('test.str') + 8, Buffer.from([0xc3, 0x28]))),
    code: 'GGUF_BAD_UTF8',
    field: /test\.str/,
  },
  {
    name: 'duplicate key',
    patch: patched(bytesAt(info.kvOffsets.get('test.k2')! + 8, 'test.k1')),
    code: 'GGUF_DUPLICATE_KEY',
    field: /kv\[3\]/,
  },
  {name: 'alignment 0', patch: patched(u32At(kvValueAt('general.alignment'), 0)), code: 'GGUF_BAD_ALIGNMENT', field: /general\.alignment/},
  {
    name: 'alignment 48',
    patch: patched(u32At(kvValueAt('general.alignment'), 48)),
    code: 'GGUF_BAD_ALIGNMENT',
    field: /general\.alignment/,
  },
  {
    name: 'alignment not a u32',
    patch: patched(u32At(kvValueAt('general.alignment') - 4, GgufValueType.INT32)),
    code: 'GGUF_BAD_ALIGNMENT',
    field: /general\.alignment/,
  },
  {name: 'n_dims 0', patch: patched(u32At(tensorAt('t.a').nDims, 0)), code: 'GGUF_BAD_N_DIMS', field: /t\.a.*n_dims/},
  {name: 'n_dims 5', patch: patched(u32At(tensorAt('t.a').nDims, 5)), code: 'GGUF_BAD_N_DIMS', field: /t\.a.*n_dims/},
  {name: 'negative dimension', patch: patched(i64At(tensorAt('t.a').ne(1), -2n)), code: 'GGUF_BAD_DIM', field: /t\.a.*ne\[1\]/},
  {name: 'zero dimension', patch: patched(i64At(tensorAt('t.a').ne(0), 0n)), code: 'GGUF_BAD_DIM', field: /t\.a.*ne\[0\]/},
  {
    name: 'dimensions whose product overflows 64 bits',
    patch: patched(i64At(tensorAt('t.a').ne(0), 1n << 40n), i64At(tensorAt('t.a').ne(1), 1n << 40n)),
    code: 'GGUF_SHAPE_OVERFLOW',
    field: /t\.a.*ne\[1\]/,
  },
  {name: 'unknown type id', patch: patched(u32At(tensorAt('t.a').type, 99)), code: 'GGUF_UNKNOWN_TYPE', field: /t\.a.*type/},
  {name: 'removed type id (Q4_2)', patch: patched(u32At(tensorAt('t.a').type, 4)), code: 'GGUF_REMOVED_TYPE', field: /t\.a.*type/},
  {
    name: 'ne0 not a multiple of the block size',
    patch: patched(i64At(tensorAt('t.b').ne(0), 48n)),
    code: 'GGUF_BLOCK_MULTIPLE',
    field: /t\.b/,
  },
  {
    name: 'misaligned tensor offset',
    patch: patched(u64At(tensorAt('t.b').offset, 72n)),
    code: 'GGUF_MISALIGNED_TENSOR',
    field: /t\.b.*offset/,
  },
  {name: 'overlapping tensors', patch: patched(u64At(tensorAt('t.b').offset, 32n)), code: 'GGUF_TENSOR_OVERLAP', field: /t\.b.*offset/},
  {
    name: 'tensor data past the end of the file',
    patch: patched(u64At(tensorAt('t.b').offset, 1n << 20n)),
    code: 'GGUF_TENSOR_OUT_OF_FILE',
    field: /t\.b.*offset/,
  },
  {
    name: 'tensor offset beyond any file',
    patch: patched(u64At(tensorAt('t.b').offset, 1n << 63n)),
    code: 'GGUF_TENSOR_OUT_OF_FILE',
    field: /t\.b.*offset/,
  },
  {
    name: 'duplicate tensor name',
    patch: patched(bytesAt(tensorAt('t.b').name + 8, 't.a')),
    code: 'GGUF_DUPLICATE_TENSOR',
    field: /tensor\[1\]/,
  },
  // A key of length zero names nothing; a NUL cuts a key or a tensor name short for every C reader.
  {
    name: 'empty key',
    patch: patched(u64At(info.kvOffsets.get('test.k1')!, 0n)),
    code: 'GGUF_BAD_KEY',
    field: /^kv\[2\]\.key$/,
    offset: info.kvOffsets.get('test.k1')!,
  },
  {
    name: 'NUL in a key',
    patch: patched(bytesAt(info.kvOffsets.get('test.k2')! + 8 + 4, '\0')),
    code: 'GGUF_BAD_KEY',
    field: /^kv\[3\]\.key$/,
    offset: info.kvOffsets.get('test.k2')! + 8 + 4,
  },
  {
    name: 'NUL in a tensor name',
    patch: patched(bytesAt(tensorAt('t.b').name + 8 + 1, '\0')),
    code: 'GGUF_TENSOR_NAME',
    field: /^tensor\[1\]\.name$/,
    offset: tensorAt('t.b').name + 8 + 1,
  },
  {
    name: 'tensor name length past EOF',
    patch: patched(u64At(tensorAt('t.a').name, 1n << 40n)),
    code: 'GGUF_STRING_LENGTH',
    field: /tensor\[0\]\.name/,
  },
  {name: 'truncated inside the magic', patch: truncatedTo(() => 3), code: 'GGUF_TRUNCATED', field: /magic/},
  {name: 'truncated after the magic', patch: truncatedTo(() => 4), code: 'GGUF_TRUNCATED', field: /version/},
  {name: 'truncated after the version', patch: truncatedTo(() => 8), code: 'GGUF_TRUNCATED', field: /tensor_count/},
  {name: 'truncated after the tensor count', patch: truncatedTo(() => 16), code: 'GGUF_TENSOR_COUNT', field: /tensor_count/},
  {name: 'truncated after the counts', patch: truncatedTo(() => 24), code: 'GGUF_TENSOR_COUNT', field: /tensor_count/},
  {
    name: 'truncated after the metadata',
    patch: truncatedTo(() => tensorAt('t.a').name),
    code: 'GGUF_TRUNCATED',
    field: /tensor\[0\]\.name/,
  },
  {name: 'truncated inside a tensor info', patch: truncatedTo(() => tensorAt('t.b').type), code: 'GGUF_TRUNCATED', field: /t\.b.*type/},
  {
    name: 'truncated after the tensor infos',
    patch: truncatedTo(() => tensorAt('t.b').offset + 8),
    code: 'GGUF_TRUNCATED',
    field: /tensor_data/,
  },
  {name: 'truncated at the start of the data', patch: truncatedTo(() => info.dataOffset), code: 'GGUF_TENSOR_OUT_OF_FILE', field: /t\.a/},
  {
    name: 'truncated inside the last tensor',
    patch: truncatedTo(() => info.dataOffset + 64 + 10),
    code: 'GGUF_TENSOR_OUT_OF_FILE',
    field: /t\.b/,
  },
]

describe('hostile GGUF files are refused with the exact code (built with our writer, then patched)', () => {
  test('the unpatched base file parses', () => {
    assert.equal(info.tensors.length, 2)
    assert.equal(info.tensors[1]!.relativeOffset, 64)
    assert.equal(info.kvs.length, kvs.length)
  })

  for (const c of cases) {
    test(c.name, () => {
      const error = refuse(c.name, c.patch())
      assert.equal(error.code, c.code, `${c.name}: ${error.message}`)
      if (c.field) assert.match(error.field, c.field, `${c.name}: field was ${error.field}`)
      if (c.offset !== undefined) assert.equal(error.offset, c.offset, `${c.name}: ${error.message}`)
      assert.doesNotMatch(error.message, /[\p{Cc}\p{Cf}]/u, `${c.name}: the message holds a control or format character`)
      assert.ok(Number.isInteger(error.offset) && error.offset >= 0 && error.offset <= base.length, `offset ${error.offset}`)
      assert.ok(error.message.includes(`byte ${error.offset}`), error.message)
      assert.equal(error.exitCode, 3)
    })
  }

  test('the writer refuses what the reader refuses: an empty key, a NUL in a key or a tensor name', async () => {
    const path = join(dir, 'never.gguf')
    const tensor = {name: 't.a', type: GgmlType.F32, shape: [8, 2], data: new Uint8Array(F32_BYTES)}
    const write = (key: string, name: string) =>
      writeGguf(path, {kvs: [{key, type: GgufValueType.UINT32, value: 1}], tensors: [{...tensor, name}]})
    await assert.rejects(write('', 't.a'), (e: unknown) => e instanceof GgufError && e.code === 'GGUF_BAD_KEY' && e.field === 'kv[0].key')
    await assert.rejects(write('a\0b', 't.a'), (e: unknown) => e instanceof GgufError && e.code === 'GGUF_BAD_KEY')
    await assert.rejects(write('a', 't\0a'), (e: unknown) => e instanceof GgufError && e.code === 'GGUF_TENSOR_NAME')
  })

  test('arrays nested deeper than the limit', async () => {
    let value: GgufArray = {itemType: GgufValueType.UINT8, items: Uint8Array.of(1)}
    for (let i = 0; i < 9; i++) value = {itemType: GgufValueType.ARRAY, items: [value]}
    const path = join(dir, 'deep.gguf')
    await writeGguf(path, {kvs: [{key: 'deep', type: GgufValueType.ARRAY, value}], tensors: []})
    const error = refuse('deep arrays', readFileSync(path))
    assert.equal(error.code, 'GGUF_ARRAY_DEPTH')
  })

  test('arrays of arrays within the limit round-trip', async () => {
    const inner = (n: number): GgufArray => ({itemType: GgufValueType.INT16, items: Int16Array.from({length: n}, (_, i) => i - 1)})
    const value: GgufArray = {itemType: GgufValueType.ARRAY, items: [inner(2), inner(0), inner(3)]}
    const path = join(dir, 'nested.gguf')
    await writeGguf(path, {kvs: [{key: 'nested', type: GgufValueType.ARRAY, value}], tensors: []})
    const got = readGgufFile(path).metadata.get('nested')!.value as GgufArray
    assert.deepEqual(got, value)
  })

  test('a cut at every byte of the header is refused with a GgufError, never anything else', () => {
    for (let n = 0; n < info.dataOffset + 64; n++) {
      const error = refuse(`cut at ${n}`, Buffer.from(base.subarray(0, n)))
      assert.ok(error.code.startsWith('GGUF_'), error.code)
    }
  })

  test('2000 seeded random byte corruptions of the header: parsed or refused by GgufError, each under 100 ms', () => {
    const rng = new SeededRandom(20261129n)
    const path = join(dir, 'mutant.gguf')
    let refused = 0
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(base)
      const flips = 1 + (rng.nextU32() % 4)
      for (let f = 0; f < flips; f++) b[rng.nextU32() % info.dataOffset] = rng.nextU32() & 0xff
      writeFileSync(path, b)
      const t0 = performance.now()
      try {
        readGgufModel(path)
      } catch (error) {
        assert.ok(error instanceof GgufError, `mutant ${i}: ${String(error)}`)
        refused++
      }
      assert.ok(performance.now() - t0 < 100, `mutant ${i} took too long`)
    }
    assert.ok(refused > 1000, `only ${refused} of 2000 corruptions were refused`)
  })
})
