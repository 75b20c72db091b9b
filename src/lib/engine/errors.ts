import {isNativeErrorCode, NATIVE_EXIT_CODES, RunnerError} from '../errors.js'

/**
 * An error from the addon as a RunnerError with its code, message and the exit code of
 * src/lib/errors.ts NATIVE_EXIT_CODES; anything else (already a RunnerError, or not from the
 * addon) is returned as it is.
 */
export function engineError(error: unknown): unknown {
  if (error instanceof RunnerError || !(error instanceof Error)) return error
  const code: unknown = Reflect.get(error, 'code')
  if (!isNativeErrorCode(code)) return error
  return new RunnerError(code, error.message, NATIVE_EXIT_CODES[code], {cause: error})
}
