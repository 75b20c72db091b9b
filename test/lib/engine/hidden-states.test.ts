/**
 * The EMBD decode mode (runner.h RUNNER_LOGITS_EMBD, Context.hiddenStates): each token's hidden state
 * after the output norm. It keeps the determinism contract (bitwise the same for any thread count,
 * batch size or chunking of the tokens over calls), writes the KV cache exactly as any other decode
 * (so a Session may keep reusing it), and is refused by the seam like the other modes when its buffer
 * is short. That the rows are llama.cpp's embeddings is test/differential/embeddings.test.ts.
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {loadAddon} from '../../../src/lib/engine/addon.js'
import {Model, Session} from '../../../src/lib/engine/index.js'
import {bits, greedy} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

// F32, Q4_0 (quantized activations), q/k norms, sliding windows shorter than the prompt, experts.
const CASES = [
  {file: 'models/stories260K.gguf', kvType: 'f16'},
  {file: 'fixtures/llama-q4_0.gguf', kvType: 'f32'},
  {file: 'fixtures/qwen3.gguf', kvType: 'f16'},
  {file: 'fixtures/gemma2.gguf', kvType: 'f32'},
  {file: 'fixtures/qwen3moe.gguf', kvType: 'f16'},
] as const
const TEXT =
  'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park with her friends every day.'

describe('hidden states (EMBD decode)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  for (const c of CASES) {
    describe(`${c.file} (KV ${c.kvType})`, () => {
      let model: Model
      let prompt: number[]
      before(async () => {
        model = await Model.load(sharedPath(c.file))
        prompt = model.tokenizer.encode(TEXT, {addSpecial: true})
      })
      after(() => model?.dispose())

      async function states(opts: {threads: number; nBatch: number; chunks?: number[]}): Promise<Float32Array> {
        const ctx = await model.createContext({nCtx: 128, nBatch: opts.nBatch, threads: opts.threads, kvType: c.kvType})
        const width = model.config.nEmbd
        const out = new Float32Array(prompt.length * width)
        let pos = 0
        for (const n of opts.chunks ?? [prompt.length]) {
          out.set(await ctx.hiddenStates(prompt.slice(pos, pos + n), {pos}), pos * width)
          pos += n
        }
        ctx.dispose()
        return out
      }

      test('bitwise equal across threads, batch sizes and chunking', async () => {
        assert.ok(prompt.length > 20, `a prompt of ${prompt.length} tokens`)
        const base = await states({threads: 1, nBatch: prompt.length})
        assert.equal(base.length, prompt.length * model.config.nEmbd)
        assert.ok(
          base.every((v) => Number.isFinite(v)),
          'finite',
        )
        const variants: Array<[string, {threads: number; nBatch: number; chunks?: number[]}]> = [
          ['2 threads', {threads: 2, nBatch: prompt.length}],
          ['3 threads', {threads: 3, nBatch: prompt.length}],
          ['batch 1', {threads: 1, nBatch: 1}],
          ['batch 7', {threads: 2, nBatch: 7}],
          ['chunks 1+9+rest', {threads: 2, nBatch: 64, chunks: [1, 9, prompt.length - 10]}],
        ]
        for (const [name, v] of variants) assert.ok(bits(base).equals(bits(await states(v))), `${name} differs from 1 thread, one batch`)
      })

      test('the KV cache it leaves is the one a logits decode leaves', async () => {
        const next = async (mode: 'embd' | 'none') => {
          const ctx = await model.createContext({nCtx: 128, threads: 2, kvType: c.kvType})
          if (mode === 'embd') await ctx.hiddenStates(prompt, {pos: 0})
          else await ctx.decode(prompt, {pos: 0, logits: 'none'})
          assert.equal(ctx.nPast, prompt.length)
          const row = (await ctx.decode([prompt[3]!]))!
          ctx.dispose()
          return row
        }
        assert.ok(bits(await next('embd')).equals(bits(await next('none'))), 'the next logits row is the same')
      })
    })
  }

  test('a Session keeps a truthful cache: generating after an embedding reuses it and gives a fresh context’s tokens', async () => {
    const model = await Model.load(sharedPath('models', 'stories260K.gguf'))
    const prompt = model.tokenizer.encode(TEXT, {addSpecial: true})
    const used = new Session(await model.createContext({nCtx: 128, threads: 1}))
    await used.hiddenStates(prompt.slice(0, 30))
    assert.deepEqual(used.cached, prompt.slice(0, 30), 'the cache holds the embedded tokens')
    const turn = used.generate(prompt, {maxTokens: 20, sampling: greedy(), stopTokens: []})
    const reused = await turn.result
    assert.equal(turn.cachedTokens, 30, 'the embedded prefix is reused')
    const fresh = new Session(await model.createContext({nCtx: 128, threads: 1}))
    const whole = await fresh.generate(prompt, {maxTokens: 20, sampling: greedy(), stopTokens: []}).result
    assert.deepEqual(reused.tokens, whole.tokens)
    // After an embedding of other tokens the cache holds those, and nothing of the generation.
    await used.hiddenStates(prompt.slice(5, 12))
    assert.deepEqual(used.cached, prompt.slice(5, 12))
    used.context.dispose()
    fresh.context.dispose()
    model.dispose()
  })

  test('the seam: the buffer is n × n_embd, no logits row is left, modes past EMBD are refused', async () => {
    const model = await Model.load(sharedPath('models', 'stories260K.gguf'))
    const ctx = await model.createContext({nCtx: 64, threads: 1})
    const addon = loadAddon()
    const native = (ctx as unknown as {native: Parameters<typeof addon.decode>[0]}).native
    const width = model.config.nEmbd
    await assert.rejects(
      async () => addon.decode(native, Int32Array.of(1, 2), 0, 3, new Float32Array(2 * width - 1)),
      (e: Error) => {
        assert.match(e.message, new RegExp(`logits holds ${2 * width - 1} floats, ${2 * width} needed`))
        return true
      },
    )
    await addon.decode(native, Int32Array.of(1, 2, 3), 0, 1, new Float32Array(model.config.nVocab))
    assert.ok(addon.contextLogits(native), 'a LAST decode leaves its row')
    await addon.decode(native, Int32Array.of(1, 2), 0, 3, new Float32Array(2 * width))
    assert.equal(addon.contextLogits(native), null, 'an EMBD decode computes no logits')
    await assert.rejects(
      async () => addon.decode(native, Int32Array.of(1), 0, 4),
      (e: Error & {code?: string}) => {
        assert.equal(e.code, 'ENGINE_INVALID_ARGUMENT')
        assert.match(e.message, /logits mode 4/)
        return true
      },
    )
    ctx.dispose()
    model.dispose()
  })
})
