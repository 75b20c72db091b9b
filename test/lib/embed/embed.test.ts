/**
 * The embed area: pooling and normalisation arithmetic (hand-computed values), the model's own pooling
 * from `<arch>.pooling_type` (llama.cpp's enum), input checks naming the input, and determinism of the
 * library call: the same bits for 1 or 2 threads, any batch size, an input alone or in a list, on a
 * fresh session or one a generation used. Agreement with llama.cpp is test/differential/embeddings.test.ts.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {
  DEFAULT_POOLING,
  embed,
  EmbedInputError,
  embeddingTokens,
  modelPooling,
  normalize,
  pool,
  shortestFloat32,
} from '../../../src/lib/embed/index.js'
import {Model, Session} from '../../../src/lib/engine/index.js'
import {GgufValueType, readGgufModel, writeGguf} from '../../../src/lib/gguf/index.js'
import {bits, greedy} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const TEXTS = ['Once upon a time, there was a little girl named Lily.', 'The cat sat on the mat.', 'She liked to play with her red ball.']

describe('pooling and normalisation', () => {
  // Two tokens of width 3: rows [1, 2, 3] and [3, -2, 0.5].
  const rows = Float32Array.of(1, 2, 3, 3, -2, 0.5)
  test('mean, cls, last', () => {
    assert.deepEqual([...pool(rows, 2, 3, 'mean')], [2, 0, 1.75])
    assert.deepEqual([...pool(rows, 2, 3, 'cls')], [1, 2, 3])
    assert.deepEqual([...pool(rows, 2, 3, 'last')], [3, -2, 0.5])
    assert.throws(() => pool(rows, 3, 3, 'mean'), RangeError)
  })
  test('unit Euclidean length; zero stays zero', () => {
    // |(3, 4)| = 5: 0.2 rounded to float, times 3 and 4, rounded to float.
    assert.deepEqual([...normalize(Float32Array.of(3, 4))], [Math.fround(3 * Math.fround(0.2)), Math.fround(4 * Math.fround(0.2))])
    assert.deepEqual([...normalize(Float32Array.of(0, 0))], [0, 0])
  })
  test('shortestFloat32 reads back as the same float32', () => {
    for (const x of [0.1, 1 / 3, -2.5e-8, 123456.789, 3.4e38]) {
      const f = Math.fround(x)
      assert.equal(Math.fround(shortestFloat32(f)), f)
      assert.ok(String(shortestFloat32(f)).length <= 15)
    }
    assert.equal(shortestFloat32(Math.fround(0.1)), 0.1)
  })
})

describe('the model’s own pooling (<arch>.pooling_type)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-embed-pool-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const withKey = async (value: number | undefined) => {
    const m = readGgufModel(STORIES)
    const path = join(dir, `p${value}.gguf`)
    const kvs = value === undefined ? m.kvs : [...m.kvs, {key: 'llama.pooling_type', type: GgufValueType.UINT32, value}]
    await writeGguf(path, {
      kvs,
      tensors: m.tensors.map((x) => ({name: x.name, type: x.type, shape: [...x.shape], data: {file: x.file, offset: x.offset}})),
    })
    return readGgufModel(path)
  }
  test('absent or none: the default (mean); mean, cls, last as declared; rank and unknown values refused by name', async () => {
    assert.equal(DEFAULT_POOLING, 'mean')
    assert.deepEqual(modelPooling(await withKey(undefined), 'llama'), {pooling: 'mean', source: 'default'})
    assert.deepEqual(modelPooling(await withKey(0), 'llama'), {pooling: 'mean', source: 'default', declared: 0})
    assert.deepEqual(modelPooling(await withKey(1), 'llama'), {pooling: 'mean', source: 'model', declared: 1})
    assert.deepEqual(modelPooling(await withKey(2), 'llama'), {pooling: 'cls', source: 'model', declared: 2})
    assert.deepEqual(modelPooling(await withKey(3), 'llama'), {pooling: 'last', source: 'model', declared: 3})
    const rank = await withKey(4)
    assert.throws(
      () => modelPooling(rank, 'llama'),
      (e: Error & {code?: string}) => {
        assert.equal(e.code, 'EMBED_UNSUPPORTED_POOLING')
        assert.match(e.message, /llama\.pooling_type is 4 \(rank\)/)
        return true
      },
    )
    const unknown = await withKey(7)
    assert.throws(() => modelPooling(unknown, 'llama'), /llama\.pooling_type/)
  })

  test('a model that declares its pooling is embedded with it', async () => {
    const path = join(dir, 'p3.gguf')
    const model = await Model.load(path)
    const ctx = await model.createContext({nCtx: 128, threads: 1})
    const session = new Session(ctx)
    const own = await embed(session, TEXTS)
    assert.equal(own.pooling, 'last')
    const named = await embed(session, TEXTS, {pooling: 'last'})
    own.embeddings.forEach((v, i) => assert.ok(bits(v).equals(bits(named.embeddings[i]!))))
    const mean = await embed(session, TEXTS, {pooling: 'mean'})
    assert.equal(mean.pooling, 'mean', 'an explicit pooling wins over the model’s')
    assert.ok(!bits(mean.embeddings[0]!).equals(bits(own.embeddings[0]!)))
    ctx.dispose()
    model.dispose()
  })
})

describe('embedding inputs', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  before(async () => {
    model = await Model.load(STORIES)
  })
  after(() => model?.dispose())

  test('texts get BOS as the vocabulary asks; token lists are used as they are', () => {
    const tok = model.tokenizer
    const [text, ids] = embeddingTokens(tok, ['Once upon a time', [5, 6, 7]], 64)
    assert.deepEqual(text, tok.encode('Once upon a time', {addSpecial: true}))
    assert.equal(text![0], tok.bos)
    assert.deepEqual(ids, [5, 6, 7])
  })

  test('refusals name the input: empty, no tokens, bad ids, longer than the context', () => {
    const refuses = (inputs: Parameters<typeof embeddingTokens>[1], index: number, pattern: RegExp, code = 'EMBED_BAD_INPUT') =>
      assert.throws(
        () => embeddingTokens(model.tokenizer, inputs, 16),
        (e: unknown) => e instanceof EmbedInputError && e.index === index && e.code === code && pattern.test(e.message),
      )
    refuses(['a', ''], 1, /^input 2 is empty/)
    refuses([[1], []], 1, /^input 2 is empty/)
    refuses([[1, 512]], 0, /token 1 = 512 is not a token id \(the vocabulary has 512\)/)
    refuses([[1, -1]], 0, /token 1 = -1/)
    refuses(
      ['ok', 'Once upon a time there was a little girl named Lily who liked'],
      1,
      /^input 2 has \d+ tokens, more than the context of 16/,
      'EMBED_INPUT_TOO_LONG',
    )
  })

  test('the same bits for 1 or 2 threads, any batch size, alone or in a list, fresh or used session', async () => {
    const run = async (threads: number, nBatch: number, inputs: readonly string[]) => {
      const ctx = await model.createContext({nCtx: 128, nBatch, threads})
      const r = await embed(new Session(ctx), inputs)
      ctx.dispose()
      return r
    }
    const base = await run(1, 512, TEXTS)
    assert.equal(base.pooling, 'mean', 'stories260K declares no pooling: the default')
    assert.equal(base.normalized, true)
    assert.equal(base.dimensions, model.config.nEmbd)
    assert.deepEqual(
      base.tokenCounts,
      TEXTS.map((t) => model.tokenizer.encode(t, {addSpecial: true}).length),
    )
    for (const v of base.embeddings) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-6, 'unit length')
    const same = (r: typeof base, what: string, order = [0, 1, 2]) =>
      order.forEach((j, i) => assert.ok(bits(r.embeddings[i]!).equals(bits(base.embeddings[j]!)), `${what}: input ${j}`))
    same(await run(2, 512, TEXTS), '2 threads')
    same(await run(2, 3, TEXTS), 'batch 3')
    same(await run(1, 1, TEXTS), 'batch 1')
    same(await run(1, 512, [TEXTS[2]!, TEXTS[0]!]), 'reordered', [2, 0])
    for (let i = 0; i < TEXTS.length; i++) same(await run(1, 512, [TEXTS[i]!]), 'alone', [i])
    // A session a generation has used (its cache holds other tokens) gives the same vectors.
    const ctx = await model.createContext({nCtx: 128, threads: 2})
    const session = new Session(ctx)
    await session.generate(model.tokenizer.encode('The dog', {addSpecial: true}), {maxTokens: 10, sampling: greedy()}).result
    same(await embed(session, TEXTS), 'used session')
    ctx.dispose()
  })

  test('normalize: false returns the pooled states; normalising them gives the default vectors', async () => {
    const ctx = await model.createContext({nCtx: 128, threads: 1})
    const session = new Session(ctx)
    const raw = await embed(session, TEXTS, {normalize: false})
    const unit = await embed(session, TEXTS)
    assert.equal(raw.normalized, false)
    raw.embeddings.forEach((v, i) => {
      assert.ok(Math.abs(Math.hypot(...v) - 1) > 1e-3, 'raw states are not unit length')
      assert.ok(bits(normalize(v)).equals(bits(unit.embeddings[i]!)))
    })
    ctx.dispose()
  })
})
