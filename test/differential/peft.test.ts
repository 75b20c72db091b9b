/**
 * PyTorch + transformers + PEFT as the reference trainer (test/reference/peft_lora.py): the same base
 * (transformers reads the GGUF and dequantizes it; both run in float64), the same LoraConfig (rank,
 * alpha, targets) and the same initial lora_A / lora_B, then the loss of a sample and every LoRA
 * gradient must agree, and so must the adapter after three SGD steps and after three AdamW steps
 * (torch.optim's updates). The other direction: an adapter PEFT trained and saved, converted by
 * llama.cpp's own convert_lora_to_gguf.py (from the llama.cpp source bundled with node-llama-cpp),
 * loads in runner and gives transformers + PEFT's log-probabilities. Skips, saying why, where the Python packages are missing (.ci/run installs
 * them into .venv-reference; RUNNER_REFERENCE_PYTHON names another interpreter).
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {Model, Trainer, type TrainTarget} from '../../src/lib/engine/index.js'
import {SeededRandom} from '../../src/lib/util/random.js'
import {teacherForcedLogprobs} from '../helpers/logprobs.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'

const PYTHON = process.env.RUNNER_REFERENCE_PYTHON ?? join(REPO_ROOT, '.venv-reference', 'bin', 'python')
const SCRIPT = join(REPO_ROOT, 'test', 'reference', 'peft_lora.py')

function skipReason(): string | false {
  if (!hasShared()) return NO_SHARED_REASON
  if (!existsSync(PYTHON)) return `no reference Python at ${PYTHON} (.ci/run creates it: torch, transformers, peft)`
  const r = spawnSync(PYTHON, ['-c', 'import torch, transformers, peft, gguf'], {encoding: 'utf8'})
  return r.status === 0 ? false : `torch, transformers, peft or gguf is missing in ${PYTHON}: ${r.stderr.trim().split('\n').at(-1)}`
}

const SKIP = skipReason()
const TEXT = 'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park.'
const RANK = 4
const ALPHA = 8
const ROLES = new Set(['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'])

interface Reference {
  loss: number
  scored: number
  grads: number[]
  /** The parameters after each of the job's optimizer runs. */
  after: number[][]
}

function reference(job: object): Reference {
  const r = spawnSync(PYTHON, [SCRIPT], {input: JSON.stringify(job), encoding: 'utf8', maxBuffer: 256 << 20, timeout: 300_000})
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as Reference
}

/** Largest |x - y| relative to the largest |y|. */
function relDiff(x: ArrayLike<number>, y: ArrayLike<number>): number {
  assert.equal(x.length, y.length)
  let d = 0
  let m = 0
  for (let i = 0; i < x.length; i++) {
    d = Math.max(d, Math.abs(x[i]! - y[i]!))
    m = Math.max(m, Math.abs(y[i]!))
  }
  return d / m
}

describe('LoRA training against PyTorch + PEFT', {skip: SKIP}, () => {
  test('stories260K: the loss, every gradient, and the adapter after SGD and AdamW steps', async (t) => {
    const path = sharedPath('models', 'stories260K.gguf')
    const model = await Model.load(path)
    try {
      const targets: TrainTarget[] = model.plan.tensors
        .filter((x) => ROLES.has(x.role))
        .map((x) => ({name: x.name, role: x.role, layer: x.layer, nIn: x.shape[0]!, nOut: x.shape[1]!}))
      const ids = model.tokenizer.encode(TEXT, {addSpecial: true})
      const scored = new Uint8Array(ids.length).fill(1)
      scored[0] = 0
      scored[3] = 0 // a masked target, as chat data has
      const trainer = Trainer.create(model, {targets, rank: RANK, alpha: ALPHA, dropout: 0, nCtx: 128, threads: 2})
      try {
        const rng = new SeededRandom(123n)
        const params = Float64Array.from({length: trainer.nParams}, () => (rng.uniform() * 2 - 1) * 0.2)
        const job = {gguf: path, tokens: ids, scored: [...scored], rank: RANK, alpha: ALPHA, targets, params: [...params]}
        const tokens = Int32Array.from(ids)

        trainer.set('params', params)
        const ours = await trainer.sample(tokens, scored, {grad: true})
        const runs = [
          {kind: 'sgd' as const, lr: 0.05, steps: 3, weightDecay: 0},
          {kind: 'adamw' as const, lr: 1e-2, steps: 3, weightDecay: 0.01},
        ]
        const theirs = reference({...job, optimizers: runs})
        assert.equal(ours.scored, theirs.scored)
        const lossDiff = Math.abs(ours.loss - theirs.loss) / theirs.loss
        const gradDiff = relDiff(trainer.get('grads'), theirs.grads)
        trainer.optimize({kind: 'sgd', lr: 0, beta1: 0, beta2: 0, eps: 1, weightDecay: 0, gradScale: 1, maxGradNorm: 0}) // zero the gradients

        const steps = async (i: number) => {
          const {kind, lr, weightDecay} = runs[i]!
          trainer.set('params', params)
          trainer.set('moment1', new Float64Array(trainer.nParams))
          trainer.set('moment2', new Float64Array(trainer.nParams))
          trainer.steps = 0
          for (let s = 0; s < runs[i]!.steps; s++) {
            const r = await trainer.sample(tokens, scored, {grad: true})
            trainer.optimize({kind, lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay, gradScale: 1 / r.scored, maxGradNorm: 0})
          }
          return {moved: relDiff(trainer.get('params'), params), diff: relDiff(trainer.get('params'), theirs.after[i]!)}
        }
        const sgd = await steps(0)
        const adamw = await steps(1)
        t.diagnostic(
          `${trainer.nParams} parameters on ${targets.length} weights: loss ${ours.loss.toFixed(9)} vs ${theirs.loss.toFixed(9)} (relative ${lossDiff.toExponential(2)}), ` +
            `gradients ${gradDiff.toExponential(2)} of the largest, after 3 SGD steps ${sgd.diff.toExponential(2)} (moved ${sgd.moved.toExponential(2)}), ` +
            `after 3 AdamW steps ${adamw.diff.toExponential(2)} (moved ${adamw.moved.toExponential(2)})`,
        )
        assert.ok(lossDiff < 1e-6, `loss ${ours.loss} vs ${theirs.loss}`)
        assert.ok(gradDiff < 1e-5, `gradients differ by ${gradDiff} of the largest`)
        assert.ok(sgd.moved > 1e-3 && adamw.moved > 1e-3, 'the steps move the parameters')
        assert.ok(sgd.diff < 1e-5, `after SGD: ${sgd.diff}`)
        assert.ok(adamw.diff < 1e-5, `after AdamW: ${adamw.diff}`)
      } finally {
        trainer.dispose()
      }
    } finally {
      model.dispose()
    }
  })
})

const BUNDLE = join(REPO_ROOT, 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle')

describe(
  "a PEFT adapter converted by llama.cpp's convert_lora_to_gguf.py",
  {skip: SKIP || (existsSync(BUNDLE) ? false : `no llama.cpp source bundle at ${BUNDLE}`)},
  () => {
    const work = mkdtempSync(join(tmpdir(), 'runner-peft-export-'))
    after(() => rmSync(work, {recursive: true, force: true}))

    test('loads in runner and gives the log-probabilities transformers + PEFT give', async (t) => {
      const src = join(work, 'llama.cpp')
      const clone = spawnSync('git', ['clone', '-q', BUNDLE, src], {encoding: 'utf8'})
      assert.equal(clone.status, 0, clone.stderr)
      const path = sharedPath('models', 'stories260K.gguf')
      const model = await Model.load(path)
      const evalIds = model.tokenizer.encode('The little dog ran to the park and played with a big red ball.', {addSpecial: true})
      const job = {train: model.tokenizer.encode(TEXT, {addSpecial: true}), eval: evalIds}
      model.dispose()
      const r = spawnSync(PYTHON, [join(REPO_ROOT, 'test', 'reference', 'peft_export.py'), path, work, src], {
        input: JSON.stringify(job),
        encoding: 'utf8',
        timeout: 300_000,
      })
      assert.equal(r.status, 0, r.stderr)
      const theirs = JSON.parse(r.stdout) as {adapter: string; logprobs: number[]}
      const adapted = await Model.load(path, {lora: [{path: theirs.adapter, scale: 1}]})
      const plain = await Model.load(path)
      try {
        const logprobs = (m: Model) => teacherForcedLogprobs(m, evalIds, 128)
        const ours = await logprobs(adapted)
        const base = await logprobs(plain)
        const diff = ours.reduce((m, v, i) => Math.max(m, Math.abs(v - theirs.logprobs[i]!)), 0)
        const moved = base.reduce((m, v, i) => Math.max(m, Math.abs(v - theirs.logprobs[i]!)), 0)
        t.diagnostic(
          `${adapted.adapters[0]!.pairs.length} pairs: max |Δ logprob| ${diff.toExponential(2)} vs transformers + PEFT (the adapter moves them by ${moved.toFixed(3)})`,
        )
        assert.ok(moved > 0.05, 'the adapter changes the log-probabilities')
        assert.ok(diff < 1e-4, `runner with the converted adapter vs transformers + PEFT: ${diff}`)
      } finally {
        adapted.dispose()
        plain.dispose()
      }
    })
  },
)
