/**
 * Rope scaling (issue #23) against llama.cpp run live (node-llama-cpp 3.22.1, CPU, one thread, F32
 * KV cache, no flash attention): the shared llama (rope NORM), qwen2 (rope NEOX) and gemma3 (sliding
 * layers with their own rope base) fixtures, copied
 * by our GGUF writer with `rope.scaling.*` keys (YaRN: factor 4 from an original context of 64, so a
 * 256-token context is what the scaling covers; linear: factor 2), evaluated by both engines on a
 * prompt longer than the original context. Teacher-forced log-probabilities must agree within the F32
 * tolerance of shared/reference/README.md (1e-3), and greedy continuations token for token.
 *
 * Two anchors need no llama.cpp: the overrides (loadModel's `rope`, the CLI's flags) on the plain
 * file give bitwise the logits of the file carrying the same keys, and each scaling moves the logits
 * (so the comparisons above could fail).
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel} from 'node-llama-cpp'

import type {RopeOverrides} from '../../src/lib/arch/index.js'
import {Model, Trainer, type TrainTarget} from '../../src/lib/engine/index.js'
import {type GgufKv, GgufValueType} from '../../src/lib/gguf/index.js'
import {bits} from '../helpers/engine.js'
import {compareWithLlamaCpp} from '../helpers/llama-cpp.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {withKvs} from '../helpers/with-kvs.js'

const TEXT =
  'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park with her friends. ' +
  'One day, the ball rolled into the pond and a big green frog jumped out. Lily laughed and the frog laughed too, and they played all day.'
const N_CTX = 256
const GREEDY_STEPS = 16

/** Keys as a converter writes them, and the overrides that say the same. */
const SCALINGS: ReadonlyArray<{name: string; kvs: (a: string) => GgufKv[]; overrides: RopeOverrides}> = [
  {
    name: 'yarn x4 from 64',
    kvs: (a) => [
      {key: `${a}.rope.scaling.type`, type: GgufValueType.STRING, value: 'yarn'},
      {key: `${a}.rope.scaling.factor`, type: GgufValueType.FLOAT32, value: 4},
      {key: `${a}.rope.scaling.original_context_length`, type: GgufValueType.UINT32, value: 64},
    ],
    overrides: {scaling: 'yarn', freqScale: 0.25, yarnOrigCtx: 64},
  },
  {
    name: 'linear x2',
    kvs: (a) => [
      {key: `${a}.rope.scaling.type`, type: GgufValueType.STRING, value: 'linear'},
      {key: `${a}.rope.scaling.factor`, type: GgufValueType.FLOAT32, value: 2},
    ],
    overrides: {scaling: 'linear', freqScale: 0.5},
  },
]
const FIXTURES = ['llama', 'qwen2', 'gemma3'] as const
/**
 * F32 tolerances (shared/reference/README.md: about 1e-3), except gemma3: its sliding layers keep
 * their own base and scale 1 (so YaRN's ramp leaves them as they are) while the global ones are
 * scaled, but ggml's F16 GELU table makes this fixture noisy on its own: unscaled, on this text, it is
 * 1.2e-3 (mean 1.8e-4) from live llama.cpp; YaRN 2.2e-3 (mean 2.3e-4), linear 8e-4 (mean 1.5e-4).
 */
const TOLERANCE: Record<(typeof FIXTURES)[number], {tol: number; meanTol: number}> = {
  llama: {tol: 1e-3, meanTol: 2e-4},
  qwen2: {tol: 1e-3, meanTol: 2e-4},
  gemma3: {tol: 3e-3, meanTol: 5e-4},
}

async function ourLogits(path: string, rope?: RopeOverrides): Promise<Float32Array> {
  const model = await Model.load(path, {rope})
  try {
    const ids = model.tokenizer.encode(TEXT, {addSpecial: true})
    const ctx = await model.createContext({nCtx: N_CTX, threads: 1, kvType: 'f32'})
    try {
      return (await ctx.decode(ids, {pos: 0, logits: 'all'}))!.slice()
    } finally {
      ctx.dispose()
    }
  } finally {
    model.dispose()
  }
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0)

describe('differential: rope scaling (YaRN, linear) vs llama.cpp, live', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-rope-'))
  let llama: Llama
  before(async () => {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  })
  after(async () => {
    await llama?.dispose()
    rmSync(dir, {recursive: true, force: true})
  })

  for (const fixture of FIXTURES) {
    for (const s of SCALINGS) {
      test(`${fixture} ${s.name}`, async (t) => {
        const path = join(dir, `${fixture}-${s.name.replace(/\W+/g, '-')}.gguf`)
        await withKvs(sharedPath('fixtures', `${fixture}.gguf`), path, s.kvs)
        const probe = await Model.load(path)
        const nTokens = probe.tokenizer.encode(TEXT, {addSpecial: true}).length
        probe.dispose()
        assert.ok(nTokens > 64, `the prompt (${nTokens} tokens) goes past the original context of 64`)
        const label = `${fixture} ${s.name}`
        await compareWithLlamaCpp(llama, {
          label,
          path,
          text: TEXT,
          ...TOLERANCE[fixture],
          nCtx: N_CTX,
          greedySteps: GREEDY_STEPS,
          report: (line) => {
            t.diagnostic(line)
            console.log(line)
          },
        })
      })
    }
  }
})

describe('rope scaling anchors (no llama.cpp needed)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-rope-anchor-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('the LoRA trainer refuses YaRN by name (its double-precision rope has no ramp) and takes linear scaling', async () => {
    for (const s of SCALINGS) {
      const model = await Model.load(sharedPath('fixtures', 'llama.gguf'), {rope: s.overrides})
      try {
        const targets: TrainTarget[] = model.plan.tensors
          .filter((x) => x.role === 'attn_q')
          .map((x) => ({name: x.name, role: x.role, layer: x.layer, nIn: x.shape[0]!, nOut: x.shape[1]!}))
        const create = () => Trainer.create(model, {targets, rank: 4, alpha: 8, dropout: 0, nCtx: 64, threads: 1})
        if (s.overrides.scaling === 'yarn')
          assert.throws(create, (e: Error & {code?: string}) => e.code === 'ENGINE_UNSUPPORTED' && /YaRN/.test(e.message))
        else create().dispose()
      } finally {
        model.dispose()
      }
    }
  })

  for (const fixture of FIXTURES) {
    test(`${fixture}: the overrides on the plain file give bitwise the logits of the file with the keys`, async () => {
      const plain = sharedPath('fixtures', `${fixture}.gguf`)
      const unscaled = await ourLogits(plain)
      for (const s of SCALINGS) {
        const keyed = join(dir, `${fixture}-${s.name.replace(/\W+/g, '-')}.gguf`)
        await withKvs(plain, keyed, s.kvs)
        const fromKeys = await ourLogits(keyed)
        const fromOverrides = await ourLogits(plain, s.overrides)
        assert.ok(bits(fromKeys).equals(bits(fromOverrides)), `${fixture} ${s.name}: the overrides and the keys differ`)
        // The scaling changes the numbers, so the differential comparison above is not vacuous.
        assert.ok(maxDiff(fromKeys, unscaled) > 0.01, `${fixture} ${s.name}: scaled and unscaled logits differ`)
        // YaRN's ramp and magnitude are more than linear interpolation by the same factor.
        if (s.overrides.scaling === 'yarn') {
          const linear = await ourLogits(plain, {scaling: 'linear', freqScale: s.overrides.freqScale})
          assert.ok(maxDiff(fromKeys, linear) > 0.01, `${fixture} ${s.name}: YaRN differs from linear interpolation`)
        }
        // And none on the keyed file gives back the unscaled logits.
        assert.ok(bits(await ourLogits(keyed, {scaling: 'none'})).equals(bits(unscaled)), `${fixture} ${s.name}: --rope-scaling none`)
      }
    })
  }
})
