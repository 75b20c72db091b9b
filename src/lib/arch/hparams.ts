import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'

/** Ceilings far above real models, so a hostile header cannot size an allocation. */
export const HPARAM_LIMITS = {
  nEmbd: 65_536,
  nLayer: 1024,
  nHead: 1024,
  headDim: 1024,
  nFf: 1 << 20,
  nCtx: 1 << 24,
  nVocab: 1 << 24,
  /** llama.cpp's LLAMA_MAX_EXPERTS (and runner.h's RUNNER_MAX_EXPERTS). */
  nExpert: 1024,
} as const

/** Refuse a model by name (default exit: invalid model). */
export function bad(code: string, message: string, exit: ExitCodeValue = ExitCode.invalidModel): never {
  throw new RunnerError(code, message, exit)
}
