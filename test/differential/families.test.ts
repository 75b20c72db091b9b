/**
 * Differential test of every model family against llama.cpp run live (node-llama-cpp 3.22.1, CPU,
 * one thread, F32 KV cache, no flash attention), as test/differential/llama-cpp.test.ts does for
 * weight types: for each family, a random model written by scripts/make-test-model.ts (3 blocks, in
 * F32 and Q8_0) is evaluated by both engines on a prompt longer than any sliding window used.
 * Teacher-forced log-probabilities must agree within the type's tolerance, and greedy continuations
 * token for token until a step where llama.cpp's own top-1/top-2 margin is below that tolerance
 * (shared/reference/README.md's rule).
 *
 * Two anchors need no llama.cpp: a mixture whose experts are all the same FFN gives the dense model's
 * tokens, and the legacy split expert layout (which llama.cpp no longer loads) gives bitwise the
 * logits of the fused one.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel} from 'node-llama-cpp'

import {makeTestModel, type TestModelSpec, type TestModelType} from '../../scripts/make-test-model.js'
import {Model} from '../../src/lib/engine/model.js'
import {bits, greedy} from '../helpers/engine.js'
import {compareWithLlamaCpp} from '../helpers/llama-cpp.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

/** F32-exact and quantized-activation tolerances, as in llama-cpp.test.ts. */
const TYPES: Array<{type: TestModelType; tol: number; meanTol: number}> = [
  {type: 'f32', tol: 1e-3, meanTol: 5e-4},
  {type: 'q8_0', tol: 0.25, meanTol: 0.05},
]
/** 3 blocks, widths that are multiples of 32; sliding windows of 8 (the prompt is 31 tokens). */
type Family = Omit<TestModelSpec, 'type' | 'seed' | 'tokenizerFrom' | 'nCtx'>
const base = {nEmbd: 128, nLayer: 3, nHead: 4, nHeadKv: 2, nFf: 256}
const FAMILIES: Family[] = [
  {...base, arch: 'llama'},
  {...base, arch: 'qwen2', ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...base, arch: 'qwen3', headDim: 64, tied: true, ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...base, arch: 'granite'},
  // Four blocks, so that block 3 is one of smollm3's NoPE blocks ((i + 1) % 4 == 0: no rope there).
  {...base, arch: 'smollm3', nLayer: 4},
  {...base, arch: 'olmo2'},
  {...base, arch: 'phi3', nHeadKv: 4},
  {...base, arch: 'gemma2', slidingWindow: 8, rmsEps: 1e-6},
  {...base, arch: 'gemma3', nHeadKv: 1, tied: true, slidingWindow: 8, slidingWindowPattern: 2, ropeFreqBase: 1e6, rmsEps: 1e-6},
  // The pattern as one bool per block (llama.cpp reads either form): blocks 0 and 1 slide, 2 does not.
  {
    ...base,
    arch: 'gemma3',
    name: 'gemma3-pattern-array',
    slidingWindow: 8,
    slidingWindowPattern: [true, true, false],
    ropeFreqBase: 1e6,
    rmsEps: 1e-6,
  },
  {...base, arch: 'qwen3moe', nExpert: 4, nExpertUsed: 2, nFfExp: 64, ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...base, arch: 'mixtral', nExpert: 4, nExpertUsed: 2, nFf: 128},
]
const TEXT = 'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park.'
const GREEDY_STEPS = 24

describe('differential: every family vs llama.cpp, live, F32 and Q8_0', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-families-'))
  let llama: Llama
  before(async () => {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  })
  after(async () => {
    await llama?.dispose()
    rmSync(dir, {recursive: true, force: true})
  })

  const againstLlamaCpp = (t: {diagnostic: (m: string) => void}, label: string, path: string, tol: number, meanTol: number, nCtx = 256) =>
    compareWithLlamaCpp(llama, {
      label,
      path,
      text: TEXT,
      tol,
      meanTol,
      nCtx,
      greedySteps: GREEDY_STEPS,
      report: (line) => t.diagnostic(line),
    })

  for (const family of FAMILIES) {
    for (const {type, tol, meanTol} of TYPES) {
      test(`${family.name ?? family.arch} ${type}`, async (t) => {
        const path = join(dir, `${family.name ?? family.arch}-${type}.gguf`)
        await makeTestModel(path, {...family, nCtx: 256, type, seed: 2027n, tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
        await againstLlamaCpp(t, `${family.name ?? family.arch} ${type}`, path, tol, meanTol)
      })
    }
  }

  test('phi3 longrope: the short factors up to the original context, the long ones past it, as llama.cpp picks them', async (t) => {
    const path = join(dir, 'phi3-longrope.gguf')
    await makeTestModel(path, {
      ...base,
      arch: 'phi3',
      nHeadKv: 4,
      nCtx: 1024,
      type: 'f32',
      seed: 2028n,
      tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
      longrope: {originalContext: 256, attnFactor: 1.19},
    })
    // llama.cpp pads a context to 256 cells and picks the long factors when that exceeds 256.
    const short = await againstLlamaCpp(t, 'phi3 longrope, context 256 (short factors)', path, 1e-3, 5e-4, 256)
    const long = await againstLlamaCpp(t, 'phi3 longrope, context 512 (long factors)', path, 1e-3, 5e-4, 512)
    let d = 0
    for (let i = 0; i < short.length; i++) d = Math.max(d, Math.abs(short[i]! - long[i]!))
    assert.ok(d > 0.01, `the two factor sets give different logits (${d}), so the choice is tested`)
  })
})

describe('mixture-of-experts anchors (no llama.cpp needed)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-moe-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const common = {
    nEmbd: 128,
    nLayer: 3,
    nHead: 4,
    nHeadKv: 2,
    nFf: 128,
    nCtx: 256,
    seed: 99n,
    tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
  } as const

  async function run(spec: TestModelSpec, name: string): Promise<{tokens: number[]; logits: Float32Array}> {
    const path = join(dir, `${name}.gguf`)
    await makeTestModel(path, spec)
    const model = await Model.load(path)
    try {
      const ids = model.tokenizer.encode(TEXT, {addSpecial: true})
      const ctx = await model.createContext({nCtx: 256, threads: 2, kvType: 'f32'})
      const logits = (await ctx.decode(ids, {pos: 0, logits: 'all'}))!.slice()
      const tokens = (await ctx.generate(ids, {maxTokens: 32, sampling: greedy(), pos: 0, stopTokens: []}).result).tokens
      ctx.dispose()
      return {tokens, logits}
    } finally {
      model.dispose()
    }
  }

  for (const type of ['f32', 'q8_0'] as const) {
    test(`experts that are all the dense FFN give the dense model's tokens (${type}; mixtral and its llama twin)`, async () => {
      const dense = await run({...common, arch: 'llama', type}, `dense-${type}`)
      const moe = await run({...common, arch: 'mixtral', type, nExpert: 4, nExpertUsed: 2, identicalExperts: true}, `identical-${type}`)
      assert.deepEqual(moe.tokens, dense.tokens)
      // Not bitwise: w0·y + w1·y with w0 + w1 = 1 rounds differently from y, by about one ulp.
      let max = 0
      for (let i = 0; i < dense.logits.length; i++) max = Math.max(max, Math.abs(dense.logits[i]! - moe.logits[i]!))
      assert.ok(max < 1e-3, `max |Δ logit| ${max}`)
      // And the anchor can fail: experts that differ give other logits.
      const differ = await run({...common, arch: 'mixtral', type, nExpert: 4, nExpertUsed: 2}, `distinct-${type}`)
      let d = 0
      for (let i = 0; i < dense.logits.length; i++) d = Math.max(d, Math.abs(dense.logits[i]! - differ.logits[i]!))
      assert.ok(d > 0.1, `distinct experts move the logits (${d})`)
    })
  }

  test('the legacy split expert layout gives bitwise the logits of the fused layout', async () => {
    for (const arch of ['mixtral', 'qwen3moe'] as const) {
      const spec = {...common, arch, type: 'q8_0' as const, nExpert: 4, nExpertUsed: 2, nFfExp: 64}
      const fused = await run(spec, `${arch}-fused`)
      const split = await run({...spec, expertLayout: 'split'}, `${arch}-split`)
      assert.ok(bits(fused.logits).equals(bits(split.logits)), `${arch}: split and fused layouts differ`)
      assert.deepEqual(split.tokens, fused.tokens)
    }
  })
})
