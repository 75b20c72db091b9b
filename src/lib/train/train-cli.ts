/**
 * What `runner train-lora` does around trainLora: its flags (PEFT's and transformers' names where
 * they have one), the options they give (checked by name), one progress line, and the summary.
 */
import {Flags} from '@oclif/core'

import {modelFlag, type SignatureFlagValues, signatureFlags, signaturePolicyFromFlags} from '../cli/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {defaultThreads, formatRows, printable} from '../util/index.js'
import {SCHEDULES, type Schedule} from './schedule.js'
import {DEFAULT_TARGETS} from './targets.js'
import type {StepReport, TrainLoraOptions, TrainLoraResult} from './train-lora.js'

const num = (description: string, def: number) => Flags.string({description: `${description} (default ${def})`, helpValue: 'X'})

export const trainFlags = {
  ...modelFlag,
  data: Flags.string({
    char: 'd',
    description: 'training data: plain text, or chat JSONL ({"messages": [...]} per line)',
    required: true,
    helpValue: 'FILE',
  }),
  out: Flags.string({
    char: 'o',
    description: "the adapter to write (llama.cpp's GGUF LoRA format)",
    required: true,
    helpValue: 'ADAPTER.gguf',
  }),
  format: Flags.string({description: 'data format (default: chat for .jsonl, else text)', options: ['text', 'chat']}),
  val: Flags.string({description: 'validation data (same format): its perplexity every --eval-every steps', helpValue: 'FILE'}),
  targets: Flags.string({description: `weights that get a pair: llama.cpp or PEFT names (default ${DEFAULT_TARGETS})`, helpValue: 'LIST'}),
  rank: Flags.integer({char: 'r', description: "LoRA rank (PEFT's r)", default: 8, min: 1, max: 512}),
  alpha: num('lora_alpha: the deltas are scaled by alpha / rank', 16),
  dropout: num("lora_dropout on each pair's input", 0),
  'ctx-size': Flags.integer({
    char: 'c',
    aliases: ['ctx'],
    description: 'tokens per sample (text: window length; chat: longer conversations are cut)',
    default: 256,
    min: 2,
  }),
  lr: num('peak learning rate', 2e-4),
  schedule: Flags.string({description: 'learning-rate schedule after warm-up', options: [...SCHEDULES], default: 'cosine'}),
  warmup: Flags.integer({description: 'warm-up steps (linear from 0)', default: 0, min: 0}),
  steps: Flags.integer({description: 'optimizer steps (default: --epochs over the data)', min: 1}),
  epochs: num('passes over the data when --steps is not given', 1),
  'grad-accum': Flags.integer({description: 'samples per optimizer step (gradient accumulation)', default: 1, min: 1}),
  'weight-decay': num("AdamW's decoupled weight decay", 0),
  'max-grad-norm': num('clip the gradient to this global norm (0: no clipping)', 1),
  optimizer: Flags.string({description: 'adamw (betas 0.9, 0.999, eps 1e-8) or plain sgd', options: ['adamw', 'sgd'], default: 'adamw'}),
  seed: Flags.string({char: 's', description: 'initialisation, data order and dropout (default 42)', helpValue: 'N'}),
  threads: Flags.integer({
    char: 't',
    description: 'threads (default: physical cores); the adapter is the same for any count',
    min: 1,
    max: 256,
  }),
  'eval-every': Flags.integer({description: 'steps between validation passes (and after the last)', default: 50, min: 1}),
  'checkpoint-every': Flags.integer({description: 'steps between checkpoints (0: only on Ctrl+C)', default: 0, min: 0}),
  checkpoint: Flags.string({description: 'checkpoint file (default: the output with .ckpt)', helpValue: 'FILE'}),
  resume: Flags.string({description: 'continue from a checkpoint, bit for bit (same settings)', helpValue: 'FILE'}),
  force: Flags.boolean({description: 'replace the output if it exists (without it, an existing file is refused before training)'}),
  json: Flags.boolean({description: 'print one JSON summary (the loss and validation curves included) instead of progress'}),
  ...signatureFlags,
}

type TrainFlagValues = {[K in keyof typeof trainFlags]?: unknown} & {model: string; data: string; out: string} & SignatureFlagValues

function decimal(flag: string, text: unknown, def: number, check: (v: number) => boolean, range: string): number {
  if (text === undefined) return def
  const v = Number(text)
  if (typeof text !== 'string' || text.trim() === '' || !Number.isFinite(v) || !check(v))
    throw new RunnerError('TRAIN_BAD_OPTION', `--${flag} ${printable(String(text))} must be ${range}`, ExitCode.usage)
  return v
}

export function trainOptions(f: TrainFlagValues, signal: AbortSignal): Omit<TrainLoraOptions, 'onStep'> {
  const seedText = f.seed === undefined ? '42' : String(f.seed)
  if (!/^\d{1,20}$/.test(seedText) || BigInt(seedText) >= 1n << 64n)
    throw new RunnerError('TRAIN_BAD_OPTION', `--seed ${printable(seedText)} must be an integer from 0 to 2^64 - 1`, ExitCode.usage)
  const dec = (flag: keyof typeof trainFlags, def: number, check: (v: number) => boolean, range: string) =>
    decimal(flag, f[flag], def, check, range)
  return {
    modelPath: f.model,
    dataPath: f.data,
    outPath: f.out,
    format: f.format as string | undefined,
    valPath: f.val as string | undefined,
    targets: (f.targets as string | undefined) ?? DEFAULT_TARGETS,
    rank: f.rank as number,
    alpha: dec('alpha', 16, (v) => v > 0, 'a number above 0'),
    dropout: dec('dropout', 0, (v) => v >= 0 && v < 1, 'in [0, 1)'),
    ctx: f['ctx-size'] as number,
    lr: dec('lr', 2e-4, (v) => v > 0 && v < 10, 'a number above 0 and below 10'),
    schedule: f.schedule as Schedule,
    warmup: f.warmup as number,
    steps: f.steps as number | undefined,
    epochs: dec('epochs', 1, (v) => v > 0 && v <= 1e6, 'a number above 0'),
    gradAccum: f['grad-accum'] as number,
    weightDecay: dec('weight-decay', 0, (v) => v >= 0 && v < 1, 'in [0, 1)'),
    maxGradNorm: dec('max-grad-norm', 1, (v) => v >= 0, 'a number of at least 0'),
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    optimizer: f.optimizer as 'adamw' | 'sgd',
    seed: BigInt(seedText),
    threads: (f.threads as number | undefined) ?? defaultThreads(),
    evalEvery: f['eval-every'] as number,
    checkpointEvery: f['checkpoint-every'] as number,
    checkpointPath: f.checkpoint as string | undefined,
    resumePath: f.resume as string | undefined,
    force: Boolean(f.force),
    signature: signaturePolicyFromFlags(f),
    signal,
  }
}

const clock = (s: number) =>
  s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`

/** One line per step on a terminal (rewritten), or every tenth step and validations otherwise. */
export function trainProgress(enabled: boolean): ((p: StepReport) => void) | undefined {
  if (!enabled) return undefined
  const tty = process.stderr.isTTY
  return (p) => {
    const v = p.validation ? ` · val loss ${p.validation.loss.toFixed(4)} ppl ${p.validation.ppl.toFixed(3)}` : ''
    const line = `step ${p.step}/${p.total} · loss ${p.loss.toFixed(4)} · lr ${p.lr.toExponential(2)} · ${p.tokensPerSecond} tok/s · ETA ${clock(p.etaSeconds)}${v}`
    if (tty) process.stderr.write(`\r\x1b[K${line}${p.step === p.total || v ? '\n' : ''}`)
    else if (p.step % 10 === 0 || p.step === p.total || v) process.stderr.write(`${line}\n`)
  }
}

export function formatTrainSummary(r: TrainLoraResult): string {
  const first = r.curve[0]
  const last = r.curve.at(-1)
  const val = r.validation.at(-1)
  const before = r.validation.find((v) => v.step === 0)
  return formatRows([
    ['adapter', `${printable(r.adapter)} (${r.targets} weights, ${r.params} parameters)`],
    [
      'data',
      `${r.data.samples} samples, ${r.data.tokens} tokens, ${r.data.scoredTokens} scored${r.data.truncated ? `, ${r.data.truncated} cut to --ctx` : ''}`,
    ],
    ['loss', first && last ? `${first.loss.toFixed(4)} -> ${last.loss.toFixed(4)} over ${r.steps} steps` : '-'],
    ...(val
      ? ([
          [
            'validation',
            `loss ${val.loss.toFixed(4)}, perplexity ${val.ppl.toFixed(3)}${before ? ` (base ${before.ppl.toFixed(3)})` : ''}`,
          ],
        ] as Array<[string, string]>)
      : []),
    ['speed', `${r.tokensPerSecond} tokens/s (${r.seconds.toFixed(1)} s)`],
  ])
}
