/**
 * Every model in ../shared parses into the tables that llama.cpp's side describes:
 * - the sha256 and byte sizes listed in shared/reference/README.md,
 * - architecture, name, vocabulary and context size from shared/reference/<model>.json,
 * - metadata and tensor tables equal to node-llama-cpp's own GGUF parser (readGgufFileInfo),
 * and writing what we read, unchanged, gives back the same bytes.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'
import {after, describe, test} from 'node:test'

import {GgmlType as LlamaGgmlType, readGgufFileInfo} from 'node-llama-cpp'

import {readGgufModel, valueToJson, writeGguf} from '../../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const models = hasShared()
  ? [
      sharedPath('models', 'stories260K.gguf'),
      ...readdirSync(sharedPath('fixtures'))
        .filter((f) => f.endsWith('.gguf'))
        .sort()
        .map((f) => sharedPath('fixtures', f)),
    ]
  : []

/** sha256 lines of the reference README: "<hex>  shared/<path>". */
function readmeHashes(): Map<string, string> {
  const text = readFileSync(sharedPath('reference', 'README.md'), 'utf8')
  return new Map([...text.matchAll(/^([0-9a-f]{64})\s+shared\/(\S+)$/gm)].map((m) => [basename(m[2]!), m[1]!]))
}

/** The README's fixture table: file → its "bytes" column. */
function readmeBytes(): Map<string, number> {
  const text = readFileSync(sharedPath('reference', 'README.md'), 'utf8')
  const rows = [...text.matchAll(/^\| shared\/\S+\/(\S+\.gguf) \|.*\| (\d+) \|$/gm)]
  return new Map(rows.map((m) => [m[1]!, Number(m[2])]))
}

function referenceFor(path: string): {model: {architecture: string; name: string; n_vocab: number; train_context_size: number}} {
  return JSON.parse(readFileSync(sharedPath('reference', basename(path).replace(/\.gguf$/, '.json')), 'utf8'))
}

/** node-llama-cpp's nested metadata flattened to GGUF keys. */
function flatten(obj: Record<string, unknown>, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v as Record<string, unknown>, key, out)
    else out.set(key, v)
  }
  return out
}

const normalize = (v: unknown): unknown => (typeof v === 'bigint' ? Number(v) : Array.isArray(v) ? v.map(normalize) : v)

describe('the shared models parse as llama.cpp describes them', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const tmp = hasShared() ? mkdtempSync(join(tmpdir(), 'runner-fixtures-')) : ''
  after(() => tmp && rmSync(tmp, {recursive: true, force: true}))

  test('every model listed in the reference README is present, with its sha256 and size', () => {
    const hashes = readmeHashes()
    const bytes = readmeBytes()
    assert.equal(hashes.size, models.length)
    for (const path of models) {
      const data = readFileSync(path)
      assert.equal(createHash('sha256').update(data).digest('hex'), hashes.get(basename(path)), basename(path))
      assert.equal(readGgufModel(path).totalBytes, data.length)
      assert.equal(data.length, bytes.get(basename(path)), `${basename(path)} bytes column`)
    }
  })

  for (const path of models) {
    const name = basename(path)
    test(`${name}: architecture, name, vocabulary and context size match the reference JSON`, () => {
      const m = readGgufModel(path)
      const ref = referenceFor(path).model
      const arch = m.metadata.get('general.architecture')!.value
      assert.equal(arch, ref.architecture)
      assert.equal(m.metadata.get('general.name')!.value, ref.name)
      assert.equal((m.metadata.get('tokenizer.ggml.tokens')!.value as {items: unknown[]}).items.length, ref.n_vocab)
      assert.equal(m.metadata.get(`${arch}.context_length`)!.value, ref.train_context_size)
    })

    test(`${name}: metadata and tensor table equal node-llama-cpp's parser`, async () => {
      const m = readGgufModel(path)
      const theirs = await readGgufFileInfo(path, {readTensorInfo: true})
      assert.equal(m.version, theirs.version)
      const meta = flatten(theirs.metadata as unknown as Record<string, unknown>)
      assert.deepEqual([...meta.keys()].sort(), m.kvs.map((kv) => kv.key).sort())
      for (const kv of m.kvs) assert.deepEqual(normalize(valueToJson(kv.value)), normalize(meta.get(kv.key)), kv.key)
      const tensors = theirs.fullTensorInfo ?? []
      assert.equal(m.tensors.length, tensors.length)
      m.tensors.forEach((t, i) => {
        const o = tensors[i]!
        assert.equal(t.name, o.name)
        assert.deepEqual(t.shape, o.dimensions.map(Number))
        assert.equal(t.type.name, LlamaGgmlType[o.ggmlType])
        assert.equal(t.relativeOffset, Number(o.offset))
        assert.equal(t.offset, Number(o.fileOffset))
      })
    })

    test(`${name}: read then write with nothing changed is byte-identical`, async () => {
      const m = readGgufModel(path)
      const out = join(tmp, name)
      await writeGguf(out, {
        version: m.version as 3,
        kvs: m.kvs,
        tensors: m.tensors.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}})),
      })
      assert.ok(readFileSync(out).equals(readFileSync(path)), `${name} changed in the round trip`)
    })
  }
})
