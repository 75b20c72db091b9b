/**
 * The trainer's gradients, against centred finite differences of its own loss in double precision,
 * for every LoRA parameter of every weight it can adapt, on a tiny random-weight model of each dense
 * family (a NoPE layer: smollm3; soft-caps and sliding windows: gemma2; sliding windows and per-head
 * q/k norms: gemma3; whole-projection q/k norms and post-norms without pre-norms: olmo2; the granite
 * scales; qwen2's biases; phi3's fused attn_qkv and ffn_gate_up (one pair each, b's rows split
 * over the views), with and without longrope; qwen3moe's
 * experts and router). The loss itself is anchored outside the
 * trainer: it must equal the inference pass's teacher-forced NLL with the same parameters written as
 * an adapter and loaded with --lora (itself held to llama.cpp in lora.test.ts), within float rounding.
 * And the gradients are the same bits for 1 and 3 threads.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {makeTestModel, type TestModelSpec} from '../../scripts/make-test-model.js'
import {Model, Trainer, type TrainTarget} from '../../src/lib/engine/index.js'
import {writeLoraAdapter} from '../../src/lib/lora/index.js'
import {SeededRandom} from '../../src/lib/util/random.js'
import {ADAPTABLE_ROLES} from '../helpers/lora.js'
import {teacherForcedLogprobs} from '../helpers/logprobs.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const TEXT = 'Once upon a time, there was a little girl named Lily.'
const tiny = {nEmbd: 32, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 48}
type Family = Omit<TestModelSpec, 'type' | 'seed' | 'tokenizerFrom' | 'nCtx'>
const FAMILIES: Array<Family & {tol?: number}> = [
  {...tiny, arch: 'llama'},
  {...tiny, arch: 'qwen2', ropeFreqBase: 1e6, rmsEps: 1e-6},
  {...tiny, arch: 'qwen3', rmsEps: 1e-6},
  {...tiny, arch: 'granite'},
  {...tiny, arch: 'smollm3', nLayer: 4},
  {...tiny, arch: 'olmo2'},
  {...tiny, arch: 'phi3', nHeadKv: 4},
  // longrope: the long factors (both contexts pad to 256, past the original 32) and attn_factor
  {...tiny, arch: 'phi3', nHeadKv: 4, longrope: {originalContext: 32, attnFactor: 1.19}},
  // GELU: inference reads ggml's F16 table, the trainer the exact tanh form
  {...tiny, arch: 'gemma2', slidingWindow: 4, rmsEps: 1e-6, tol: 2e-3},
  {...tiny, arch: 'gemma3', nHeadKv: 1, tied: true, slidingWindow: 4, slidingWindowPattern: 2, rmsEps: 1e-6, tol: 2e-3},
  // experts: the gradient flows through the chosen experts and the router's weights of them
  {...tiny, arch: 'qwen3moe', nExpert: 4, nExpertUsed: 2, nFfExp: 24, rmsEps: 1e-6},
]
/** The trainer adapts every weight an adapter may (src/lib/lora's list). */
const TRAINABLE: ReadonlySet<string> = new Set(ADAPTABLE_ROLES)
const RANK = 2
/** The finite-difference step: large enough that the loss's rounding stays far below the gradients. */
const FD_STEP = 1e-5
const ALPHA = 4

const dir = mkdtempSync(join(tmpdir(), 'runner-lora-grad-'))
after(() => rmSync(dir, {recursive: true, force: true}))

function targetsOf(model: Model): TrainTarget[] {
  return model.plan.tensors
    .filter((t) => TRAINABLE.has(t.role))
    .map((t) => ({name: t.name, role: t.role, layer: t.layer, nIn: t.shape[0]!, nOut: t.shape[1]!}))
}

/** The inference pass's summed NLL of ids with `params` written as an F32 adapter and loaded as --lora. */
async function inferenceNll(path: string, model: Model, targets: TrainTarget[], params: Float64Array, ids: number[]): Promise<number> {
  const adapter = await writeAdapter(model, targets, params)
  const m = await Model.load(path, {lora: [{path: adapter, scale: 1}]})
  try {
    return -(await teacherForcedLogprobs(m, ids, 128)).reduce((a, b) => a + b, 0)
  } finally {
    m.dispose()
  }
}

describe('LoRA gradients against finite differences', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  for (const {tol, ...family} of FAMILIES) {
    test(`${family.arch}${family.longrope ? ' (longrope)' : ''}: every LoRA parameter's gradient, the loss against inference, bitwise across threads`, async (t) => {
      const path = join(dir, `${family.arch}${family.longrope ? '-longrope' : ''}.gguf`)
      await makeTestModel(path, {...family, nCtx: 128, type: 'f32', seed: 4041n, tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
      const model = await Model.load(path)
      const targets = targetsOf(model)
      const trainers = [1, 3].map((threads) => Trainer.create(model, {targets, rank: RANK, alpha: ALPHA, dropout: 0, nCtx: 64, threads}))
      try {
        const [tr, tr3] = trainers as [Trainer, Trainer]
        const rng = new SeededRandom(77n)
        const params = Float64Array.from({length: tr.nParams}, () => (rng.uniform() * 2 - 1) * 0.3)
        for (const x of trainers) x.set('params', params)
        const ids = model.tokenizer.encode(TEXT, {addSpecial: true})
        assert.ok(ids.length > 3 * (model.config.nSwa ?? 0), 'the text reaches past the sliding window')
        const tokens = Int32Array.from(ids)
        const scored = new Uint8Array(ids.length).fill(1)
        scored[0] = 0
        const run = await tr.sample(tokens, scored, {grad: true})
        await tr3.sample(tokens, scored, {grad: true})
        const grads = tr.get('grads')
        assert.deepEqual(tr3.get('grads'), grads, 'the gradients are the same bits with 3 threads')

        const nll = await inferenceNll(path, model, targets, params, ids)
        const perToken = Math.abs(nll - run.loss) / run.scored
        assert.ok(perToken <= (tol ?? 1e-5), `loss ${run.loss} vs inference ${nll}: ${perToken} per token`)

        // Centred differences for every parameter, in double: (L(p + h) - L(p - h)) / 2h.
        const gmax = grads.reduce((m, g) => Math.max(m, Math.abs(g)), 0)
        let worstRel = 0
        let worstAbs = 0
        const probe = Float64Array.from(params)
        for (let i = 0; i < params.length; i++) {
          const fd = await centredDifference(tr, params, probe, i, tokens, scored)
          const err = Math.abs(fd - grads[i]!)
          worstAbs = Math.max(worstAbs, err / gmax)
          // Relative error where the gradient is not lost in the loss's rounding (|g| above 1e-4 of the largest).
          if (Math.abs(grads[i]!) > 1e-4 * gmax) worstRel = Math.max(worstRel, err / Math.abs(grads[i]!))
        }
        t.diagnostic(
          `${params.length} parameters on ${targets.length} weights: worst relative error ${worstRel.toExponential(2)}, ` +
            `worst absolute error ${worstAbs.toExponential(2)} of the largest gradient; loss vs inference ${perToken.toExponential(2)} per token`,
        )
        assert.ok(worstRel < 1e-4, `worst relative error ${worstRel}`)
        assert.ok(worstAbs < 1e-6, `worst absolute error ${worstAbs} of the largest gradient`)
      } finally {
        for (const x of trainers) x.dispose()
        model.dispose()
      }
    })
  }
})

describe('LoRA gradients on a sample longer than the head computes at once', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('stories260K, 150 tokens (the head in chunks of 64): the loss against inference, sampled parameters against finite differences', async (t) => {
    const path = sharedPath('models', 'stories260K.gguf')
    const model = await Model.load(path)
    const targets = targetsOf(model)
    const tr = Trainer.create(model, {targets, rank: RANK, alpha: ALPHA, dropout: 0, nCtx: 256, threads: 2})
    try {
      const rng = new SeededRandom(78n)
      const params = Float64Array.from({length: tr.nParams}, () => (rng.uniform() * 2 - 1) * 0.3)
      tr.set('params', params)
      const ids = model.tokenizer.encode(`${TEXT} She had a dog named Max. `.repeat(6), {addSpecial: true}).slice(0, 150)
      assert.equal(ids.length, 150)
      const tokens = Int32Array.from(ids)
      const scored = new Uint8Array(ids.length).fill(1)
      scored[0] = 0
      for (let i = 60; i < 70; i++) scored[i] = 0 // a masked span across the first chunk's end
      const run = await tr.sample(tokens, scored, {grad: true})
      const grads = tr.get('grads')
      // Every token scored but the masked ones, counted against inference over the same positions.
      const adapted = await Model.load(path, {lora: [{path: await writeAdapter(model, targets, params), scale: 1}]})
      const lps = await teacherForcedLogprobs(adapted, ids).finally(() => adapted.dispose())
      const nll = -lps.reduce((sum, lp, i) => sum + (scored[i + 1] ? lp : 0), 0)
      assert.equal(run.scored, 139)
      assert.ok(Math.abs(nll - run.loss) / run.scored < 1e-5, `loss ${run.loss} vs inference ${nll}`)
      const gmax = grads.reduce((m, g) => Math.max(m, Math.abs(g)), 0)
      let worst = 0
      const probe = Float64Array.from(params)
      // The head's pair (last) and a spread over the others.
      const picks = [
        ...Array.from({length: 30}, (_, k) => tr.nParams - 1 - k * 37),
        ...Array.from({length: 30}, (_, k) => (k * 571) % tr.nParams),
      ]
      for (const i of picks) {
        worst = Math.max(worst, Math.abs((await centredDifference(tr, params, probe, i, tokens, scored)) - grads[i]!) / gmax)
      }
      t.diagnostic(`${picks.length} sampled parameters: worst error ${worst.toExponential(2)} of the largest gradient`)
      assert.ok(worst < 1e-6, `worst error ${worst} of the largest gradient`)
    } finally {
      tr.dispose()
      model.dispose()
    }
  })
})

/** (L(p + h e_i) - L(p - h e_i)) / 2h in double, h = 1e-5; `probe` (a copy of params) is restored. */
async function centredDifference(
  tr: Trainer,
  params: Float64Array,
  probe: Float64Array,
  i: number,
  tokens: Int32Array,
  scored: Uint8Array,
): Promise<number> {
  const loss = async (v: number) => {
    probe[i] = v
    tr.set('params', probe)
    return (await tr.sample(tokens, scored, {grad: false})).loss
  }
  const up = await loss(params[i]! + FD_STEP)
  const down = await loss(params[i]! - FD_STEP)
  probe[i] = params[i]!
  return (up - down) / (2 * FD_STEP)
}

/** The parameters as an F32 adapter file (what train-lora writes). */
async function writeAdapter(model: Model, targets: TrainTarget[], params: Float64Array): Promise<string> {
  let off = 0
  const pairs = targets.map((t) => {
    const a = Float32Array.from(params.subarray(off, (off += RANK * t.nIn)))
    const b = Float32Array.from(params.subarray(off, (off += RANK * t.nOut)))
    return {target: t.name, nIn: t.nIn, nOut: t.nOut, rank: RANK, a, b}
  })
  const adapter = join(dir, `${model.config.architecture}-adapter.gguf`)
  await writeLoraAdapter(adapter, {architecture: model.config.architecture, alpha: ALPHA, pairs})
  return adapter
}
