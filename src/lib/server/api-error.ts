import {ChatHistoryError} from '../chat/index.js'
import {RunnerError} from '../errors.js'
import {printable} from '../util/index.js'

/** OpenAI's error `type` values the server uses, by HTTP status. */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'invalid_request_error',
  405: 'invalid_request_error',
  408: 'timeout_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  500: 'server_error',
  503: 'server_error',
}

/** The body OpenAI's clients parse into their APIError: `{"error": {message, type, param, code}}`. */
export interface OpenAiErrorBody {
  readonly error: {readonly message: string; readonly type: string; readonly param: string | null; readonly code: string | null}
}

/**
 * A refused request: an HTTP status, OpenAI's error object (naming the offending `param` where
 * there is one), and headers such as Retry-After.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    // Messages quote what requests and model files hold: printable (no control, format or
    // separator characters) and bounded, like every RunnerError's.
    super(printable(message, {max: 4000}))
    this.name = 'ApiError'
  }

  get type(): string {
    return TYPE_BY_STATUS[this.status] ?? (this.status >= 500 ? 'server_error' : 'invalid_request_error')
  }

  body(): OpenAiErrorBody {
    return {error: {message: this.message, type: this.type, param: this.param, code: this.code}}
  }

  /** Anthropic's shape (`/v1/messages`): `{"type": "error", "error": {type, message}}`; the field leads the message. */
  anthropicBody(): {type: 'error'; error: {type: string; message: string}} {
    const type = ANTHROPIC_TYPE_BY_STATUS[this.status] ?? (this.status >= 500 ? 'api_error' : 'invalid_request_error')
    const message = this.param && !this.message.startsWith(this.param) ? `${this.param}: ${this.message}` : this.message
    return {type: 'error', error: {type, message}}
  }
}

/** Anthropic's error `type` values by HTTP status. */
const ANTHROPIC_TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  503: 'overloaded_error',
}

/** 400 naming a parameter: the common case. */
export function badParam(param: string, message: string, code = 'invalid_value'): ApiError {
  return new ApiError(400, message, param, code)
}

/**
 * Any error thrown while serving a request, as an ApiError: chat-history refusals keep their
 * parameter path, sampling refusals name the request field they came from, anything unexpected is
 * a 500 that says what failed (never a crash).
 */
export function toApiError(error: unknown, samplingParams: Readonly<Record<string, string>> = {}): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof ChatHistoryError) return new ApiError(400, error.message, error.param, error.code.toLowerCase())
  if (error instanceof RunnerError) {
    if (error.code === 'SAMPLING_BAD_OPTION') {
      const option = /Sampling option (\w+)/.exec(error.message)?.[1]
      return new ApiError(400, error.message, option ? (samplingParams[option] ?? option) : null, 'invalid_value')
    }
    if (error.code === 'CONTEXT_FULL') return new ApiError(400, error.message, 'messages', 'context_length_exceeded')
    return new ApiError(500, `${error.message} [${error.code}]`, null, error.code.toLowerCase())
  }
  const message = error instanceof Error ? error.message : String(error)
  return new ApiError(500, `internal error: ${message}`, null, 'internal_error')
}
