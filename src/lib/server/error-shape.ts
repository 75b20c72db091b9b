/**
 * Which API family's error shape a request gets, decided once for every error the server writes
 * (refused fields, bad JSON, oversize bodies, unknown routes, the API key, undecodable URLs): each
 * client library parses only its own API's shape, so an error in another shape reaches the user as
 * `[object Object]` or a bare status line.
 *
 * - Anthropic (`{"type": "error", "error": {type, message}}`): `/v1/messages` and every path under
 *   it, routes that do not exist included (`/v1/messages/batches`); and any other path whose request
 *   carries an `anthropic-version` header, which Anthropic's SDK sends with every request.
 * - Ollama (`{"error": "message"}`): `/api` and every path under it.
 * - OpenAI (`{"error": {message, type, param, code}}`): everything else.
 *
 * The path table wins over the header: an Ollama route is answered in Ollama's shape whoever asks.
 */
import type {ApiError} from './api-error.js'

export type ErrorFamily = 'openai' | 'anthropic' | 'ollama'

/** Path prefixes and the family they select: the path itself, or anything below it. */
const PATH_FAMILIES: ReadonlyArray<{readonly prefix: string; readonly family: ErrorFamily}> = [
  {prefix: '/v1/messages', family: 'anthropic'},
  {prefix: '/api', family: 'ollama'},
]

/** The header Anthropic's SDK sends with every request (its API requires it). */
export const ANTHROPIC_VERSION_HEADER = 'anthropic-version'

export function errorFamily(url: string, headers: Readonly<Record<string, string | string[] | undefined>> = {}): ErrorFamily {
  const path = url.split('?')[0]!
  for (const {prefix, family} of PATH_FAMILIES) if (path === prefix || path.startsWith(`${prefix}/`)) return family
  return headers[ANTHROPIC_VERSION_HEADER] !== undefined ? 'anthropic' : 'openai'
}

/** Ollama's error is one string; the field leads it when the message does not already name it. */
export function ollamaErrorBody(e: ApiError): {error: string} {
  return {error: e.param && !e.message.includes(e.param) ? `${e.param}: ${e.message}` : e.message}
}

const WRITERS: Readonly<Record<ErrorFamily, (e: ApiError) => unknown>> = {
  openai: (e) => e.body(),
  anthropic: (e) => e.anthropicBody(),
  ollama: ollamaErrorBody,
}

/** The error body in the shape of the family this request belongs to. */
export function errorBodyFor(url: string, headers: Readonly<Record<string, string | string[] | undefined>>, e: ApiError): unknown {
  return WRITERS[errorFamily(url, headers)](e)
}
