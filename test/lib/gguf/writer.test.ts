/**
 * The writer: alignment and zero padding (checked with node-llama-cpp's own GGUF parser), atomic
 * replacement through a temporary file, refusal to overwrite its own input, and refusal of values
 * and tensors that do not match their declared types.
 */
import assert from 'node:assert/strict'
import {existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {readGgufFileInfo} from 'node-llama-cpp'

import {GgmlType, GgufError, type GgufKv, GgufValueType, readGgufFile, writeGguf} from '../../../src/lib/gguf/index.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-writer-'))
after(() => rmSync(dir, {recursive: true, force: true}))

const arch: GgufKv = {key: 'general.architecture', type: GgufValueType.STRING, value: 'llama'}
const tensor = (name: string, n: number, fill: number) => ({name, type: GgmlType.F32, shape: [n], data: new Uint8Array(n * 4).fill(fill)})

async function rejects(p: Promise<unknown>, code: string): Promise<GgufError> {
  try {
    await p
  } catch (error) {
    assert.ok(error instanceof GgufError, String(error))
    assert.equal(error.code, code, error.message)
    return error
  }
  assert.fail(`expected ${code}`)
}

const leftovers = () => readdirSync(dir).filter((f) => f.endsWith('.tmp'))

describe('writeGguf', () => {
  test('honours general.alignment: data and every tensor start on it, gaps are zeros (node-llama-cpp agrees)', async () => {
    const path = join(dir, 'aligned.gguf')
    const kvs: GgufKv[] = [arch, {key: 'general.alignment', type: GgufValueType.UINT32, value: 256}]
    await writeGguf(path, {kvs, tensors: [tensor('a', 3, 0xaa), tensor('b', 70, 0xbb), tensor('c', 1, 0xcc)]})
    const f = readGgufFile(path)
    const bytes = readFileSync(path)
    assert.equal(f.alignment, 256)
    assert.equal(f.dataOffset % 256, 0)
    assert.equal(bytes.length % 256, 0)
    assert.deepEqual(
      f.tensors.map((t) => t.relativeOffset),
      [0, 256, 768],
    ) // b is 280 bytes
    const theirs = await readGgufFileInfo(path, {readTensorInfo: true})
    assert.deepEqual(
      theirs.fullTensorInfo!.map((t) => Number(t.fileOffset)),
      f.tensors.map((t) => t.offset),
    )
    // Everything between the end of the header and the data, and between tensors, is zero padding.
    const last = f.tensors[f.tensors.length - 1]!
    const headerEnd = last.infoOffset + 8 + Buffer.byteLength(last.name) + 4 + 8 * last.shape.length + 4 + 8
    const isData = (i: number) => f.tensors.some((t) => i >= t.offset && i < t.offset + t.byteSize)
    for (let i = headerEnd; i < bytes.length; i++) if (!isData(i)) assert.equal(bytes[i], 0, `byte ${i}`)
    assert.ok(f.dataOffset - headerEnd > 0, 'the header was padded')
    assert.equal(bytes[f.tensors[1]!.offset], 0xbb)
  })

  test('default alignment is 32', async () => {
    const path = join(dir, 'default.gguf')
    await writeGguf(path, {kvs: [arch], tensors: [tensor('a', 3, 1), tensor('b', 5, 2)]})
    const f = readGgufFile(path)
    assert.equal(f.alignment, 32)
    assert.deepEqual(
      f.tensors.map((t) => t.relativeOffset),
      [0, 32],
    )
  })

  test('writes under a temporary name in the same folder and renames: the old file stays whole until the end', async () => {
    const path = join(dir, 'atomic.gguf')
    writeFileSync(path, 'old contents')
    let seenDuringWrite: {old: string; tmp: string[]} | undefined
    await writeGguf(path, {
      kvs: [arch],
      tensors: [
        {
          name: 'a',
          type: GgmlType.F32,
          shape: [4],
          data: function* () {
            seenDuringWrite = {old: readFileSync(path, 'utf8'), tmp: leftovers()}
            yield new Uint8Array(16)
          },
        },
      ],
    })
    assert.equal(seenDuringWrite!.old, 'old contents')
    assert.equal(seenDuringWrite!.tmp.length, 1)
    assert.match(seenDuringWrite!.tmp[0]!, /^\.atomic\.gguf\.\d+\.[0-9a-f]+\.tmp$/)
    assert.equal(leftovers().length, 0)
    assert.equal(readGgufFile(path).tensors.length, 1)
  })

  test('a failure mid-write leaves the target untouched and removes the temporary file', async () => {
    const path = join(dir, 'fails.gguf')
    writeFileSync(path, 'keep me')
    const failing = function* (): Iterable<Uint8Array> {
      yield new Uint8Array(8)
      throw new Error('disk on fire')
    }
    await assert.rejects(
      writeGguf(path, {kvs: [arch], tensors: [{name: 'a', type: GgmlType.F32, shape: [4], data: failing}]}),
      /disk on fire/,
    )
    assert.equal(readFileSync(path, 'utf8'), 'keep me')
    assert.equal(leftovers().length, 0)
  })

  test('tensor data of the wrong size is refused by tensor name, and nothing is written', async () => {
    const path = join(dir, 'short.gguf')
    const e = await rejects(
      writeGguf(path, {kvs: [arch], tensors: [{name: 'short', type: GgmlType.F32, shape: [4], data: new Uint8Array(12)}]}),
      'GGUF_WRITE_BAD_TENSOR',
    )
    assert.match(e.message, /short/)
    await rejects(
      writeGguf(path, {kvs: [arch], tensors: [{name: 'long', type: GgmlType.F32, shape: [4], data: new Uint8Array(20)}]}),
      'GGUF_WRITE_BAD_TENSOR',
    )
    assert.equal(existsSync(path), false)
    assert.equal(leftovers().length, 0)
  })

  test('refuses to overwrite its own input: same path, a symlink to it, a hard link to it', async () => {
    const src = join(dir, 'input.gguf')
    await writeGguf(src, {kvs: [arch], tensors: [tensor('a', 8, 7)]})
    const before = readFileSync(src)
    const t = readGgufFile(src).tensors[0]!
    const copyFrom = {kvs: [arch], tensors: [{name: 'a', type: t.type, shape: t.shape, data: {file: src, offset: t.offset}}]}
    symlinkSync(src, join(dir, 'sym.gguf'))
    linkSync(src, join(dir, 'hard.gguf'))
    for (const target of [src, join(dir, 'sym.gguf'), join(dir, 'hard.gguf')]) {
      await rejects(writeGguf(target, copyFrom), 'GGUF_WRITE_OVERWRITES_INPUT')
    }
    await rejects(writeGguf(src, {kvs: [arch], tensors: []}, {inputs: [src]}), 'GGUF_WRITE_OVERWRITES_INPUT')
    assert.ok(readFileSync(src).equals(before))
    // Writing the copy elsewhere is fine and byte-identical.
    await writeGguf(join(dir, 'copy.gguf'), copyFrom)
    assert.ok(readFileSync(join(dir, 'copy.gguf')).equals(before))
  })

  test('values that do not fit their declared type are refused by key', async () => {
    const path = join(dir, 'badvalue.gguf')
    const bad: Array<[GgufKv, RegExp]> = [
      [{key: 'x.u8', type: GgufValueType.UINT8, value: 300}, /x\.u8/],
      [{key: 'x.u32', type: GgufValueType.UINT32, value: -1}, /x\.u32/],
      [{key: 'x.u64', type: GgufValueType.UINT64, value: 5}, /x\.u64/],
      [{key: 'x.str', type: GgufValueType.STRING, value: 5}, /x\.str/],
      [{key: 'x.arr', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.FLOAT32, items: new Float64Array(2)}}, /x\.arr/],
    ]
    for (const [kv, field] of bad) {
      const e = await rejects(writeGguf(path, {kvs: [arch, kv], tensors: []}), 'GGUF_WRITE_BAD_VALUE')
      assert.match(e.field, field)
    }
    await rejects(writeGguf(path, {kvs: [arch, arch], tensors: []}), 'GGUF_DUPLICATE_KEY')
    await rejects(writeGguf(path, {kvs: [arch], tensors: [tensor('a', 1, 0), tensor('a', 1, 0)]}), 'GGUF_DUPLICATE_TENSOR')
    await rejects(
      writeGguf(path, {kvs: [arch], tensors: [{...tensor('q', 1, 0), type: GgmlType.Q4_0, shape: [33]}]}),
      'GGUF_BLOCK_MULTIPLE',
    )
    await rejects(writeGguf(path, {kvs: [arch], tensors: [{...tensor('x'.repeat(64), 1, 0)}]}), 'GGUF_TENSOR_NAME')
    await rejects(writeGguf(path, {kvs: [arch], tensors: [{...tensor('q', 1, 0), type: 4}]}), 'GGUF_UNKNOWN_TYPE')
    assert.equal(existsSync(path), false)
  })

  test('every scalar and array type round-trips', async () => {
    const path = join(dir, 'types.gguf')
    const kvs: GgufKv[] = [
      {key: 'u8', type: GgufValueType.UINT8, value: 255},
      {key: 'i8', type: GgufValueType.INT8, value: -128},
      {key: 'u16', type: GgufValueType.UINT16, value: 65535},
      {key: 'i16', type: GgufValueType.INT16, value: -32768},
      {key: 'u32', type: GgufValueType.UINT32, value: 4294967295},
      {key: 'i32', type: GgufValueType.INT32, value: -2147483648},
      {key: 'f32', type: GgufValueType.FLOAT32, value: Math.fround(0.1)},
      {key: 'bool', type: GgufValueType.BOOL, value: false},
      {key: 'str', type: GgufValueType.STRING, value: 'héllo 🙂'},
      {key: 'u64', type: GgufValueType.UINT64, value: 2n ** 64n - 1n},
      {key: 'i64', type: GgufValueType.INT64, value: -(2n ** 63n)},
      {key: 'f64', type: GgufValueType.FLOAT64, value: Math.PI},
      {key: 'bools', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.BOOL, items: [true, false, true]}},
      {key: 'u64s', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT64, items: BigUint64Array.of(1n, 2n ** 63n)}},
      {key: 'empty', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: []}},
    ]
    await writeGguf(path, {version: 2, kvs, tensors: []})
    const f = readGgufFile(path)
    assert.equal(f.version, 2)
    assert.deepEqual(f.kvs, kvs)
    // node-llama-cpp reads the same values.
    const theirs = await readGgufFileInfo(path)
    const meta = theirs.metadata as unknown as Record<string, unknown>
    assert.equal(meta.str, 'héllo 🙂')
    assert.equal(meta.u32, 4294967295)
    assert.equal(BigInt(meta.i64 as bigint), -(2n ** 63n))
  })
})
