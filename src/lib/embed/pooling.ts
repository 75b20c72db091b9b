/**
 * Pooling (many token states → one vector) and normalisation, as llama.cpp defines them: `mean`
 * averages every token's state, `cls` takes the first token's, `last` the last token's; the
 * OpenAI-compatible endpoint then scales to unit Euclidean length. Which pooling a model wants is
 * its GGUF key `<arch>.pooling_type` (llama.cpp's enum), read here.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {type GgufModelFiles, GgufMetadata} from '../gguf/index.js'

export const POOLINGS = ['mean', 'cls', 'last'] as const
export type Pooling = (typeof POOLINGS)[number]

/**
 * llama.cpp's llama_pooling_type values as GGUF files store them. `none` (per-token vectors) has no
 * single vector to return and `rank` needs a classification head this engine does not have; a model
 * that declares either gets the default unless the caller names a pooling.
 */
const GGUF_POOLING: Readonly<Record<number, Pooling | 'none' | 'rank'>> = {0: 'none', 1: 'mean', 2: 'cls', 3: 'last', 4: 'rank'}

/**
 * Pooling for a model that declares none. llama.cpp itself leaves such a model at `none`: its server
 * then refuses /v1/embeddings, and node-llama-cpp returns the last token's raw state. Mean pooling is
 * the usual choice for a decoder that was not trained as an embedder, and is what `--pooling` defaults to.
 */
export const DEFAULT_POOLING: Pooling = 'mean'

export interface ModelPooling {
  readonly pooling: Pooling
  /** Where it came from: the file's `<arch>.pooling_type`, or the default. */
  readonly source: 'model' | 'default'
  /** The value of `<arch>.pooling_type` when the file has it. */
  readonly declared?: number
}

/** The model's own pooling (`<arch>.pooling_type`), else the default; refuses `rank` by name. */
export function modelPooling(gguf: GgufModelFiles, architecture: string): ModelPooling {
  const key = `${architecture}.pooling_type`
  const meta = new GgufMetadata(gguf.metadata, gguf.shards[0]?.kvOffsets, gguf.path)
  if (!meta.has(key)) return {pooling: DEFAULT_POOLING, source: 'default'}
  const declared = meta.uint(key, {max: 4})
  const kind = GGUF_POOLING[declared]!
  if (kind === 'rank') {
    throw new RunnerError(
      'EMBED_UNSUPPORTED_POOLING',
      `${key} is 4 (rank): a reranking model needs its classification head, which the runner does not run; name a pooling (mean, cls, last) to embed with its hidden states anyway`,
      ExitCode.unsupported,
    )
  }
  return kind === 'none' ? {pooling: DEFAULT_POOLING, source: 'default', declared} : {pooling: kind, source: 'model', declared}
}

/**
 * One vector from `n` rows of `width` floats (row t at t × width). Mean sums each dimension in
 * double, in token order, then divides: one fixed order, so the result depends only on the rows.
 */
export function pool(rows: Float32Array, n: number, width: number, pooling: Pooling): Float32Array {
  if (n < 1 || rows.length < n * width) throw new RangeError(`pool: ${rows.length} floats for ${n} rows of ${width}`)
  if (pooling === 'cls') return rows.slice(0, width)
  if (pooling === 'last') return rows.slice((n - 1) * width, n * width)
  const sum = new Float64Array(width)
  for (let t = 0; t < n; t++) {
    const base = t * width
    for (let i = 0; i < width; i++) sum[i]! += rows[base + i]!
  }
  const out = new Float32Array(width)
  for (let i = 0; i < width; i++) out[i] = sum[i]! / n
  return out
}

/**
 * Scale to unit Euclidean length as llama.cpp's common_embd_normalize does for the OpenAI endpoint:
 * squares rounded to float and summed in double, one float factor 1 / sqrt(sum), each value times it
 * (rounded to float). An all-zero vector stays zero.
 */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0
  for (let i = 0; i < v.length; i++) sum += Math.fround(v[i]! * v[i]!)
  const factor = sum > 0 ? Math.fround(1 / Math.sqrt(sum)) : 0
  const out = new Float32Array(v.length)
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * factor
  return out
}
