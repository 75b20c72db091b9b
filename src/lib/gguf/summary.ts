import type {GgufModelFiles} from './shards.js'
import {type GgufValue, isGgufArray, valueToJson, valueTypeName} from './values.js'

/** What `runner inspect` shows about a model: read from metadata and the tensor table, never from weights. */
export interface ModelSummary {
  readonly file: string
  readonly shards: number
  readonly fileBytes: number
  readonly ggufVersion: number
  readonly architecture: string | undefined
  readonly name: string | undefined
  readonly fileType: number | undefined
  readonly parameterCount: number
  readonly contextLength: number | undefined
  readonly embeddingLength: number | undefined
  readonly blockCount: number | undefined
  /** A number, or per-layer values when the file stores an array. */
  readonly headCount: number | number[] | undefined
  readonly headCountKv: number | number[] | undefined
  readonly vocabSize: number | undefined
  /** Family-specific hyperparameters, as the file states them (absent keys: undefined; the engine's defaults apply). */
  readonly expertCount: number | undefined
  readonly expertUsedCount: number | undefined
  readonly expertFeedForwardLength: number | undefined
  readonly slidingWindow: number | undefined
  /** A period (layer i slides iff i % n < n - 1) or one flag per block. */
  readonly slidingWindowPattern: number | boolean[] | undefined
  readonly ropeFreqBaseSwa: number | undefined
  /** rope.scaling.* as stated (docs/long-context.md): type, factor (or the older rope.scale_linear), original context, attention factor. */
  readonly ropeScalingType: string | undefined
  readonly ropeScalingFactor: number | undefined
  readonly ropeScalingOriginalContext: number | undefined
  readonly ropeScalingAttnFactor: number | undefined
  /** Trailing blocks that form a multi-token-prediction (NextN / MTP) head (`nextn_predict_layers`). */
  readonly nextnPredictLayers: number | undefined
  readonly attnLogitSoftcapping: number | undefined
  readonly finalLogitSoftcapping: number | undefined
  readonly tokenizerModel: string | undefined
  readonly hasChatTemplate: boolean
  readonly tensorCount: number
  /** Tensors and bytes per ggml type, in type-id order. */
  readonly bytesByType: ReadonlyArray<{readonly type: string; readonly tensors: number; readonly bytes: number}>
}

export function summarizeModel(model: GgufModelFiles): ModelSummary {
  const raw = (key: string): GgufValue | undefined => model.metadata.get(key)?.value
  const str = (key: string) => {
    const v = raw(key)
    return typeof v === 'string' ? v : undefined
  }
  const num = (key: string) => {
    const v = raw(key)
    return typeof v === 'number' || typeof v === 'bigint' ? Number(v) : undefined
  }
  const numOrList = (key: string) => {
    const v = raw(key)
    if (v !== undefined && isGgufArray(v)) return (valueToJson(v) as unknown[]).map(Number)
    return num(key)
  }
  const arch = str('general.architecture')
  const archNum = (key: string) => (arch ? num(`${arch}.${key}`) : undefined)
  const pattern = (): number | boolean[] | undefined => {
    const v = arch ? raw(`${arch}.attention.sliding_window_pattern`) : undefined
    if (v !== undefined && isGgufArray(v)) return (valueToJson(v) as unknown[]).map(Boolean)
    return archNum('attention.sliding_window_pattern')
  }
  const tokens = raw('tokenizer.ggml.tokens')
  const byType = new Map<number, {type: string; tensors: number; bytes: number}>()
  let parameterCount = 0
  for (const t of model.tensors) {
    parameterCount += t.nElements
    const entry = byType.get(t.type.id) ?? {type: t.type.name, tensors: 0, bytes: 0}
    entry.tensors += 1
    entry.bytes += t.byteSize
    byType.set(t.type.id, entry)
  }
  return {
    file: model.path,
    shards: model.shards.length,
    fileBytes: model.totalBytes,
    ggufVersion: model.version,
    architecture: arch,
    name: str('general.name'),
    fileType: num('general.file_type'),
    parameterCount,
    contextLength: arch ? num(`${arch}.context_length`) : undefined,
    embeddingLength: arch ? num(`${arch}.embedding_length`) : undefined,
    blockCount: arch ? num(`${arch}.block_count`) : undefined,
    headCount: arch ? numOrList(`${arch}.attention.head_count`) : undefined,
    headCountKv: arch ? numOrList(`${arch}.attention.head_count_kv`) : undefined,
    vocabSize: tokens !== undefined && isGgufArray(tokens) ? tokens.items.length : arch ? num(`${arch}.vocab_size`) : undefined,
    expertCount: archNum('expert_count'),
    expertUsedCount: archNum('expert_used_count'),
    expertFeedForwardLength: archNum('expert_feed_forward_length'),
    slidingWindow: archNum('attention.sliding_window'),
    slidingWindowPattern: pattern(),
    ropeFreqBaseSwa: archNum('rope.freq_base_swa'),
    ropeScalingType: arch ? str(`${arch}.rope.scaling.type`) : undefined,
    ropeScalingFactor: archNum('rope.scaling.factor') ?? archNum('rope.scale_linear'),
    ropeScalingOriginalContext: archNum('rope.scaling.original_context_length'),
    ropeScalingAttnFactor: archNum('rope.scaling.attn_factor'),
    nextnPredictLayers: archNum('nextn_predict_layers'),
    attnLogitSoftcapping: archNum('attn_logit_softcapping'),
    finalLogitSoftcapping: archNum('final_logit_softcapping'),
    tokenizerModel: str('tokenizer.ggml.model'),
    hasChatTemplate: typeof raw('tokenizer.chat_template') === 'string',
    tensorCount: model.tensors.length,
    bytesByType: [...byType.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v),
  }
}

/**
 * The type holding most of the weight bytes, F32 only when nothing else is there (norms are F32 in
 * every quantized file): what a roster's `type` and `runner list`'s TYPE column name.
 */
export function dominantType(s: ModelSummary): string {
  const quantized = s.bytesByType.filter((t) => t.type !== 'F32')
  const pool = quantized.length > 0 ? quantized : s.bytesByType
  return pool.length === 0 ? 'none' : pool.reduce((a, b) => (b.bytes > a.bytes ? b : a)).type
}

/** The whole model as one JSON-safe document (`runner inspect --json`). */
export function modelToJson(model: GgufModelFiles): unknown {
  return {
    summary: summarizeModel(model),
    metadata: Object.fromEntries(model.kvs.map((kv) => [kv.key, valueToJson(kv.value)])),
    metadataTypes: Object.fromEntries(
      model.kvs.map((kv) => [kv.key, isGgufArray(kv.value) ? `array<${valueTypeName(kv.value.itemType)}>` : valueTypeName(kv.type)]),
    ),
    tensors: model.tensors.map((t) => ({
      name: t.name,
      type: t.type.name,
      shape: t.shape,
      offset: t.offset,
      bytes: t.byteSize,
      ...(model.shards.length > 1 ? {file: t.file} : {}),
    })),
  }
}
