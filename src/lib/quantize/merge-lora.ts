/**
 * `runner quantize --merge-lora FILE[:SCALE]`: which rows of which weights get which deltas. Each
 * adapter is read and checked against the model as `run --lora` checks it (./lora bindLoraAdapter),
 * its a and b dequantized to F32 once; the quantizer then merges them into the weight's F32 rows
 * chunk by chunk (native runner_lora_merge_rows) before writing the rows in the type asked.
 */
import {open} from 'node:fs/promises'
import {basename} from 'node:path'

import {toFloat} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {type GgufKv, type GgufModelFiles, GgufValueType, type GgufTensorInfo} from '../gguf/index.js'
import {bindLoraAdapter, type LoraSpec, readLoraAdapter} from '../lora/index.js'
import {checkModel} from '../model-check/index.js'
import {quoted, sha256File} from '../util/index.js'

/** One pair to add to a weight: w += s * b a (s from scale, alpha and rank, as the forward pass). */
export interface LoraMerge {
  /** lora_a, rank rows of n_in values. */
  readonly a: Float32Array
  /** lora_b, n_out rows of rank values. */
  readonly b: Float32Array
  readonly rank: number
  readonly alpha: number
  readonly scale: number
}

export interface MergedAdapter {
  readonly name: string
  readonly sha256: string
  readonly alpha: number
  readonly scale: number
  /** Weights it changes (0 at scale 0: nothing is added, so the base's bytes stay, -0 included). */
  readonly weights: number
}

export interface MergePlan {
  /** Deltas by tensor name, in the order the adapters were given. */
  readonly byTensor: ReadonlyMap<string, readonly LoraMerge[]>
  /** Every weight an adapter names, scale 0 included (a merge asked for is written, even if it changes nothing). */
  readonly targets: ReadonlySet<string>
  readonly adapters: readonly MergedAdapter[]
  /** What the output records of the merge (runner.quantize.lora.*). */
  readonly kvs: readonly GgufKv[]
}

/** Types a merged weight may start from: merging into a quantized weight would requantize it. */
const MERGE_SOURCE_TYPES = new Set(['F32', 'F16', 'BF16'])

async function readFloats(fd: Awaited<ReturnType<typeof open>>, t: GgufTensorInfo): Promise<Float32Array> {
  const bytes = new Uint8Array(t.byteSize)
  const {bytesRead} = await fd.read(bytes, 0, bytes.length, t.offset)
  if (bytesRead !== bytes.length)
    throw new RunnerError('LORA_BAD_ADAPTER', `${quoted(t.file)}: tensor ${quoted(t.name)} is cut short`, ExitCode.invalidModel)
  return toFloat(t.type.id, bytes, t.nElements)
}

/**
 * Read, check and dequantize the adapters; `written` are the tensors the output will hold (after
 * any --remove-sublayer): an adapter on a removed weight is refused rather than dropped.
 */
export async function planLoraMerges(
  model: GgufModelFiles,
  specs: readonly LoraSpec[],
  written: readonly GgufTensorInfo[],
): Promise<MergePlan> {
  const byTensor = new Map<string, LoraMerge[]>()
  const adapters: MergedAdapter[] = []
  const targets = new Set<string>()
  if (specs.length === 0) return {byTensor, targets, adapters, kvs: []}
  const {plan} = checkModel(model)
  const outputs = new Map(written.map((t) => [t.name, t]))
  for (const spec of specs) {
    const adapter = readLoraAdapter(spec.path)
    const bindings = bindLoraAdapter(adapter, plan)
    for (const b of bindings) {
      targets.add(b.target)
      const t = outputs.get(b.target)
      if (!t)
        throw new RunnerError(
          'LORA_MERGE_REMOVED',
          `${quoted(spec.path)} adapts ${quoted(b.target)}, which --remove-sublayer removes: remove the adapter's pairs or the sublayer, not both`,
          ExitCode.usage,
        )
      if (!MERGE_SOURCE_TYPES.has(t.type.name))
        throw new RunnerError(
          'LORA_MERGE_QUANTIZED',
          `${quoted(b.target)} is ${t.type.name}; merging an adapter into it would requantize it, which loses precision twice: start from the F32/F16/BF16 file`,
          ExitCode.usage,
        )
    }
    // Scale 0 adds nothing: the pairs are checked but not read, and the weights keep their bytes.
    if (spec.scale !== 0) {
      const fd = await open(spec.path, 'r')
      try {
        for (const [i, pair] of adapter.pairs.entries()) {
          const merge = {
            a: await readFloats(fd, pair.a),
            b: await readFloats(fd, pair.b),
            rank: bindings[i]!.rank,
            alpha: adapter.alpha,
            scale: spec.scale,
          }
          byTensor.set(pair.target, [...(byTensor.get(pair.target) ?? []), merge])
        }
      } finally {
        await fd.close()
      }
    }
    adapters.push({
      name: basename(spec.path),
      sha256: await sha256File(spec.path),
      alpha: adapter.alpha,
      scale: spec.scale,
      weights: spec.scale === 0 ? 0 : adapter.pairs.length,
    })
  }
  const strings = (key: string, items: string[]): GgufKv => ({
    key,
    type: GgufValueType.ARRAY,
    value: {itemType: GgufValueType.STRING, items},
  })
  const kvs: GgufKv[] = [
    strings(
      'runner.quantize.lora.names',
      adapters.map((a) => a.name),
    ),
    strings(
      'runner.quantize.lora.sha256',
      adapters.map((a) => a.sha256),
    ),
    {
      key: 'runner.quantize.lora.scales',
      type: GgufValueType.ARRAY,
      value: {itemType: GgufValueType.FLOAT32, items: Float32Array.from(adapters.map((a) => a.scale))},
    },
  ]
  return {byTensor, targets, adapters, kvs}
}
