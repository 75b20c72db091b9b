/**
 * What `runner inspect` prints, as text: the summary rows, the tensor table, the metadata rows, one
 * value. The JSON forms are modelToJson (summary.ts) and valueToJson (values.ts). Every string from
 * the file (names, keys, values) goes through util/printable.ts: a file's bytes never reach the
 * terminal as control, format or separator characters.
 */
import {formatBytes, formatCount, formatRows, printable, printableJson} from '../util/index.js'
import type {GgufModelFiles} from './shards.js'
import type {ModelSummary} from './summary.js'
import {formatValue, type GgufKv, valueToJson} from './values.js'

/**
 * One metadata value and nothing else: strings whole, with their line breaks and tabs (a chat
 * template reads as itself) but every other control or format character escaped; arrays as JSON
 * (printableJson). `--key K --json` gives the exact value.
 */
export function renderValue(kv: GgufKv): string {
  if (typeof kv.value === 'string') return printable(kv.value, {max: Infinity, newlines: true})
  return typeof kv.value === 'object' ? printableJson(valueToJson(kv.value)) : String(kv.value)
}

/** Every tensor: name, type, shape (ggml order, ne0 first), offset, bytes. */
export function renderTensors(model: GgufModelFiles): string {
  const rows = model.tensors.map((t) => [printable(t.name), t.type.name, `[${t.shape.join(', ')}]`, String(t.offset), String(t.byteSize)])
  return renderTable(['name', 'type', 'shape', 'offset', 'bytes'], rows)
}

/** The metadata rows of the summary view (the tokenizer's arrays are left out: they are the vocabulary). */
export function renderMetadata(model: GgufModelFiles): string | undefined {
  const meta = model.kvs.filter((kv) => !kv.key.startsWith('tokenizer.ggml.'))
  return meta.length > 0 ? formatRows(meta.map((kv) => [printable(kv.key), formatValue(kv.value)])) : undefined
}

export function renderSummary(s: ModelSummary): string {
  const opt = (v: number | number[] | string | undefined) =>
    v === undefined ? '-' : Array.isArray(v) ? `[${v.join(', ')}]` : typeof v === 'string' ? printable(v) : String(v)
  const heads = s.headCount === undefined ? '-' : `${opt(s.headCount)}${s.headCountKv === undefined ? '' : ` (${opt(s.headCountKv)} KV)`}`
  const rows: Array<[string, string]> = [
    ['file', `${printable(s.file, {max: 1000})}${s.shards > 1 ? ` (+${s.shards - 1} more shards)` : ''}`],
    ['size', `${formatBytes(s.fileBytes)} (${s.fileBytes} bytes), GGUF v${s.ggufVersion}`],
    ['architecture', opt(s.architecture)],
    ['name', opt(s.name)],
    ['parameters', `${formatCount(s.parameterCount)} (${s.parameterCount})`],
    ['context length', opt(s.contextLength)],
    ['embedding size', opt(s.embeddingLength)],
    ['layers', opt(s.blockCount)],
    ['heads', heads],
    ...familyRows(s),
    ['vocab size', opt(s.vocabSize)],
    ['tokenizer', opt(s.tokenizerModel)],
    ['chat template', s.hasChatTemplate ? 'yes' : 'no'],
    ['tensors', String(s.tensorCount)],
    ...s.bytesByType.map((t): [string, string] => [`  ${t.type}`, `${t.tensors} tensors, ${formatBytes(t.bytes)} (${t.bytes} bytes)`]),
  ]
  return formatRows(rows)
}

/** Rows only for the families that state them: experts, sliding windows, rope scaling, an MTP head, soft-capping. */
function familyRows(s: ModelSummary): Array<[string, string]> {
  const rows: Array<[string, string]> = []
  if (s.expertCount !== undefined) {
    const width = s.expertFeedForwardLength === undefined ? '' : `, expert width ${s.expertFeedForwardLength}`
    rows.push(['experts', `${s.expertCount}, ${s.expertUsedCount ?? '-'} used per token${width}`])
  }
  if (s.slidingWindow !== undefined || s.slidingWindowPattern !== undefined) {
    const p = s.slidingWindowPattern
    const pattern = p === undefined ? '' : Array.isArray(p) ? `, sliding blocks [${p.map(Number).join(', ')}]` : `, pattern ${p}`
    const base = s.ropeFreqBaseSwa === undefined ? '' : `, rope base ${s.ropeFreqBaseSwa} there`
    rows.push(['sliding window', `${s.slidingWindow ?? '-'} tokens${pattern}${base}`])
  }
  const scaled = [s.ropeScalingType, s.ropeScalingFactor, s.ropeScalingOriginalContext, s.ropeScalingAttnFactor].some(
    (v) => v !== undefined,
  )
  if (scaled) {
    // llama.cpp reads a factor without a type as linear.
    const parts = [
      s.ropeScalingType === undefined ? 'linear (no type given)' : printable(s.ropeScalingType),
      ...(s.ropeScalingFactor === undefined ? [] : [`factor ${s.ropeScalingFactor}`]),
      ...(s.ropeScalingOriginalContext === undefined ? [] : [`original context ${s.ropeScalingOriginalContext}`]),
      ...(s.ropeScalingAttnFactor === undefined ? [] : [`attention factor ${s.ropeScalingAttnFactor}`]),
    ]
    rows.push(['rope scaling', parts.join(', ')])
  }
  if (s.nextnPredictLayers) {
    // The head --draft-mtp drafts with; its blocks are not run by the model itself.
    rows.push(['MTP head', `${s.nextnPredictLayers} NextN block${s.nextnPredictLayers === 1 ? '' : 's'} (--draft-mtp)`])
  }
  if (s.attnLogitSoftcapping !== undefined || s.finalLogitSoftcapping !== undefined) {
    rows.push(['soft-capping', `attention ${s.attnLogitSoftcapping ?? '-'}, final logits ${s.finalLogitSoftcapping ?? '-'}`])
  }
  return rows
}

function renderTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}
