import {ExitCode, RunnerError} from '../errors.js'

/** A bundle, key or model file that fails a check: the model is not loaded (exit 3; serve: HTTP 409). */
export const SIGNATURE_REFUSED = 'MODEL_SIGNATURE_REFUSED'
/** A bundle of a kind runner does not check (certificate, keyless, transparency log): refused, never passed. */
export const SIGNATURE_UNSUPPORTED = 'MODEL_SIGNATURE_UNSUPPORTED'
/** --require-signed-model with no signature to check. */
export const SIGNATURE_REQUIRED = 'MODEL_SIGNATURE_REQUIRED'

/** Every refusal names the field (or file) it is about first: "<field>: <why>". */
export function refused(field: string, why: string, cause?: unknown): RunnerError {
  return new RunnerError(SIGNATURE_REFUSED, `model signature refused: ${field}: ${why}`, ExitCode.invalidModel, {cause})
}

export function unsupported(field: string, why: string): RunnerError {
  return new RunnerError(SIGNATURE_UNSUPPORTED, `model signature refused: ${field}: ${why}`, ExitCode.invalidModel)
}

/** True for the errors of this module that refuse a model (serve maps them to HTTP 409 model_signature_refused). */
export function isSignatureRefusal(error: unknown): error is RunnerError {
  return error instanceof RunnerError && [SIGNATURE_REFUSED, SIGNATURE_UNSUPPORTED, SIGNATURE_REQUIRED].includes(error.code)
}
