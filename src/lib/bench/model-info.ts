import {type GgufModelFiles} from '../gguf/index.js'
import {FILE_TYPE} from '../quantize/index.js'

/** The model columns of llama-bench's output, read from the GGUF header (never from the weights). */
export interface BenchModelInfo {
  /** The path as the user gave it (llama-bench's model_filename). */
  readonly filename: string
  /**
   * Architecture and file type, as llama.cpp's model_type ("llama 7B Q4_0") without its size class
   * ("7B"): that comes from llama.cpp's per-architecture layer-count tables, which runner does not keep.
   */
  readonly type: string
  /** Bytes of the tensors (llama_model_size: the weights, not the header). */
  readonly sizeBytes: number
  readonly nParams: number
  /** `<arch>.context_length`: the positions the model was trained on. */
  readonly nCtxTrain: number | undefined
}

/** LLAMA_FTYPE names by value; the first name wins (Q4_K_M before its alias Q4_K). */
const FILE_TYPE_NAME: ReadonlyMap<number, string> = new Map(
  Object.entries(FILE_TYPE)
    .reverse()
    .map(([name, id]) => [id, name]),
)

/**
 * Without general.file_type llama.cpp guesses the file type from the type most tensors have and
 * says so ("all F32 (guessed)"); the same here, with the type's own name.
 */
function guessedType(gguf: GgufModelFiles): string {
  const counts = new Map<string, number>()
  for (const t of gguf.tensors) counts.set(t.type.name, (counts.get(t.type.name) ?? 0) + 1)
  const top = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]
  return top ? `${top[0].toUpperCase()} (guessed)` : 'unknown file type'
}

export function benchModelInfo(filename: string, gguf: GgufModelFiles): BenchModelInfo {
  const value = (key: string) => gguf.metadata.get(key)?.value
  const arch = value('general.architecture')
  const archName = typeof arch === 'string' ? arch : 'unknown'
  const ftype = value('general.file_type')
  const ftypeName =
    typeof ftype === 'number' || typeof ftype === 'bigint' ? (FILE_TYPE_NAME.get(Number(ftype)) ?? `file type ${ftype}`) : guessedType(gguf)
  const ctx = value(`${archName}.context_length`)
  return {
    filename,
    type: `${archName} ${ftypeName}`,
    sizeBytes: gguf.tensors.reduce((n, t) => n + t.byteSize, 0),
    nParams: gguf.tensors.reduce((n, t) => n + t.nElements, 0),
    nCtxTrain: typeof ctx === 'number' || typeof ctx === 'bigint' ? Number(ctx) : undefined,
  }
}
