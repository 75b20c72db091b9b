/**
 * The determinism contract (ARCHITECTURE.md): the logits of a position depend only on the model,
 * the tokens before it and the build. Bitwise equal for 1, 2 and 3 threads, for batch sizes 1, 7, 32
 * and the whole prompt, and for any chunking of the prompt over several calls; seeded sampling gives
 * the same tokens every time.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import {ENGINE_WEIGHT_TYPES} from '../../../src/lib/arch/index.js'
import {Model} from '../../../src/lib/engine/model.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'
import {bits} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

// F32 weights, a quantized type (integer dot of Q4_0 x Q8_0), F16 weights; F16 and F32 caches.
const CASES = [
  {file: 'models/stories260K.gguf', kvType: 'f16'},
  {file: 'fixtures/llama-q4_0.gguf', kvType: 'f16'},
  {file: 'fixtures/llama-f16.gguf', kvType: 'f32'},
  {file: 'fixtures/qwen3.gguf', kvType: 'f16'},
  {file: 'fixtures/qwen2.gguf', kvType: 'f32'},
  {file: 'fixtures/granite.gguf', kvType: 'f16'},
  {file: 'fixtures/phi3.gguf', kvType: 'f16'},
  // Sliding windows (16) shorter than the 64-token prompt, GELU table, soft-caps; experts grouped per step.
  {file: 'fixtures/gemma2.gguf', kvType: 'f16'},
  {file: 'fixtures/gemma3.gguf', kvType: 'f32'},
  {file: 'fixtures/qwen3moe.gguf', kvType: 'f16'},
] as const

describe('determinism', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  for (const c of CASES) {
    describe(`${c.file} (KV ${c.kvType})`, () => {
      let model: Model
      let prompt: number[]
      before(async () => {
        model = await Model.load(sharedPath(c.file))
        prompt = JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')).teacher_forced.ids
      })
      after(() => model?.dispose())

      async function logits(opts: {threads: number; nBatch: number; chunks?: number[]}): Promise<Float32Array> {
        const ctx = await model.createContext({nCtx: 128, nBatch: opts.nBatch, threads: opts.threads, kvType: c.kvType})
        const nVocab = model.config.nVocab
        const out = new Float32Array(prompt.length * nVocab)
        let pos = 0
        for (const n of opts.chunks ?? [prompt.length]) {
          const part = (await ctx.decode(prompt.slice(pos, pos + n), {pos, logits: 'all'}))!
          out.set(part, pos * nVocab)
          pos += n
        }
        ctx.dispose()
        return out
      }

      test('bitwise equal across threads, batch sizes and prompt chunking', async () => {
        const base = bits(await logits({threads: 1, nBatch: prompt.length}))
        const variants: Array<[string, {threads: number; nBatch: number; chunks?: number[]}]> = [
          ['2 threads', {threads: 2, nBatch: prompt.length}],
          ['3 threads', {threads: 3, nBatch: prompt.length}],
          ['batch 1', {threads: 1, nBatch: 1}],
          ['batch 7', {threads: 2, nBatch: 7}],
          ['batch 32', {threads: 3, nBatch: 32}],
          ['chunks 1+4+15+44', {threads: 2, nBatch: 64, chunks: [1, 4, 15, 44]}],
          ['chunks 31+33', {threads: 1, nBatch: 16, chunks: [31, 33]}],
        ]
        for (const [name, v] of variants) assert.ok(base.equals(bits(await logits(v))), `${name} differs from 1 thread, one batch`)
      })

      test('seeded sampling gives the same tokens, whatever the thread count', async () => {
        const sampling = resolveSamplingOptions({temperature: 0.9, topK: 40, topP: 0.95, minP: 0.05, seed: 1234n})
        const run = async (threads: number) => {
          const ctx = await model.createContext({nCtx: 128, threads, kvType: c.kvType})
          const r = await ctx.generate(prompt.slice(0, 8), {maxTokens: 40, sampling}).result
          ctx.dispose()
          return r.tokens
        }
        const a = await run(1)
        assert.deepEqual(await run(1), a)
        assert.deepEqual(await run(2), a)
        const other = resolveSamplingOptions({temperature: 0.9, topK: 40, topP: 0.95, minP: 0.05, seed: 1235n})
        const ctx = await model.createContext({nCtx: 128, threads: 1, kvType: c.kvType})
        const b = (await ctx.generate(prompt.slice(0, 8), {maxTokens: 40, sampling: other}).result).tokens
        ctx.dispose()
        assert.notDeepEqual(b, a, 'another seed should give another sample')
      })
    })
  }
})

describe('continuing a generation', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('pending tokens + a second generate equal one longer greedy generation', async () => {
    const model = await Model.load(sharedPath('models', 'stories260K.gguf'))
    const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n})
    const prompt = model.tokenizer.encode('Once upon a time', {addSpecial: true})
    const one = await model.createContext({nCtx: 128, threads: 1})
    const whole = (await one.generate(prompt, {maxTokens: 30, sampling, stopTokens: []}).result).tokens
    const two = await model.createContext({nCtx: 128, threads: 1})
    const first = await two.generate(prompt, {maxTokens: 12, sampling, stopTokens: []}).result
    assert.equal(first.nPast, prompt.length + 11, 'the last generated token is not yet evaluated')
    assert.deepEqual(first.pending, [first.tokens[11]])
    const second = await two.generate(first.pending, {maxTokens: 18, sampling, stopTokens: []}).result
    assert.deepEqual([...first.tokens, ...second.tokens], whole)
    const stream = two.generate([whole[0]!], {maxTokens: 1, sampling, pos: 0})
    for await (const _ of stream) break
    await assert.rejects(async () => {
      for await (const _ of stream) break
    }, /iterated once/)
    one.dispose()
    two.dispose()
    model.dispose()
  })
})

// K-quant weights (Q8_K activations), IQ4_NL and MXFP4 (Q8_0): random test models, the same contract.
describe('determinism, K-quant, IQ4_NL and MXFP4 weights', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-det-k-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  for (const type of ['q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k', 'iq4_nl', 'mxfp4'] as const) {
    const admitted = ENGINE_WEIGHT_TYPES.has(type.toUpperCase())
    test(
      `${type}: bitwise equal across threads, batch sizes and prompt chunking`,
      {skip: admitted ? false : `src/lib/arch's ENGINE_WEIGHT_TYPES does not admit ${type.toUpperCase()} yet`},
      async () => {
        const path = join(dir, `${type}.gguf`)
        await makeTestModel(path, {
          arch: 'llama',
          nEmbd: 256,
          nLayer: 2,
          nHead: 8,
          nHeadKv: 2,
          nFf: 512,
          nCtx: 128,
          type,
          seed: 7n,
          tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
        })
        const model = await Model.load(path)
        const prompt: number[] = JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')).teacher_forced.ids
        const logits = async (opts: {threads: number; nBatch: number; chunks?: number[]}) => {
          const ctx = await model.createContext({nCtx: 128, nBatch: opts.nBatch, threads: opts.threads, kvType: 'f16'})
          const nVocab = model.config.nVocab
          const out = new Float32Array(prompt.length * nVocab)
          let pos = 0
          for (const n of opts.chunks ?? [prompt.length]) {
            out.set((await ctx.decode(prompt.slice(pos, pos + n), {pos, logits: 'all'}))!, pos * nVocab)
            pos += n
          }
          ctx.dispose()
          return out
        }
        try {
          const base = bits(await logits({threads: 1, nBatch: prompt.length}))
          const variants: Array<[string, {threads: number; nBatch: number; chunks?: number[]}]> = [
            ['2 threads', {threads: 2, nBatch: prompt.length}],
            ['3 threads', {threads: 3, nBatch: prompt.length}],
            ['batch 1', {threads: 1, nBatch: 1}],
            ['batch 7', {threads: 2, nBatch: 7}],
            ['chunks 1+4+15+44', {threads: 2, nBatch: 64, chunks: [1, 4, 15, 44]}],
          ]
          for (const [name, v] of variants)
            assert.ok(base.equals(bits(await logits(v))), `${type}: ${name} differs from 1 thread, one batch`)
        } finally {
          model.dispose()
        }
      },
    )
  }
})

describe(
  'determinism of a generated Mixtral (llama with experts, Q8_0, both expert layouts)',
  {skip: hasShared() ? false : NO_SHARED_REASON},
  () => {
    test('bitwise equal across threads, batch sizes and prompt chunking', async () => {
      const {makeTestModel} = await import('../../../scripts/make-test-model.js')
      const {mkdtempSync, rmSync} = await import('node:fs')
      const {tmpdir} = await import('node:os')
      const {join} = await import('node:path')
      const dir = mkdtempSync(join(tmpdir(), 'runner-det-moe-'))
      const prompt: number[] = JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')).teacher_forced.ids
      try {
        for (const expertLayout of ['fused', 'split'] as const) {
          const path = join(dir, `${expertLayout}.gguf`)
          await makeTestModel(path, {
            arch: 'mixtral',
            nEmbd: 128,
            nLayer: 2,
            nHead: 4,
            nHeadKv: 2,
            nFf: 128,
            nCtx: 256,
            type: 'q8_0',
            seed: 31n,
            tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
            nExpert: 8,
            nExpertUsed: 2,
            expertLayout,
          })
          const model = await Model.load(path)
          const run = async (threads: number, nBatch: number, chunks = [prompt.length]) => {
            const ctx = await model.createContext({nCtx: 128, nBatch, threads, kvType: 'f16'})
            const out = new Float32Array(prompt.length * model.config.nVocab)
            let pos = 0
            for (const n of chunks) {
              out.set((await ctx.decode(prompt.slice(pos, pos + n), {pos, logits: 'all'}))!, pos * model.config.nVocab)
              pos += n
            }
            ctx.dispose()
            return bits(out)
          }
          const base = await run(1, prompt.length)
          assert.ok(base.equals(await run(2, prompt.length)), `${expertLayout}: 2 threads`)
          assert.ok(base.equals(await run(3, 7)), `${expertLayout}: 3 threads, batch 7`)
          assert.ok(base.equals(await run(1, 1)), `${expertLayout}: batch 1`)
          assert.ok(base.equals(await run(2, 64, [1, 4, 15, 44])), `${expertLayout}: chunks 1+4+15+44`)
          model.dispose()
        }
      } finally {
        rmSync(dir, {recursive: true, force: true})
      }
    })
  },
)
