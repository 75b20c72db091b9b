import {Args, Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/runner-command.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {formatValue, modelToJson, type ModelSummary, readGgufModel, summarizeModel, valueToJson, valueTypeName} from '../lib/gguf/index.js'
import {formatBytes, formatCount, formatRows} from '../lib/util/format.js'

export default class Inspect extends RunnerCommand {
  static override summary = 'Show what a GGUF model file holds: architecture, sizes, tokenizer, tensors.'
  static override description =
    'Reads only the header (metadata and tensor table), so it is instant on a file of any size. A sharded set ' +
    '(name-00001-of-00003.gguf) is read as one model from any of its shards. A malformed or hostile file is refused ' +
    'with the field and byte offset that are wrong, and the command exits 3 (invalid model).'

  static override examples = [
    {description: 'Summary of a model', command: '<%= config.bin %> inspect ../shared/models/stories260K.gguf'},
    {description: 'Every tensor with its type, shape, offset and size', command: '<%= config.bin %> inspect model.gguf --tensors'},
    {description: 'One metadata value', command: '<%= config.bin %> inspect model.gguf --key llama.context_length'},
    {description: 'Everything as one JSON document', command: "<%= config.bin %> inspect model.gguf --json | jq '.summary'"},
  ]

  static override args = {
    file: Args.string({description: 'GGUF file (or any shard of a split model)', required: true}),
  }

  static override flags = {
    tensors: Flags.boolean({description: 'list every tensor: name, type, shape (ggml order, ne0 first), offset, bytes'}),
    key: Flags.string({description: 'print one metadata value and nothing else', helpValue: 'NAME'}),
    json: Flags.boolean({description: 'print one JSON document (summary, metadata, tensors) on stdout'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Inspect)
    const model = readGgufModel(args.file)

    if (flags.key !== undefined) {
      const kv = model.metadata.get(flags.key)
      if (!kv) throw new RunnerError('META_KEY_NOT_FOUND', `${args.file} has no metadata key ${JSON.stringify(flags.key)}`, ExitCode.failure)
      if (flags.json) this.log(JSON.stringify({key: kv.key, type: valueTypeName(kv.type), value: valueToJson(kv.value)}))
      else this.log(typeof kv.value === 'string' ? kv.value : typeof kv.value === 'object' ? JSON.stringify(valueToJson(kv.value)) : String(kv.value))
      return
    }
    if (flags.json) {
      this.log(JSON.stringify(modelToJson(model), (_k, v: unknown) => (v === undefined ? null : v), 2))
      return
    }
    this.log(renderSummary(summarizeModel(model)))
    if (flags.tensors) {
      this.log('')
      const rows = model.tensors.map((t) => [t.name, t.type.name, `[${t.shape.join(', ')}]`, String(t.offset), String(t.byteSize)])
      this.log(renderTable(['name', 'type', 'shape', 'offset', 'bytes'], rows))
    }
    const meta = model.kvs.filter((kv) => !kv.key.startsWith('tokenizer.ggml.'))
    if (!flags.tensors && meta.length > 0) {
      this.log('')
      this.log(formatRows(meta.map((kv) => [kv.key, formatValue(kv.value)])))
    }
  }
}

function renderSummary(s: ModelSummary): string {
  const opt = (v: number | number[] | string | undefined) => (v === undefined ? '-' : Array.isArray(v) ? `[${v.join(', ')}]` : String(v))
  const heads = s.headCount === undefined ? '-' : `${opt(s.headCount)}${s.headCountKv === undefined ? '' : ` (${opt(s.headCountKv)} KV)`}`
  const rows: Array<[string, string]> = [
    ['file', `${s.file}${s.shards > 1 ? ` (+${s.shards - 1} more shards)` : ''}`],
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

/** Rows only for the families that state them: experts, sliding windows, soft-capping. */
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
  if (s.attnLogitSoftcapping !== undefined || s.finalLogitSoftcapping !== undefined) {
    rows.push(['soft-capping', `attention ${s.attnLogitSoftcapping ?? '-'}, final logits ${s.finalLogitSoftcapping ?? '-'}`])
  }
  return rows
}

function renderTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}
