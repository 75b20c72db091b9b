import type {NativeStatusCode} from './native-status.generated.js'
// From the text area, not util: util's output-path.ts imports this file's ExitCode at load.
import {printable} from './text/index.js'

/**
 * The one table of exit codes (ARCHITECTURE.md) and the base error every module throws.
 * Commands map a RunnerError to its exit code; anything else is a bug and exits 1.
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  invalidModel: 3,
  verificationFailed: 4,
  unsupported: 5,
  backendUnavailable: 6,
  interrupted: 130,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

/**
 * The exit code of every `code` the native addons put on the errors they throw or reject with:
 * every engine status (runner.h RUNNER_STATUS_LIST, through ./native-status.generated.ts, so a status
 * added there fails to compile until it has an exit code here), and the sampler's and the kernel
 * API's argument codes. src/lib/engine/errors.ts engineError() is the one conversion that uses it.
 */
export const NATIVE_EXIT_CODES: Readonly<Record<NativeStatusCode | NativeArgumentCode, ExitCodeValue>> = {
  ENGINE_OK: ExitCode.failure, // never an error: seen on one, it is a bug
  ENGINE_INVALID_ARGUMENT: ExitCode.usage,
  ENGINE_IO: ExitCode.failure,
  ENGINE_BAD_MODEL: ExitCode.invalidModel,
  ENGINE_NO_MEMORY: ExitCode.failure,
  ENGINE_UNSUPPORTED: ExitCode.unsupported,
  ENGINE_CONTEXT_FULL: ExitCode.usage,
  ENGINE_ABORTED: ExitCode.interrupted,
  ENGINE_INTERNAL: ExitCode.failure,
  ENGINE_BUSY: ExitCode.failure,
  ENGINE_DISPOSED: ExitCode.failure,
  ENGINE_KV_EVICTED: ExitCode.unsupported, // a rewind the sliding-window ring cannot serve (--swa-full can)
  SAMPLER_BAD_PARAM: ExitCode.usage,
  SAMPLER_BAD_ARGUMENT: ExitCode.failure,
  SAMPLER_FREED: ExitCode.failure,
  SAMPLER_INTERNAL: ExitCode.failure,
  KERNEL_BAD_ARGUMENT: ExitCode.failure,
  KERNEL_UNSUPPORTED_TYPE: ExitCode.unsupported,
  KERNEL_VARIANT_UNAVAILABLE: ExitCode.unsupported,
  KERNEL_UNSUPPORTED_VARIANT: ExitCode.unsupported,
}

/** Codes the addons' argument checks use besides the engine's statuses (native/addon/args.h, sampler_binding.cc). */
type NativeArgumentCode =
  | 'SAMPLER_BAD_PARAM'
  | 'SAMPLER_BAD_ARGUMENT'
  | 'SAMPLER_FREED'
  | 'SAMPLER_INTERNAL'
  | 'KERNEL_BAD_ARGUMENT'
  | 'KERNEL_UNSUPPORTED_TYPE'
  | 'KERNEL_VARIANT_UNAVAILABLE'
  | 'KERNEL_UNSUPPORTED_VARIANT'

export type NativeErrorCode = keyof typeof NATIVE_EXIT_CODES

export function isNativeErrorCode(code: unknown): code is NativeErrorCode {
  return typeof code === 'string' && Object.hasOwn(NATIVE_EXIT_CODES, code)
}

/** The longest message a RunnerError keeps (the names it embeds are cut far shorter where they are put in). */
const MESSAGE_MAX = 4000

/**
 * The base error every module throws. Its message is printable by construction (util/printable.ts:
 * controls, format characters and separators escaped, at most 4000 characters): messages embed
 * names from model files, and they are printed on terminals, logged and sent to HTTP clients. The
 * sites that embed a name cut and escape it themselves (`quoted`, `printable`); this is the last
 * line of defence for the ones that do not.
 */
export class RunnerError extends Error {
  /** Stable, machine-readable code such as `GGUF_BAD_MAGIC`; scripts and tests match on it. */
  readonly code: string
  readonly exitCode: ExitCodeValue

  constructor(code: string, message: string, exitCode: ExitCodeValue = ExitCode.failure, options?: {cause?: unknown}) {
    super(printable(message, {max: MESSAGE_MAX}), options)
    this.name = 'RunnerError'
    this.code = code
    this.exitCode = exitCode
  }
}

export function exitCodeOf(error: unknown): ExitCodeValue {
  return error instanceof RunnerError ? error.exitCode : ExitCode.failure
}
