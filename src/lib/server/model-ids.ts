/**
 * Which `model` ids a server answers to. The served id is the first `--alias`, else the file name
 * without `.gguf`; every `--alias` and the file name are accepted by name; `--accept-any-model`
 * accepts any id, as llama-server does. Responses always name the served id, whatever id the
 * request sent (llama-server answers with its served name too), so a client can tell which model
 * answered. The default is strict: a typo in `model` is a 404 that says which ids would work and
 * which flags change that.
 */
import {ApiError} from './api-error.js'

export interface ModelIds {
  /** The id responses carry and /v1/models lists. */
  readonly served: string
  /** Every id accepted by name, the served one first, no duplicates. */
  readonly accepted: readonly string[]
  /** --accept-any-model: any `model` is this model. */
  readonly acceptAny: boolean
}

export function modelIds(fileId: string, aliases: readonly string[] = [], acceptAny = false): ModelIds {
  const accepted = [...new Set([...aliases, fileId])]
  return {served: accepted[0]!, accepted, acceptAny}
}

/** The other ids accepted besides the served one (llama-server's `aliases` field of /v1/models). */
export function otherIds(ids: ModelIds): string[] {
  return ids.accepted.slice(1)
}

export function acceptsModel(ids: ModelIds, id: string): boolean {
  return ids.acceptAny || ids.accepted.includes(id)
}

/** 404 `model_not_found` unless `id` names this model; the message says how to make it do so. */
export function requireModel(ids: ModelIds, id: string): void {
  if (acceptsModel(ids, id)) return
  const others = otherIds(ids)
  const also = others.length > 0 ? ` (also accepted: ${others.map((a) => `\`${a}\``).join(', ')})` : ''
  throw new ApiError(
    404,
    `The model \`${id}\` does not exist; this server serves \`${ids.served}\`${also} (GET /v1/models). ` +
      `To accept \`${id}\` too, start runner serve with --alias ${JSON.stringify(id)}, or with --accept-any-model to accept any id`,
    'model',
    'model_not_found',
  )
}
