/** Typed metadata getters: each refusal names the key, its byte offset, and what was wrong. */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, test} from 'node:test'

import {GgufError, type GgufKv, GgufMetadata, GgufValueType, readGgufFile, writeGguf} from '../../../src/lib/gguf/index.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-meta-'))
after(() => rmSync(dir, {recursive: true, force: true}))

const kvs: GgufKv[] = [
  {key: 'a.count', type: GgufValueType.UINT32, value: 32},
  {key: 'a.neg', type: GgufValueType.INT32, value: -4},
  {key: 'a.big', type: GgufValueType.UINT64, value: 2n ** 60n},
  {key: 'a.eps', type: GgufValueType.FLOAT32, value: Math.fround(1e-5)},
  {key: 'a.nan', type: GgufValueType.FLOAT32, value: NaN},
  {key: 'a.inf', type: GgufValueType.FLOAT64, value: -Infinity},
  {key: 'a.name', type: GgufValueType.STRING, value: 'llama'},
  {key: 'a.flag', type: GgufValueType.BOOL, value: true},
  {key: 'a.tokens', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: ['x', 'y']}},
]
await writeGguf(join(dir, 'm.gguf'), {kvs, tensors: []})
const file = readGgufFile(join(dir, 'm.gguf'))
const meta = new GgufMetadata(file.metadata, file.kvOffsets, file.path)

function refused(fn: () => unknown, code: string, key: string): GgufError {
  try {
    fn()
  } catch (error) {
    assert.ok(error instanceof GgufError)
    assert.equal(error.code, code, error.message)
    assert.equal(error.field, key)
    assert.equal(error.offset, file.kvOffsets.get(key) ?? 0)
    assert.ok(error.message.includes(key), error.message)
    return error
  }
  assert.fail(`expected ${code} for ${key}`)
}

test('getters return values of the right type', () => {
  assert.equal(meta.uint('a.count', {min: 1, max: 64}), 32)
  assert.equal(meta.integer('a.neg'), -4)
  assert.equal(meta.float('a.eps'), Math.fround(1e-5))
  assert.equal(meta.float('a.count'), 32)
  assert.equal(meta.string('a.name'), 'llama')
  assert.equal(meta.bool('a.flag'), true)
  assert.deepEqual(meta.stringArray('a.tokens', 2), ['x', 'y'])
  assert.equal(meta.uintOr('a.missing', 7), 7)
  assert.equal(meta.floatOr('a.missing', 0.5), 0.5)
  assert.equal(meta.stringOr('a.missing', undefined), undefined)
  assert.equal(meta.boolOr('a.missing', false), false)
})

test('refusals name the key and its offset', () => {
  refused(() => meta.uint('a.missing'), 'GGUF_META_MISSING', 'a.missing')
  refused(() => meta.uint('a.name'), 'GGUF_META_TYPE', 'a.name')
  refused(() => meta.uint('a.eps'), 'GGUF_META_TYPE', 'a.eps')
  refused(() => meta.uint('a.neg'), 'GGUF_META_RANGE', 'a.neg')
  refused(() => meta.uint('a.big'), 'GGUF_META_RANGE', 'a.big')
  refused(() => meta.uint('a.count', {max: 16}), 'GGUF_META_RANGE', 'a.count')
  refused(() => meta.uint('a.count', {min: 33}), 'GGUF_META_RANGE', 'a.count')
  refused(() => meta.float('a.nan'), 'GGUF_META_RANGE', 'a.nan')
  refused(() => meta.float('a.inf'), 'GGUF_META_RANGE', 'a.inf')
  refused(() => meta.float('a.eps', {min: 1e-3}), 'GGUF_META_RANGE', 'a.eps')
  refused(() => meta.string('a.count'), 'GGUF_META_TYPE', 'a.count')
  refused(() => meta.bool('a.count'), 'GGUF_META_TYPE', 'a.count')
  refused(() => meta.stringArray('a.name'), 'GGUF_META_TYPE', 'a.name')
  refused(() => meta.array('a.tokens', GgufValueType.FLOAT32), 'GGUF_META_TYPE', 'a.tokens')
  refused(() => meta.stringArray('a.tokens', 3), 'GGUF_META_RANGE', 'a.tokens')
  const e = refused(() => meta.uint('a.neg'), 'GGUF_META_RANGE', 'a.neg')
  assert.match(e.message, /-4/)
})
