import {Args, Flags} from '@oclif/core'

import type {RopeOverrides} from '../arch/index.js'
import {MAX_BATCH_SIZE, MAX_CONTEXT_SIZE} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {type LoraSpec, parseLoraSpec} from '../lora/index.js'
import {resolveModelPath} from '../models/index.js'
import {printable} from '../util/index.js'
import {type RopeFlagValues, ropeFlags, ropeFromFlags} from './rope-flags.js'
import {warnLine} from './warning.js'

/**
 * A model path or name, wherever a command takes one: an existing file is itself; otherwise a model
 * in the models folder by name (`runner list`), resolved here, once, so every command that takes a
 * path takes a name too.
 */
const resolveAs = (flag: string) => async (input: string) => resolveModelPath(input, flag)

/** The model file flag of every command that loads one. */
export const modelFlag = {
  model: Flags.string({
    char: 'm',
    description: 'GGUF model file (or any shard of a split model), or the name of a model in the models folder (runner list)',
    required: true,
    helpValue: 'FILE|NAME',
    parse: resolveAs('-m'),
  }),
}

/**
 * run and chat take the model as -m or as their one positional argument (resolved in
 * modelFromFlagOrArg, not at parse time: a -m from RUNNER_MODEL must not be looked up when the
 * command line names the model) (`runner run FILE -p TEXT`, as ollama's `run NAME`). */
export const modelFlagOrArg = {
  model: Flags.string({
    char: 'm',
    description: 'GGUF model file (or any shard of a split model) or a model name (runner list); or give it as the argument',
    helpValue: 'FILE|NAME',
  }),
}

export const modelArg = {
  // ignoreStdin: oclif would otherwise read a piped standard input as this argument (run reads its prompt from there, chat its lines)
  // Resolved in modelFromFlagOrArg, not here: with -m given, the argument is a misplaced prompt to point at -p, not a model to look up.
  model: Args.string({description: 'GGUF model file or model name (the same as -m)', required: false, ignoreStdin: true}),
}

/** A command's model input as an argument (inspect FILE, quantize IN OUT): a path or a model name, as -m takes. */
export function modelInputArg(description: string) {
  return Args.string({description: `${description}; or a model name (runner list)`, required: true, parse: resolveAs('model')})
}

/**
 * The model from -m (resolved as it was parsed) or the argument (resolved here): one of them, once.
 * `run -m M "Once upon a time"` is a prompt where a model goes.
 */
export async function modelFromFlagOrArg(
  flag: string | undefined,
  arg: string | undefined,
  command: string,
  promptFlag?: string,
  flagLabel = '-m',
): Promise<string> {
  if (flag !== undefined && arg !== undefined) {
    const hint = promptFlag ? `; a prompt goes in ${promptFlag} ${JSON.stringify(printable(arg, {max: 60}))}` : ''
    throw new RunnerError(
      'MODEL_TWICE',
      `the model is given by -m (${printable(flag)}), so ${JSON.stringify(printable(arg, {max: 60}))} has no place${hint}`,
      ExitCode.usage,
    )
  }
  if (flag !== undefined) return resolveModelPath(flag, flagLabel)
  if (arg === undefined)
    throw new RunnerError(
      'MODEL_MISSING',
      `no model: \`runner ${command} FILE.gguf${promptFlag ? ` ${promptFlag} TEXT` : ''}\` or \`runner ${command} -m FILE.gguf\``,
      ExitCode.usage,
    )
  return resolveModelPath(arg, 'model')
}

/**
 * llama.cpp's -ngl / --n-gpu-layers (bin/run.js turns -ngl into --n-gpu-layers: oclif has no
 * multi-letter short flags). This build has no GPU backend, so any value but 0 is refused by name.
 */
export const noGpuFlag = {
  'n-gpu-layers': Flags.integer({
    description: "llama.cpp's -ngl: layers on a GPU (default 0). This build has no GPU backend (issue #25), so only 0 is accepted",
    min: 0,
    helpValue: 'N',
  }),
}

export function refuseGpuLayers(n: number | undefined): void {
  if (n !== undefined && n > 0)
    throw new RunnerError(
      'NO_GPU_BACKEND',
      `-ngl/--n-gpu-layers ${n}: this build has no GPU backend (the CUDA backend is issue #25); drop the flag and the model runs on the CPU`,
      ExitCode.backendUnavailable,
    )
}

/**
 * llama.cpp's --swa-full: sliding-window layers keep every position instead of a ring of what their
 * window still reaches (the same logits either way; the ring saves memory but cannot rewind far).
 */
export function swaFullFlag() {
  return {
    'swa-full': Flags.boolean({
      description:
        'sliding-window layers (gemma2/3) keep the whole context instead of a ring of their window: more memory, but any rewind of the cache works (docs/long-context.md)',
    }),
  }
}

/**
 * llama.cpp's --context-shift and --keep (run, serve): a full context drops half of what follows the
 * kept tokens and generation goes on (docs/long-context.md).
 */
export const contextShiftFlags = {
  'context-shift': Flags.boolean({
    description:
      "when the context is full, keep the first --keep prompt tokens, drop half of the rest and go on generating (llama.cpp's --context-shift); refused where it cannot be exact (a sliding-window ring: add --swa-full)",
  }),
  keep: Flags.integer({
    description: "prompt tokens a context shift keeps, after the BOS token (llama.cpp's --keep; -1: the whole prompt) (default: 0)",
    min: -1,
    helpValue: 'N',
    dependsOn: ['context-shift'],
  }),
}

/** The context flags run and chat share, named as llama.cpp names them. */
export const contextFlags = {
  'ctx-size': Flags.integer({
    char: 'c',
    aliases: ['ctx'],
    description:
      "context size in tokens (default: the model's training context, at most 4096; beyond the training context runs with a warning)",
    min: 1,
    max: MAX_CONTEXT_SIZE,
  }),
  'batch-size': Flags.integer({
    char: 'b',
    description: 'tokens per forward step while reading a prompt',
    default: 512,
    min: 1,
    max: MAX_BATCH_SIZE,
  }),
  threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
  'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: 'f16'}),
  ...noGpuFlag,
  ...ropeFlags,
  ...swaFullFlag(),
}

export interface ContextFlagValues extends RopeFlagValues {
  readonly 'ctx-size'?: number
  readonly 'batch-size': number
  readonly threads?: number
  readonly 'kv-type': string
  readonly 'n-gpu-layers'?: number
  readonly 'swa-full'?: boolean
}

/** The context options those flags give (the kv type is one of the flag's options; rope overrides, if any); a -c beyond what the model covers warns. */
export function contextFromFlags(flags: ContextFlagValues): {
  nCtx?: number
  nBatch: number
  threads?: number
  kvType: 'f16' | 'f32'
  rope?: RopeOverrides
  swaFull: boolean
  onWarning: (message: string) => void
} {
  refuseGpuLayers(flags['n-gpu-layers'])
  return {
    rope: ropeFromFlags(flags),
    nCtx: flags['ctx-size'],
    nBatch: flags['batch-size'],
    threads: flags.threads,
    kvType: flags['kv-type'] as 'f16' | 'f32',
    swaFull: flags['swa-full'] === true,
    onWarning: warnLine,
  }
}

/** LoRA adapters (llama.cpp's --lora; --lora-scaled FILE SCALE is written FILE:SCALE here). */
export const loraFlag = {
  lora: Flags.string({
    description:
      "LoRA adapter in llama.cpp's GGUF format, optionally with a scale (default 1); repeatable, applied in order (docs/lora.md)",
    multiple: true,
    helpValue: 'FILE[:SCALE]',
  }),
}

export function loraFromFlags(values: readonly string[] | undefined, flag = '--lora'): LoraSpec[] {
  return (values ?? []).map((v) => parseLoraSpec(v, flag))
}
