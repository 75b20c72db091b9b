/**
 * LoRA adapters against llama.cpp run live (node-llama-cpp 3.22.1 and its context `lora` option; CPU,
 * one thread, F32 KV cache): for every dense family fixture and stories260K, a random adapter on
 * every weight runner adapts (the fused attn_qkv / ffn_up of phi3 included; the head where it is not
 * tied), written by our writer in llama.cpp's format, must give llama.cpp's teacher-forced
 * log-probabilities within the type's tolerance and its greedy tokens under the margin rule
 * (shared/reference/README.md). Each adapter must move the logits, so a LoRA path that did nothing
 * would fail. Two adapters at once, and scales other than 1, are compared the same way.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel} from 'node-llama-cpp'

import {makeTestModel, type TestModelSpec} from '../../scripts/make-test-model.js'
import {Model} from '../../src/lib/engine/model.js'
import type {LoraSpec} from '../../src/lib/lora/index.js'
import {compareWithLlamaCpp} from '../helpers/llama-cpp.js'
import {makeLoraAdapter} from '../helpers/lora.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const TEXT = 'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park.'
const base = {nEmbd: 128, nLayer: 3, nHead: 4, nHeadKv: 2, nFf: 256}
type Family = Omit<TestModelSpec, 'type' | 'seed' | 'tokenizerFrom' | 'nCtx'>
const FAMILIES: Family[] = [
  {...base, arch: 'llama'},
  {...base, arch: 'qwen2', ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...base, arch: 'granite'},
  {...base, arch: 'smollm3', nLayer: 4},
  {...base, arch: 'olmo2'},
  {...base, arch: 'phi3', nHeadKv: 4},
  {...base, arch: 'gemma2', slidingWindow: 8, rmsEps: 1e-6},
  {...base, arch: 'gemma3', nHeadKv: 1, tied: true, slidingWindow: 8, slidingWindowPattern: 2, ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...base, arch: 'qwen3moe', nExpert: 4, nExpertUsed: 2, nFfExp: 64, ropeFreqBase: 1e6, rmsEps: 1e-6},
]

async function logitsOf(path: string, lora: readonly LoraSpec[]): Promise<Float32Array> {
  const model = await Model.load(path, {lora})
  try {
    const ctx = await model.createContext({nCtx: 256, threads: 1, kvType: 'f32'})
    const ids = model.tokenizer.encode(TEXT, {addSpecial: true})
    const out = (await ctx.decode(ids, {pos: 0, logits: 'all'}))!.slice()
    ctx.dispose()
    return out
  } finally {
    model.dispose()
  }
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let d = 0
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!))
  return d
}

describe('differential: LoRA adapters vs llama.cpp, live', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-lora-'))
  let llama: Llama
  before(async () => {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  })
  after(async () => {
    await llama?.dispose()
    rmSync(dir, {recursive: true, force: true})
  })

  const compare = (t: {diagnostic: (m: string) => void}, label: string, path: string, lora: LoraSpec[], tol = 1e-3, meanTol = 5e-4) =>
    compareWithLlamaCpp(llama, {label, path, text: TEXT, tol, meanTol, greedySteps: 24, lora, report: (l) => t.diagnostic(l)})

  for (const family of FAMILIES) {
    const name = family.name ?? family.arch
    test(`${name} f32 with an adapter on every adaptable weight`, async (t) => {
      const path = join(dir, `${name}.gguf`)
      await makeTestModel(path, {...family, nCtx: 256, type: 'f32', seed: 2031n, tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
      const adapter = join(dir, `${name}-lora.gguf`)
      const pairs = await makeLoraAdapter(path, adapter, {seed: 7n, rank: 8, alpha: 16, spread: 0.5})
      t.diagnostic(`${pairs.length} adapted weights: ${[...new Set(pairs.map((p) => p.target.replace(/^blk\.\d+\./, '')))].join(', ')}`)
      const lora = [{path: adapter, scale: 1}]
      const moved = maxDiff(await logitsOf(path, []), await logitsOf(path, lora))
      assert.ok(moved > 0.05, `the adapter moves the logits (max |Δ| ${moved})`)
      await compare(t, `${name} + LoRA`, path, lora)
    })
  }

  test('stories260K: two adapters at once, scales 0.5 and -1.25, and an adapter without alpha', async (t) => {
    const path = sharedPath('models', 'stories260K.gguf')
    const one = join(dir, 'stories-a.gguf')
    const two = join(dir, 'stories-b.gguf')
    const noAlpha = join(dir, 'stories-c.gguf')
    await makeLoraAdapter(path, one, {seed: 11n, rank: 4, alpha: 8, spread: 0.5, roles: ['attn_q', 'attn_v', 'ffn_down']})
    await makeLoraAdapter(path, two, {seed: 12n, rank: 16, alpha: 4, spread: 0.5})
    await makeLoraAdapter(path, noAlpha, {seed: 13n, rank: 2, alpha: 0, spread: 0.3, roles: ['attn_k', 'ffn_gate']})
    await compare(t, 'stories260K + two adapters', path, [
      {path: one, scale: 0.5},
      {path: two, scale: -1.25},
    ])
    await compare(t, 'stories260K + adapter with alpha 0', path, [{path: noAlpha, scale: 1}])
  })

  test('a Q8_0 base with an F32 adapter', async (t) => {
    const path = sharedPath('fixtures', 'stories260K-q8_0.gguf')
    const adapter = join(dir, 'stories-q8.gguf')
    await makeLoraAdapter(path, adapter, {seed: 21n, rank: 8, alpha: 8, spread: 0.5})
    await compare(t, 'stories260K-q8_0 + LoRA', path, [{path: adapter, scale: 1}], 0.25, 0.05)
  })
})
