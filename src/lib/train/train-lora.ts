/**
 * `runner train-lora` as a library call: load the base, read the data, initialise the pairs as PEFT
 * does (a Kaiming-uniform, b zero, from --seed), then optimizer steps of --grad-accum samples each
 * (AdamW, warm-up and a cosine or linear schedule, global-norm clipping), validation perplexity every
 * --eval-every steps, checkpoints, and the adapter in llama.cpp's GGUF LoRA format. Ctrl+C saves a
 * checkpoint of the last finished step and exits 130. The same settings give the same adapter bytes,
 * for any --threads (the engine's gradients are the same bits for any thread count).
 */
import {basename, resolve} from 'node:path'

import {type CheckpointState, checkResumable, type CurvePoint, readCheckpoint, type ValidationPoint, writeCheckpoint} from './checkpoint.js'
import {readTrainingData, type TrainingData, type TrainingSample} from './data.js'
import {learningRate, type Schedule} from './schedule.js'
import {parseTargets} from './targets.js'
import {Model, type TrainTarget, Trainer} from '../engine/index.js'
import type {SignaturePolicy} from '../signing/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {GgufValueType} from '../gguf/index.js'
import {type LoraPairData, writeLoraAdapter} from '../lora/index.js'
import {checkOutputPath, deriveSeed, SeededRandom, sha256File, sha256Text} from '../util/index.js'

export interface TrainLoraOptions {
  readonly modelPath: string
  /** Check the base model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
  readonly dataPath: string
  readonly outPath: string
  readonly format?: string
  readonly valPath?: string
  readonly targets: string
  readonly rank: number
  readonly alpha: number
  readonly dropout: number
  readonly ctx: number
  readonly lr: number
  readonly schedule: Schedule
  readonly warmup: number
  /** Optimizer steps; undefined: --epochs passes over the data. */
  readonly steps?: number
  readonly epochs: number
  readonly gradAccum: number
  readonly weightDecay: number
  readonly beta1: number
  readonly beta2: number
  readonly eps: number
  readonly maxGradNorm: number
  readonly optimizer: 'adamw' | 'sgd'
  readonly seed: bigint
  readonly threads: number
  readonly evalEvery: number
  readonly checkpointEvery: number
  /** Where checkpoints go (default: the output with .ckpt). */
  readonly checkpointPath?: string
  readonly resumePath?: string
  /** Replace an existing output (without it, one is refused before any training). */
  readonly force?: boolean
  readonly signal?: AbortSignal
  readonly onStep?: (p: StepReport) => void
}

export interface StepReport extends CurvePoint {
  readonly total: number
  readonly etaSeconds: number
  readonly validation?: ValidationPoint
}

export interface TrainLoraResult {
  readonly adapter: string
  readonly checkpoint?: string
  readonly steps: number
  readonly params: number
  readonly targets: number
  readonly data: {readonly samples: number; readonly tokens: number; readonly scoredTokens: number; readonly truncated: number}
  readonly curve: readonly CurvePoint[]
  readonly validation: readonly ValidationPoint[]
  readonly tokensPerSecond: number
  readonly seconds: number
}

/** The settings that decide the adapter's bytes: a checkpoint resumes only under the same ones. */
function runSettings(o: TrainLoraOptions, data: TrainingData, dataSha: string, targets: readonly TrainTarget[], total: number) {
  return {
    base: basename(o.modelPath),
    data: dataSha,
    format: data.format,
    targets: targets.map((t) => t.name),
    rank: o.rank,
    alpha: o.alpha,
    dropout: o.dropout,
    ctx: o.ctx,
    lr: o.lr,
    schedule: o.schedule,
    warmup: o.warmup,
    steps: total,
    gradAccum: o.gradAccum,
    weightDecay: o.weightDecay,
    betas: [o.beta1, o.beta2],
    eps: o.eps,
    maxGradNorm: o.maxGradNorm,
    optimizer: o.optimizer,
    seed: o.seed.toString(),
  }
}

/** PEFT's initialisation: lora_A Kaiming-uniform (a = sqrt(5): bound 1 / sqrt(n_in)), lora_B zero. */
function initialParams(targets: readonly TrainTarget[], rank: number, seed: bigint): Float64Array {
  const size = targets.reduce((n, t) => n + rank * (t.nIn + t.nOut), 0)
  const p = new Float64Array(size)
  let off = 0
  for (const t of targets) {
    const rng = new SeededRandom(deriveSeed(seed, `${t.name}.lora_a`))
    const bound = 1 / Math.sqrt(t.nIn)
    for (let i = 0; i < rank * t.nIn; i++) p[off + i] = (rng.uniform() * 2 - 1) * bound
    off += rank * (t.nIn + t.nOut)
  }
  return p
}

/** The sample at position `pos` of the run: epoch e visits the samples in a permutation seeded by (seed, e). */
function sampleAt(samples: readonly TrainingSample[], seed: bigint, pos: number, orders: Map<number, number[]>): TrainingSample {
  const epoch = Math.floor(pos / samples.length)
  let order = orders.get(epoch)
  if (!order) {
    const rng = new SeededRandom(deriveSeed(seed, `epoch ${epoch}`))
    order = samples.map((_, i) => i)
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rng.uniform() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    orders.clear()
    orders.set(epoch, order)
  }
  return samples[order[pos % samples.length]!]!
}

async function evaluate(trainer: Trainer, data: TrainingData, signal?: AbortSignal): Promise<{loss: number; ppl: number}> {
  let loss = 0
  let scored = 0
  for (const s of data.samples) {
    const r = await trainer.sample(s.tokens, s.scored, {grad: false, signal})
    loss += r.loss
    scored += r.scored
  }
  return {loss: loss / scored, ppl: Math.exp(loss / scored)}
}

function adapterPairs(targets: readonly TrainTarget[], rank: number, p: Float64Array): LoraPairData[] {
  let off = 0
  return targets.map((t) => {
    const a = Float32Array.from(p.subarray(off, (off += rank * t.nIn)))
    const b = Float32Array.from(p.subarray(off, (off += rank * t.nOut)))
    return {target: t.name, nIn: t.nIn, nOut: t.nOut, rank, a, b}
  })
}

export async function trainLora(o: TrainLoraOptions): Promise<TrainLoraResult> {
  // Refused now, not after the training: an hour of work must not end on an existing file.
  await checkOutputPath(resolve(o.outPath), {replace: Boolean(o.force)})
  const model = await Model.load(o.modelPath, {signal: o.signal, ...(o.signature ? {signature: o.signature} : {})})
  try {
    const targets = parseTargets(o.targets, model)
    const data = await readTrainingData(o.dataPath, model, {format: o.format, ctx: o.ctx})
    const val = o.valPath === undefined ? undefined : await readTrainingData(o.valPath, model, {format: o.format, ctx: o.ctx})
    const dataSha = sha256Text(data.samples.map((s) => `${s.tokens.join(',')}|${s.scored.join('')}`).join('\n'))
    const total = o.steps ?? Math.max(1, Math.ceil((o.epochs * data.samples.length) / o.gradAccum))
    const settings = runSettings(o, data, dataSha, targets, total)
    const trainer = Trainer.create(model, {targets, rank: o.rank, alpha: o.alpha, dropout: o.dropout, nCtx: o.ctx, threads: o.threads})
    try {
      return await run(o, model, trainer, targets, data, val, settings, total)
    } finally {
      trainer.dispose()
    }
  } finally {
    model.dispose()
  }
}

async function run(
  o: TrainLoraOptions,
  model: Model,
  trainer: Trainer,
  targets: readonly TrainTarget[],
  data: TrainingData,
  val: TrainingData | undefined,
  settings: Record<string, unknown>,
  total: number,
): Promise<TrainLoraResult> {
  const checkpointPath = o.checkpointPath ?? `${o.outPath.replace(/\.gguf$/i, '')}.ckpt`
  let curve: CurvePoint[] = []
  let validation: ValidationPoint[] = []
  let start = 0
  if (o.resumePath !== undefined) {
    const ck = await readCheckpoint(o.resumePath)
    checkResumable(o.resumePath, ck.settings, settings)
    trainer.set('params', ck.params)
    trainer.set('moment1', ck.moment1)
    trainer.set('moment2', ck.moment2)
    trainer.steps = ck.steps
    start = ck.steps
    curve = [...ck.curve]
    validation = [...ck.validation]
  } else {
    trainer.set('params', initialParams(targets, o.rank, o.seed))
    // Step 0: the base's own validation loss (b starts at zero, so the adapter adds nothing yet).
    if (val) validation.push({step: 0, ...(await evaluate(trainer, val, o.signal))})
  }
  const save = async (steps: number) => {
    const state: CheckpointState = {
      settings,
      steps,
      curve,
      validation,
      params: trainer.get('params'),
      moment1: trainer.get('moment1'),
      moment2: trainer.get('moment2'),
    }
    await writeCheckpoint(checkpointPath, state)
  }
  /** Ctrl+C: the last finished step goes to the checkpoint, and the error says how to continue. */
  const stopped = async (error: unknown, done: number): Promise<unknown> => {
    if (!o.signal?.aborted) return error
    await save(done)
    return new RunnerError(
      'INTERRUPTED',
      `interrupted at step ${done + 1} of ${total}: saved the last finished step (${done}) to ${checkpointPath}; continue with --resume ${checkpointPath}`,
      ExitCode.interrupted,
    )
  }
  const orders = new Map<number, number[]>()
  const t0 = performance.now()
  let trainedTokens = 0
  for (let step = start; step < total; step++) {
    const stepStart = performance.now()
    let loss = 0
    let scored = 0
    let tokens = 0
    try {
      for (let micro = 0; micro < o.gradAccum; micro++) {
        const pos = step * o.gradAccum + micro
        const s = sampleAt(data.samples, o.seed, pos, orders)
        const r = await trainer.sample(s.tokens, s.scored, {grad: true, seed: deriveSeed(o.seed, `dropout ${pos}`), signal: o.signal})
        loss += r.loss
        scored += r.scored
        tokens += s.tokens.length
      }
    } catch (error) {
      throw await stopped(error, step)
    }
    const lr = learningRate(step, {lr: o.lr, warmup: o.warmup, total, schedule: o.schedule})
    const gradNorm = trainer.optimize({
      kind: o.optimizer,
      lr,
      beta1: o.beta1,
      beta2: o.beta2,
      eps: o.eps,
      weightDecay: o.weightDecay,
      gradScale: 1 / Math.max(1, scored),
      maxGradNorm: o.maxGradNorm,
    })
    trainedTokens += tokens
    const seconds = (performance.now() - stepStart) / 1000
    const point: CurvePoint = {
      step: step + 1,
      loss: loss / Math.max(1, scored),
      lr,
      gradNorm,
      tokensPerSecond: Math.round(tokens / seconds),
    }
    curve.push(point)
    let v: ValidationPoint | undefined
    if (val && ((step + 1) % o.evalEvery === 0 || step + 1 === total)) {
      try {
        v = {step: step + 1, ...(await evaluate(trainer, val, o.signal))}
      } catch (error) {
        throw await stopped(error, step + 1)
      }
      validation.push(v)
    }
    const elapsed = (performance.now() - t0) / 1000
    o.onStep?.({...point, total, etaSeconds: ((total - step - 1) * elapsed) / (step + 1 - start), ...(v ? {validation: v} : {})})
    if (o.checkpointEvery > 0 && (step + 1) % o.checkpointEvery === 0 && step + 1 < total) await save(step + 1)
  }
  const seconds = (performance.now() - t0) / 1000
  const base = await sha256File(model.gguf.path)
  const last = curve.at(-1)
  await writeLoraAdapter(
    o.outPath,
    {
      architecture: model.config.architecture,
      alpha: o.alpha,
      // Named after the base, not the output path: the same run gives the same bytes wherever it is written.
      name: `${basename(o.modelPath).replace(/\.gguf$/i, '')} LoRA`,
      pairs: adapterPairs(targets, o.rank, trainer.get('params')),
      extra: [
        {key: 'runner.train.base_sha256', type: GgufValueType.STRING, value: base},
        {key: 'runner.train.data_sha256', type: GgufValueType.STRING, value: String(settings.data)},
        {key: 'runner.train.steps', type: GgufValueType.UINT32, value: total},
        {key: 'runner.train.seed', type: GgufValueType.STRING, value: o.seed.toString()},
        {key: 'runner.train.settings', type: GgufValueType.STRING, value: JSON.stringify(settings)},
        ...(last ? [{key: 'runner.train.final_loss', type: GgufValueType.FLOAT32, value: last.loss}] : []),
      ],
    },
    {exclusive: !o.force, inputs: [o.modelPath]},
  )
  return {
    adapter: o.outPath,
    steps: total,
    params: trainer.nParams,
    targets: targets.length,
    data: {samples: data.samples.length, tokens: data.tokens, scoredTokens: data.scoredTokens, truncated: data.truncated},
    curve,
    validation,
    tokensPerSecond: Math.round(trainedTokens / Math.max(seconds, 1e-9)),
    seconds,
  }
}
