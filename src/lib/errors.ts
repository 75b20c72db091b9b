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

export class RunnerError extends Error {
  /** Stable, machine-readable code such as `GGUF_BAD_MAGIC`; scripts and tests match on it. */
  readonly code: string
  readonly exitCode: ExitCodeValue

  constructor(code: string, message: string, exitCode: ExitCodeValue = ExitCode.failure, options?: {cause?: unknown}) {
    super(message, options)
    this.name = 'RunnerError'
    this.code = code
    this.exitCode = exitCode
  }
}

export function exitCodeOf(error: unknown): ExitCodeValue {
  return error instanceof RunnerError ? error.exitCode : ExitCode.failure
}
