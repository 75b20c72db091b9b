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
import {removeSublayers} from '../../src/lib/quantize/index.js'
import {resolveSamplingOptions} from '../../src/lib/sampling/index.js'
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
      tensors: src.tensors.map((t) => ({
        name: t.name,
        type: t.type,
        shape: t.shape,
        data: names.includes(t.name) ? new Uint8Array(t.byteSize) : {file: t.file, offset: t.offset},
      })),
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
      assert.equal(
        summary.droppedBytes,
        gone.reduce((n, t) => n + t.byteSize, 0),
      )
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
      kvs: src.kvs.map((kv) =>
        kv.key === 'llama.attention.head_count'
          ? {key: kv.key, type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(8, 0, 8, 8, 8)}}
          : kv.key === 'llama.attention.head_count_kv'
            ? {key: kv.key, type: GgufValueType.ARRAY, value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(4, 0, 4, 4, 4)}}
            : kv,
      ),
      tensors: src.tensors.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}})),
    })
    const r1 = runCli(['run', '-m', declared, '-p', 'x', '-n', '1'])
    assert.notEqual(r1.status, 0)
    assert.match(r1.stderr, /blk\.1\.attn_q\.weight is present but block 1's attention is declared removed.*\[ARCH_SUBLAYER_PRESENT\]/)
    const undeclared = join(dir, 'undeclared.gguf')
    await writeGguf(undeclared, {
      kvs: src.kvs,
      tensors: src.tensors
        .filter((t) => t.name !== 'blk.1.attn_q.weight')
        .map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}})),
    })
    const r2 = runCli(['run', '-m', undeclared, '-p', 'x', '-n', '1'])
    assert.equal(r2.status, 3)
    assert.match(r2.stderr, /blk\.1\.attn_q\.weight is missing.*\[ARCH_MISSING_TENSOR\]/)
    for (const [spec, code] of [
      ['attn:9', /SUBLAYER_BAD_SPEC/],
      ['ffn:1', /SUBLAYER_BAD_SPEC/],
      ['attn:1,attn:1', /SUBLAYER_BAD_SPEC/],
      ['attn:0,attn:1,attn:2,attn:3,attn:4', /SUBLAYER_UNSUPPORTED/],
    ] as const) {
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
    assert.deepEqual(
      a.tensors.map((t) => [t.name, t.type.name, t.byteSize]),
      b.tensors.map((t) => [t.name, t.type.name, t.byteSize]),
    )
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

  // Every family the engine admits, as the shared fixtures hold them: a file remove-sublayer writes
  // must load and run. gemma2/gemma3 used to keep blk.N.post_attention_norm (and post_ffw_norm) of a
  // removed sublayer, which the loader refuses: the tensors to drop now come from the family's table.
  const FAMILIES = ['llama', 'qwen2', 'qwen3', 'qwen3moe', 'granite', 'phi3', 'gemma2', 'gemma3'] as const
  for (const family of FAMILIES) {
    for (const spec of ['attn:1', 'mlp:1'] as const) {
      test(`${family}, ${spec}: the written file loads and generates, and block 1 keeps only that sublayer's pre-norm`, async () => {
        const parent = sharedPath('fixtures', `${family}.gguf`)
        const out = join(dir, `${family}-${spec.replace(':', '')}.gguf`)
        const summary = await removeSublayers(readGgufModel(parent), out, [{kind: spec.startsWith('attn') ? 'attn' : 'mlp', block: 1}])
        const prefix = spec.startsWith('attn') ? /^blk\.1\.(attn_|post_attention_norm)/ : /^blk\.1\.(ffn_|post_ffw_norm)/
        const preNorm = spec.startsWith('attn') ? 'blk.1.attn_norm.weight' : 'blk.1.ffn_norm.weight'
        const before = readGgufModel(parent).tensors.map((t) => t.name)
        const after = new Set(readGgufModel(out).tensors.map((t) => t.name))
        assert.ok(summary.droppedTensors.length >= 2, summary.droppedTensors.join(', '))
        assert.deepEqual(
          before.filter((n) => prefix.test(n) && n !== preNorm).sort(),
          [...summary.droppedTensors].sort(),
          'every tensor of the sublayer but its pre-norm is dropped',
        )
        for (const n of before) assert.equal(after.has(n), !summary.droppedTensors.includes(n), n)
        assert.ok(after.has(preNorm), `${preNorm} stays`)
        const model = await Model.load(out)
        try {
          assert.equal(spec.startsWith('attn') ? model.config.attnRemoved[1] : model.config.ffnRemoved[1], true)
          const ctx = await model.createContext({nCtx: 32, threads: 1})
          const stream = ctx.generate([1, 2, 3], {maxTokens: 4, sampling: resolveSamplingOptions({temperature: 0})})
          for await (const _ of stream) {
            // drain
          }
          const result = await stream.result
          assert.equal(result.tokens.length + (result.finishReason === 'eos' ? 1 : 0) > 0, true, 'generates')
          ctx.dispose()
        } finally {
          model.dispose()
        }
      })
    }
  }

  for (const kind of ['attn', 'mlp'] as const) {
    test(`a ${kind}:1 file as runner 0.1 wrote it (gemma2, the post-norm kept) loads and gives bitwise the logits of today's cut`, async () => {
      const parent = sharedPath('fixtures', 'gemma2.gguf')
      const cut = join(dir, `gemma2-cut-${kind}.gguf`)
      await removeSublayers(readGgufModel(parent), cut, [{kind, block: 1}])
      const postNorm = kind === 'attn' ? 'blk.1.post_attention_norm.weight' : 'blk.1.post_ffw_norm.weight'
      const kept = readGgufModel(parent).tensors.find((t) => t.name === postNorm)!
      const m = readGgufModel(cut)
      assert.ok(!m.tensors.some((t) => t.name === postNorm), 'today remove-sublayer drops the post-norm')
      const old = join(dir, `gemma2-old-writer-${kind}.gguf`)
      await writeGguf(old, {
        kvs: m.kvs,
        tensors: [...m.tensors, kept].map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}})),
      })
      const logits = async (path: string) => {
        const model = await Model.load(path)
        try {
          const ctx = await model.createContext({nCtx: 64, threads: 1})
          const out = (await ctx.decode(model.tokenizer.encode('Once upon a time', {addSpecial: true}), {pos: 0, logits: 'all'}))!
          ctx.dispose()
          return Buffer.from(out.buffer, out.byteOffset, out.byteLength)
        } finally {
          model.dispose()
        }
      }
      assert.ok((await logits(old)).equals(await logits(cut)), 'the kept post-norm changes nothing')
    })
  }
})
