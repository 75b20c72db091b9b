/**
 * Sublayer removal, checked through an independent path of the full math: removing block N's
 * attention must score bitwise the same as the parent with block N's attention output projection
 * set to zero (its branch then adds exactly +0 to the residual), and differ from the untouched
 * parent; likewise the FFN with its down projection zeroed. Stock llama.cpp refuses the file.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {getLlama, LlamaLogLevel} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/model.js'
import {GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, runCli, sharedPath} from '../helpers/shared.js'

describe('runner remove-sublayer', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-cut-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const parent = () => sharedPath('models', 'stories260K.gguf')
  const score = (model: string) => {
    const r = runCli(['score', '-m', model, '--file', sharedPath('reference', 'corpus-stories.txt'), '--ctx', '128', '--json'])
    assert.equal(r.status, 0, r.stderr)
    const j = JSON.parse(r.stdout)
    return {nll: j.nll_mean as number, windows: JSON.stringify(j.windows), top1: j.top1 as number}
  }
  /** The parent with the named tensors' weights set to zero. */
  async function zeroed(names: string[], out: string): Promise<string> {
    const src = readGgufModel(parent())
    await writeGguf(out, {
      kvs: src.kvs,
      tensors: src.tensors.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: names.includes(t.name) ? new Uint8Array(t.byteSize) : {file: t.file, offset: t.offset}})),
    })
    return out
  }

  for (const [spec, zero] of [
    ['attn:2', ['blk.2.attn_output.weight']],
    ['mlp:1', ['blk.1.ffn_down.weight']],
    ['attn:0,mlp:4', ['blk.0.attn_output.weight', 'blk.4.ffn_down.weight']],
  ] as const) {
    test(`${spec}: scores bitwise like the parent with ${zero.join(' and ')} zeroed, and unlike the parent`, async () => {
      const out = join(dir, `${spec.replace(/\W/g, '_')}.gguf`)
      const r = runCli(['remove-sublayer', parent(), out, spec, '--json'])
      assert.equal(r.status, 0, r.stderr)
      const summary = JSON.parse(r.stdout)
      const cut = score(out)
      const reference = score(await zeroed([...zero], join(dir, `zero-${spec.replace(/\W/g, '_')}.gguf`)))
      assert.equal(cut.nll, reference.nll)
      assert.equal(cut.windows, reference.windows)
      assert.equal(cut.top1, reference.top1)
      assert.notEqual(cut.nll, score(parent()).nll)
      // Byte accounting: exactly the dropped tensors are gone, and their bytes are what was removed.
      const before = readGgufModel(parent()).tensors
      const afterNames = new Set(readGgufModel(out).tensors.map((t) => t.name))
      const gone = before.filter((t) => !afterNames.has(t.name))
      assert.deepEqual(gone.map((t) => t.name).sort(), [...summary.droppedTensors].sort())
      assert.equal(summary.droppedBytes, gone.reduce((n, t) => n + t.byteSize, 0))
      for (const t of gone) assert.ok(!t.name.includes('norm'), `${t.name}: the pre-norm stays`)
    })
  }

  test('the KV cache shrinks by exactly one block of K and V', async () => {
    const out = join(dir, 'kv.gguf')
    assert.equal(runCli(['remove-sublayer', parent(), out, 'attn:3']).status, 0)
    const a = await Model.load(parent())
    const b = await Model.load(out)
    const ca = await a.createContext({nCtx: 64, threads: 1, kvType: 'f16'})
    const cb = await b.createContext({nCtx: 64, threads: 1, kvType: 'f16'})
    // stories260K: 4 KV heads x head_dim 8 per position, K and V, F16.
    assert.equal(ca.kvBytes - cb.kvBytes, 2 * 64 * 4 * 8 * 2)
    assert.equal(ca.kvBytes, 5 * 2 * 64 * 4 * 8 * 2)
    ca.dispose()
    cb.dispose()
    a.dispose()
    b.dispose()
  })

  test('refusals: a declared removal whose tensors are present, an undeclared missing tensor, bad specs', async () => {
    const src = readGgufModel(parent())
    const declared = join(dir, 'declared.gguf')
    await writeGguf(declared, {
      kvs: src.kvs.map((kv) => (kv.key === 'llama.attention.head_count' ? {key: kv.key, type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(8, 0, 8, 8, 8)}} : kv.key === 'llama.attention.head_count_kv' ? {key: kv.key, type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(4, 0, 4, 4, 4)}} : kv)),
      tensors: src.tensors.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}})),
    })
    const r1 = runCli(['run', '-m', declared, '-p', 'x', '-n', '1'])
    assert.notEqual(r1.status, 0)
    assert.match(r1.stderr, /blk\.1\.attn_q\.weight is present but block 1's attention is declared removed.*\[ARCH_SUBLAYER_PRESENT\]/)
    const undeclared = join(dir, 'undeclared.gguf')
    await writeGguf(undeclared, {kvs: src.kvs, tensors: src.tensors.filter((t) => t.name !== 'blk.1.attn_q.weight').map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}}))})
    const r2 = runCli(['run', '-m', undeclared, '-p', 'x', '-n', '1'])
    assert.equal(r2.status, 3)
    assert.match(r2.stderr, /blk\.1\.attn_q\.weight is missing.*\[ARCH_MISSING_TENSOR\]/)
    for (const [spec, code] of [['attn:9', /SUBLAYER_BAD_SPEC/], ['ffn:1', /SUBLAYER_BAD_SPEC/], ['attn:1,attn:1', /SUBLAYER_BAD_SPEC/], ['attn:0,attn:1,attn:2,attn:3,attn:4', /SUBLAYER_UNSUPPORTED/]] as const) {
      const r = runCli(['remove-sublayer', parent(), join(dir, 'bad.gguf'), spec])
      assert.notEqual(r.status, 0, spec)
      assert.match(r.stderr, code, spec)
    }
  })

  test('quantize --remove-sublayer equals remove-sublayer then quantize', () => {
    const one = join(dir, 'one-pass.gguf')
    const cut = join(dir, 'cut-first.gguf')
    const two = join(dir, 'two-pass.gguf')
    assert.equal(runCli(['quantize', parent(), one, '--type', 'Q8_0', '--pure', '--remove-sublayer', 'attn:2,mlp:3']).status, 0)
    assert.equal(runCli(['remove-sublayer', parent(), cut, 'attn:2,mlp:3']).status, 0)
    assert.equal(runCli(['quantize', cut, two, '--type', 'Q8_0', '--pure']).status, 0)
    const a = readGgufModel(one)
    const b = readGgufModel(two)
    assert.deepEqual(a.tensors.map((t) => [t.name, t.type.name, t.byteSize]), b.tensors.map((t) => [t.name, t.type.name, t.byteSize]))
    assert.deepEqual([...(a.metadata.get('llama.attention.head_count')!.value as {items: Uint32Array}).items], [8, 8, 0, 8, 8])
    assert.deepEqual([...(a.metadata.get('llama.feed_forward_length')!.value as {items: Uint32Array}).items], [172, 172, 172, 0, 172])
    assert.equal(score(one).nll, score(two).nll)
  })

  test('stock llama.cpp refuses a file with a removed sublayer (node-llama-cpp 3.22.1)', async () => {
    const out = join(dir, 'llamacpp.gguf')
    assert.equal(runCli(['remove-sublayer', parent(), out, 'attn:2']).status, 0)
    const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.disabled})
    try {
      await assert.rejects(llama.loadModel({modelPath: out}))
    } finally {
      await llama.dispose()
    }
  })
})
