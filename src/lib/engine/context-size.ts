/**
 * The one range policy for context sizes (issue #22), the same for run, chat, score, embed and serve,
 * as llama.cpp's: a context size not given is the model's training context, capped (the cap keeps a
 * model trained on 128k positions from allocating a KV cache of several GB by default), so a default
 * never exceeds what the model was trained on; a size given beyond it is the user's choice and runs,
 * with a warning naming both numbers (llama.cpp: "n_ctx_seq (…) > n_ctx_train (…) -- possible
 * training context overflow"). A KV cache larger than the machine's memory is refused by the engine
 * (ENGINE_NO_MEMORY, naming the bytes), before anything is allocated. A model whose rope is scaled
 * (YaRN or linear, declared or overridden: docs/long-context.md) runs without the warning up to the
 * positions its scaling covers, the original context times the factor.
 */
import type {ModelConfig} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'

export const DEFAULT_CONTEXT_CAP = 4096

/** The engine's largest context (positions are int32 and the KV size is checked in size_t; 2^24 keeps both far off). */
export const MAX_CONTEXT_SIZE = 1 << 24

/** The most tokens one forward step takes (Model.createContext's bound; the flags' `max`, so a refusal names the flag). */
export const MAX_BATCH_SIZE = 65536

/** KV positions to allocate when the user gave none. */
export function defaultContextSize(nCtxTrain: number, cap = DEFAULT_CONTEXT_CAP): number {
  return Math.min(nCtxTrain, cap)
}

export interface ContextSizeOptions {
  /** What the caller calls the size, in the refusal (the CLI: its flag; default `nCtx`). */
  readonly name?: string
  /** The default's cap (score's windows: 512, as llama-perplexity's). */
  readonly cap?: number
  /** The warning when a size given exceeds the training context (the CLI prints it on stderr). */
  readonly onWarning?: (message: string) => void
}

/** What a model says about its positions: the training context, and the rope scaling's reach when it has one. */
export type TrainedPositions = number | Pick<ModelConfig, 'nCtxTrain' | 'ropeScaling'>

/** The context size to use: `given`, checked, else the default; a size beyond what the model covers warns. */
export function contextSize(given: number | undefined, trained: TrainedPositions, options: ContextSizeOptions = {}): number {
  const nCtxTrain = typeof trained === 'number' ? trained : trained.nCtxTrain
  if (given === undefined) return defaultContextSize(nCtxTrain, options.cap)
  if (!Number.isInteger(given) || given < 1 || given > MAX_CONTEXT_SIZE)
    throw new RunnerError(
      'CONTEXT_BAD_OPTION',
      `${options.name ?? 'nCtx'} ${given}: must be an integer in [1, ${MAX_CONTEXT_SIZE}]`,
      ExitCode.usage,
    )
  const scaling = typeof trained === 'number' ? undefined : trained.ropeScaling
  const covered = scaling && scaling.nCtxCovered > nCtxTrain ? scaling.nCtxCovered : undefined
  if (covered !== undefined && given > covered)
    options.onWarning?.(
      `context size ${given} > the ${covered} positions the model's ${scaling!.type} rope scaling covers (training context ${nCtxTrain}): possible training context overflow (output past ${covered} tokens may degrade)`,
    )
  else if (covered === undefined && given > nCtxTrain)
    options.onWarning?.(
      `context size ${given} > the model's training context ${nCtxTrain}: possible training context overflow (output past ${nCtxTrain} tokens may degrade)`,
    )
  return given
}
