/**
 * scripts/make-test-model.ts: deterministic files that llama.cpp (node-llama-cpp 3.22.1) loads,
 * describes with the shape we asked for, and runs; quantized files hold exactly the engine's
 * quantizeRef (llama.cpp's quantize_row_*_ref, see test/native/quant-fixtures.test.ts) of the
 * float32 weights of the f32 file made with the same seed, with llama.cpp's file-type codes.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {getLlama, readGgufFileInfo} from 'node-llama-cpp'

import {makeTestModel, type TestModelSpec, type TestModelType} from '../../scripts/make-test-model.js'
import {quantizeRef} from '../../src/lib/engine/kernels.js'
import {type GgufTensorInfo, readGgufModel} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-make-'))
after(() => rmSync(dir, {recursive: true, force: true}))

const spec = (over: Partial<TestModelSpec> = {}): TestModelSpec => ({
  arch: 'llama',
  nEmbd: 64,
  nLayer: 2,
  nHead: 4,
  nHeadKv: 2,
  nFf: 96,
  nCtx: 128,
  type: 'f32',
  seed: 42n,
  tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
  ...over,
})
const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex')
const tensorBytes = (t: GgufTensorInfo) => readFileSync(t.file).subarray(t.offset, t.offset + t.byteSize)
/** llama.cpp's LLAMA_FTYPE_* for each --type. */
const FTYPE: Record<TestModelType, number> = {f32: 0, f16: 1, q8_0: 7, q4_0: 2, q4_1: 3, q5_0: 8, q5_1: 9}
const GGML_ID: Record<TestModelType, number> = {f32: 0, f16: 1, q8_0: 8, q4_0: 2, q4_1: 3, q5_0: 6, q5_1: 7}

describe('make-test-model', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('the same seed gives the same bytes; another seed gives other bytes', async () => {
    await makeTestModel(join(dir, 'a.gguf'), spec())
    await makeTestModel(join(dir, 'b.gguf'), spec())
    await makeTestModel(join(dir, 'c.gguf'), spec({seed: 43n}))
    assert.equal(sha(join(dir, 'a.gguf')), sha(join(dir, 'b.gguf')))
    assert.notEqual(sha(join(dir, 'a.gguf')), sha(join(dir, 'c.gguf')))
  })

  for (const type of ['f32', 'f16', 'q8_0', 'q4_0'] as const) {
    test(`${type}: llama.cpp reads the shape we asked for, loads the model and generates`, async () => {
      const path = join(dir, `run-${type}.gguf`)
      await makeTestModel(path, spec({type, nVocab: 600}))
      const info = await readGgufFileInfo(path, {readTensorInfo: true})
      const md = info.metadata as unknown as {
        llama: Record<string, unknown>
        general: Record<string, unknown>
        tokenizer: {ggml: {tokens: string[]}}
      }
      assert.equal(md.general.architecture, 'llama')
      assert.equal(md.llama.embedding_length, 64)
      assert.equal(md.llama.block_count, 2)
      assert.equal(md.llama.feed_forward_length, 96)
      assert.equal(md.llama.context_length, 128)
      assert.deepEqual(md.llama.attention, {head_count: 4, head_count_kv: 2, layer_norm_rms_epsilon: Math.fround(1e-5)})
      assert.equal(md.tokenizer.ggml.tokens.length, 600)
      assert.equal(md.general.file_type, FTYPE[type])
      assert.equal(md.general.quantization_version, type === 'f32' || type === 'f16' ? undefined : 2)
      for (const t of info.fullTensorInfo!) assert.equal(t.ggmlType, t.dimensions.length === 1 ? 0 : GGML_ID[type], t.name)

      const llama = await getLlama({gpu: false, build: 'never', logLevel: 'error'})
      const model = await llama.loadModel({modelPath: path})
      const ctx = await model.createContext({contextSize: 64, threads: 1})
      try {
        assert.equal(model.trainContextSize, 128)
        const seq = ctx.getSequence()
        const out: number[] = []
        for await (const t of seq.evaluate(model.tokenize('Once upon a time'), {temperature: 0})) {
          out.push(t)
          if (out.length === 4) break
        }
        assert.equal(out.length, 4)
        for (const t of out) assert.ok(t >= 0 && t < 600)
      } finally {
        await ctx.dispose()
        await model.dispose()
      }
    })
  }

  test('quantized tensors are quantizeRef of the f32 model with the same seed; ne0 % 32 != 0 falls back to F16', async () => {
    // n_ff 100: ffn_down has ne0 = 100, which no 32-value block divides (llama-quantize --pure writes F16).
    const shape = {nFf: 100, nVocab: 600}
    const f32Path = join(dir, 'ref-f32.gguf')
    await makeTestModel(f32Path, spec(shape))
    const ref = new Map(readGgufModel(f32Path).tensors.map((t) => [t.name, t]))
    for (const type of ['q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1'] as const) {
      const path = join(dir, `ref-${type}.gguf`)
      await makeTestModel(path, spec({...shape, type}))
      const model = readGgufModel(path)
      assert.equal(model.metadata.get('general.file_type')?.value, FTYPE[type], `${type} general.file_type`)
      assert.equal(model.metadata.get('general.quantization_version')?.value, 2, `${type} general.quantization_version`)
      let fallbacks = 0
      for (const t of model.tensors) {
        const f = ref.get(t.name)!
        const floats = new Float32Array(new Uint8Array(tensorBytes(f)).buffer)
        const want = t.shape.length === 1 ? 'F32' : t.shape[0]! % 32 === 0 ? type.toUpperCase() : 'F16'
        assert.equal(t.type.name, want, `${type} ${t.name}`)
        if (want === 'F16') fallbacks++
        const expected = want === 'F32' ? new Uint8Array(floats.buffer) : quantizeRef(want, floats)
        assert.ok(
          Buffer.from(tensorBytes(t)).equals(Buffer.from(expected)),
          `${type} ${t.name}: bytes are quantizeRef(${want}) of the f32 tensor`,
        )
      }
      assert.equal(fallbacks, 2, `${type}: the two ffn_down tensors fell back to F16`)
    }
  })

  test('the tokenizer metadata is copied from the source file unchanged', async () => {
    const path = join(dir, 'tok.gguf')
    await makeTestModel(path, spec())
    const ours = readGgufModel(path)
    const src = readGgufModel(sharedPath('models', 'stories260K.gguf'))
    for (const kv of src.kvs.filter((k) => k.key.startsWith('tokenizer.'))) assert.deepEqual(ours.metadata.get(kv.key), kv, kv.key)
  })

  test('bad shapes are refused', async () => {
    await assert.rejects(makeTestModel(join(dir, 'x.gguf'), spec({nHead: 5})), /not divisible/)
    await assert.rejects(makeTestModel(join(dir, 'x.gguf'), spec({nHeadKv: 3})), /not a multiple/)
    await assert.rejects(makeTestModel(join(dir, 'x.gguf'), spec({nVocab: 10})), /smaller/)
  })
})
