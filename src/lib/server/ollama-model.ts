/**
 * The served model as Ollama's API describes one (`/api/tags`, `/api/show`, `/api/ps`), read from
 * the GGUF header the server already parsed: `details` (format, family, parameter size,
 * quantization level), `model_info` (the metadata, as Ollama lists it), the file's size, time and
 * digest. The digest is the sha256 of the model's bytes (every shard in order), computed once, on
 * the first request that needs it, by streaming the file (never read whole, never on the event loop).
 */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {stat} from 'node:fs/promises'

import {type GgufModelFiles, isGgufArray, valueToJson} from '../gguf/index.js'
import {FILE_TYPE} from '../quantize/index.js'

export interface OllamaDetails {
  readonly parent_model: string
  readonly format: 'gguf'
  readonly family: string
  readonly families: string[]
  readonly parameter_size: string
  readonly quantization_level: string
}

export interface OllamaModelFacts {
  readonly details: OllamaDetails
  readonly parameterCount: number
  /** Bytes of the model's files. */
  readonly size: number
  /** The first file's modification time (ISO 8601). */
  readonly modifiedAt: string
  /** sha256 of the model's bytes, hex. */
  readonly digest: string
}

/** llama.cpp's LLAMA_FTYPE by value, first name wins (Q4_K_M before its alias Q4_K). */
const FILE_TYPE_NAME: ReadonlyMap<number, string> = new Map(
  Object.entries(FILE_TYPE)
    .reverse()
    .map(([name, id]) => [id, name]),
)

/** Ollama's way of writing a parameter count: 8.0B, 7.2B, 260K. */
export function parameterSize(n: number): string {
  const units: ReadonlyArray<[number, string]> = [
    [1e12, 'T'],
    [1e9, 'B'],
    [1e6, 'M'],
  ]
  for (const [size, unit] of units) if (n >= size) return `${(n / size).toFixed(1)}${unit}`
  return n >= 1e3 ? `${Math.round(n / 1e3)}K` : String(n)
}

/**
 * The quantization level: the name of `general.file_type` (llama.cpp's LLAMA_FTYPE), or, without
 * one, the type that holds most of the weights' bytes.
 */
export function quantizationLevel(gguf: GgufModelFiles): string {
  const ftype = gguf.metadata.get('general.file_type')?.value
  if (typeof ftype === 'number' || typeof ftype === 'bigint') return FILE_TYPE_NAME.get(Number(ftype)) ?? `file type ${ftype}`
  const bytes = new Map<string, number>()
  for (const t of gguf.tensors) bytes.set(t.type.name, (bytes.get(t.type.name) ?? 0) + t.byteSize)
  const top = [...bytes.entries()].sort((a, b) => b[1] - a[1])[0]
  return top ? top[0].toUpperCase() : 'unknown'
}

async function sha256Files(paths: readonly string[]): Promise<string> {
  const hash = createHash('sha256')
  for (const path of paths) for await (const chunk of createReadStream(path, {highWaterMark: 4 << 20})) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

const facts = new WeakMap<GgufModelFiles, Promise<OllamaModelFacts>>()

/** The model's facts, computed once per loaded model. */
export function modelFacts(gguf: GgufModelFiles): Promise<OllamaModelFacts> {
  let f = facts.get(gguf)
  if (!f) {
    f = computeFacts(gguf)
    // A failure (the file moved away) is not kept: the next request tries again.
    f.catch(() => facts.delete(gguf))
    facts.set(gguf, f)
  }
  return f
}

async function computeFacts(gguf: GgufModelFiles): Promise<OllamaModelFacts> {
  const [info, digest] = await Promise.all([stat(gguf.path), sha256Files(gguf.shards.map((s) => s.path))])
  const arch = gguf.metadata.get('general.architecture')?.value
  const family = typeof arch === 'string' ? arch : 'unknown'
  const parameterCount = gguf.tensors.reduce((n, t) => n + t.nElements, 0)
  return {
    details: {
      parent_model: '',
      format: 'gguf',
      family,
      families: [family],
      parameter_size: parameterSize(parameterCount),
      quantization_level: quantizationLevel(gguf),
    },
    parameterCount,
    size: gguf.totalBytes,
    modifiedAt: info.mtime.toISOString(),
    digest,
  }
}

/** Keys Ollama leaves out of model_info: the template is `template`, the name is the model's. */
const NOT_IN_MODEL_INFO = new Set(['tokenizer.chat_template', 'general.name'])

/**
 * The metadata as Ollama's `model_info`: every key but those above; arrays empty unless `verbose`
 * (as Ollama shows them); `general.parameter_count` computed from the tensors when the file has none.
 */
export function modelInfo(gguf: GgufModelFiles, parameterCount: number, verbose: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const kv of gguf.kvs) {
    if (NOT_IN_MODEL_INFO.has(kv.key)) continue
    out[kv.key] = isGgufArray(kv.value) && !verbose ? [] : valueToJson(kv.value)
  }
  out['general.parameter_count'] ??= parameterCount
  return out
}
