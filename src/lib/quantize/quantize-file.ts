/**
 * `runner quantize` as a library call: read the type plan file, plan the removals and the tensor
 * types, convert with a progress line on stderr (silent for --json), and the two renderings of the
 * summary. The command parses flags and prints one of them.
 */
import {readFile} from 'node:fs/promises'

import {ByteProgress} from '../cli/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {LoraSpec} from '../lora/index.js'
import {readGgufModel} from '../gguf/index.js'
import {checkModel} from '../model-check/index.js'
import {defaultThreads, formatBytes, formatRows, printable} from '../util/index.js'
import {type MergedAdapter, planLoraMerges} from './merge-lora.js'
import {parseTypePlan, planQuantization, type TensorDecision, type TypePlanRule} from './plan.js'
import {quantizeModel, type QuantizeSummary} from './quantize.js'
import {parseRemovals, planRemovals} from './remove-sublayer.js'

export interface QuantizeFileOptions {
  readonly input: string
  readonly output: string
  /** A tensor type or one of llama.cpp's mixes. */
  readonly type: string
  readonly pure: boolean
  readonly keepOutput: boolean
  /** JSON {"rules": [...]}: per-tensor types, first match wins. */
  readonly typePlanFile?: string
  /** Also remove sublayers (attn:N,mlp:M). */
  readonly removeSublayer?: string
  /** Merge these LoRA adapters into their weights (in F32, in order) before converting. */
  readonly mergeLora?: readonly LoraSpec[]
  readonly threads?: number
  /** No progress on stderr (--json). */
  readonly silent: boolean
  /** Replace an existing output file (--force); without it one is refused before any work. */
  readonly force?: boolean
  /** Ctrl+C: the conversion stops, the partial output is removed, INTERRUPTED (exit 130). */
  readonly signal?: AbortSignal
}

export interface QuantizeFileResult {
  readonly summary: QuantizeSummary
  readonly decisions: readonly TensorDecision[]
  readonly merged: readonly MergedAdapter[]
}

async function readTypePlan(file: string): Promise<readonly TypePlanRule[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new RunnerError('QUANT_BAD_PLAN', `cannot read ${file}: ${(error as Error).message}`, ExitCode.usage)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new RunnerError('QUANT_BAD_PLAN', `${file} is not JSON: ${(error as Error).message}`, ExitCode.usage)
  }
  return parseTypePlan(json, file)
}

export async function quantizeFile(o: QuantizeFileOptions): Promise<QuantizeFileResult> {
  const plan = o.typePlanFile === undefined ? undefined : await readTypePlan(o.typePlanFile)
  const options = {type: o.type, pure: o.pure, keepOutput: o.keepOutput, plan}
  const model = readGgufModel(o.input)
  checkModel(model) // what run would refuse is not converted
  const removal = o.removeSublayer === undefined ? undefined : planRemovals(model, parseRemovals(o.removeSublayer))
  const merge = await planLoraMerges(model, o.mergeLora ?? [], removal?.kept ?? model.tensors)
  const decisions = planQuantization(model, options, removal?.kept, merge.targets)
  const say = (line: string) => {
    if (!o.silent) process.stderr.write(`${line}\n`)
  }
  say(
    `quantize: ${decisions.filter((d) => d.to.id !== d.from.id).length} of ${decisions.length} tensors to ${o.type.toUpperCase()}` +
      (merge.byTensor.size > 0 ? `, merging ${merge.adapters.length} LoRA adapter(s) into ${merge.byTensor.size}` : ''),
  )
  // Diagnostics: stderr, so stdout stays for results (--json prints nothing here).
  const progress = o.silent ? undefined : new ByteProgress('quantize')
  let summary: QuantizeSummary
  try {
    summary = await quantizeModel(
      model,
      o.output,
      decisions,
      options,
      progress && ((done, total) => progress.update(done, total)),
      [...(removal?.kvs ?? model.kvs), ...merge.kvs],
      o.threads ?? defaultThreads(),
      {exclusive: !o.force, signal: o.signal},
      merge.byTensor,
    )
  } finally {
    progress?.end()
  }
  return {summary, decisions, merged: merge.adapters}
}

/** The --json document: the summary, the type, and every tensor's decision. */
export function quantizeJson(r: QuantizeFileResult, type: string) {
  return {
    ...r.summary,
    type: type.toUpperCase(),
    mergedLora: r.merged,
    tensorsDetail: r.decisions.map((d) => ({name: d.tensor.name, from: d.from.name, to: d.to.name, reason: d.reason})),
  }
}

export function formatQuantizeSummary(s: QuantizeSummary, merged: readonly MergedAdapter[] = []): string {
  return formatRows([
    ['tensors', `${s.converted} converted, ${s.tensors - s.converted} kept`],
    ...merged.map((a): [string, string] => [
      'merged',
      `${printable(a.name)} at scale ${a.scale} into ${a.weights} weights (sha256 ${a.sha256})`,
    ]),
    ['weights', `${formatBytes(s.bytesBefore)} -> ${formatBytes(s.bytesAfter)} (${s.bitsPerWeight.toFixed(2)} bits per weight)`],
    ['file', `${s.output}, ${formatBytes(s.fileBytes)}`],
    ['time', `${(s.ms / 1000).toFixed(2)} s`],
  ])
}
