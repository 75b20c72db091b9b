import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'

/** Exit code for each engine status code (native/addon/engine_binding.cc StatusCode). */
const EXIT_BY_CODE: Readonly<Record<string, ExitCodeValue>> = {
  ENGINE_INVALID_ARGUMENT: ExitCode.usage,
  ENGINE_IO: ExitCode.failure,
  ENGINE_BAD_MODEL: ExitCode.invalidModel,
  ENGINE_NO_MEMORY: ExitCode.failure,
  ENGINE_UNSUPPORTED: ExitCode.unsupported,
  ENGINE_CONTEXT_FULL: ExitCode.usage,
  ENGINE_ABORTED: ExitCode.interrupted,
}

/** A rejection from the addon as a RunnerError with the engine's code and message. */
export function engineError(error: unknown): unknown {
  if (error instanceof RunnerError) return error
  const code = (error as {code?: unknown})?.code
  if (typeof code === 'string' && code in EXIT_BY_CODE) {
    return new RunnerError(code, (error as Error).message, EXIT_BY_CODE[code], {cause: error})
  }
  return error
}
