import {ExitCode, RunnerError} from '../errors.js'
import {GgufError, type GgufFile, GgufMetadata, type GgufTensorInfo, readGgufFile} from '../gguf/index.js'
import {quoted} from '../util/index.js'

/**
 * llama.cpp's GGUF LoRA adapter format (src/llama-adapter.cpp, llama_adapter_lora_init_impl), read
 * and checked before anything is mapped: `general.type` = "adapter", `adapter.type` = "lora",
 * `general.architecture` (must be the base's), `adapter.lora.alpha` (f32; absent reads as 0, as
 * llama.cpp reads it: the deltas are then scaled by the user's scale alone), and tensors in pairs
 * `<base tensor name>.lora_a` [n_in, rank] / `.lora_b` [rank, n_out].
 *
 * Refused by name where llama.cpp would run something else than the file says: an activated-LoRA
 * (`adapter.alora.invocation_tokens`, which applies only after its invocation tokens) and norm
 * vectors (`*_norm.weight`, which llama.cpp skips with a TODO: running an adapter without part of
 * it would be a silent repair).
 */
export interface LoraTensorPair {
  /** The base model tensor the pair adapts, e.g. `blk.0.attn_q.weight`. */
  readonly target: string
  readonly a: GgufTensorInfo
  readonly b: GgufTensorInfo
}

export interface LoraAdapter {
  readonly path: string
  readonly fileSize: number
  readonly architecture: string
  /** adapter.lora.alpha; 0 when the file has none (the deltas are then scaled by `scale` alone). */
  readonly alpha: number
  readonly alphaPresent: boolean
  readonly pairs: readonly LoraTensorPair[]
  /** Ranks seen (one per pair; a file may mix them). */
  readonly ranks: readonly number[]
  readonly name: string | undefined
}

const A_SUFFIX = '.lora_a'
const B_SUFFIX = '.lora_b'

/** A broken file exits 3 (invalid model); a valid one asking for what runner does not do exits 5. */
const exitOf = (code: string) => (code === 'LORA_UNSUPPORTED' ? ExitCode.unsupported : ExitCode.invalidModel)

function refuse(file: GgufFile, key: string, detail: string, code = 'LORA_BAD_ADAPTER'): never {
  throw new GgufError(code, key, file.kvOffsets.get(key) ?? 0, detail, file.path, exitOf(code))
}

function refuseTensor(file: GgufFile, t: GgufTensorInfo, detail: string, code = 'LORA_BAD_ADAPTER'): never {
  throw new GgufError(code, `tensor ${quoted(t.name)}`, t.infoOffset, detail, file.path, exitOf(code))
}

/** Read and check an adapter file's header (no tensor data is read). */
export function readLoraAdapter(path: string): LoraAdapter {
  const file = readGgufFile(path)
  const meta = new GgufMetadata(file.metadata, file.kvOffsets, file.path)
  const generalType = meta.stringOr('general.type', undefined)
  if (generalType !== 'adapter')
    refuse(
      file,
      'general.type',
      generalType === undefined
        ? 'missing: this is not a LoRA adapter (llama.cpp requires general.type = "adapter")'
        : `is ${quoted(generalType)}, a LoRA adapter has "adapter"` +
            (generalType === 'model' ? ' (this file is a model: give it as -m)' : ''),
    )
  const adapterType = meta.stringOr('adapter.type', undefined)
  if (adapterType !== 'lora')
    refuse(
      file,
      'adapter.type',
      adapterType === undefined
        ? 'missing (llama.cpp requires adapter.type = "lora")'
        : `is ${quoted(adapterType)}; only "lora" adapters are supported`,
      'LORA_UNSUPPORTED',
    )
  if (meta.has('adapter.alora.invocation_tokens'))
    refuse(
      file,
      'adapter.alora.invocation_tokens',
      'an activated LoRA (applied only after its invocation tokens) is not supported; runner applies an adapter to every token',
      'LORA_UNSUPPORTED',
    )
  const architecture = meta.string('general.architecture')
  const alphaPresent = meta.has('adapter.lora.alpha')
  const alpha = alphaPresent ? meta.float('adapter.lora.alpha') : 0
  const halves = new Map<string, {a?: GgufTensorInfo; b?: GgufTensorInfo}>()
  for (const t of file.tensors) {
    const isA = t.name.endsWith(A_SUFFIX)
    if (!isA && !t.name.endsWith(B_SUFFIX)) {
      if (t.name.endsWith('_norm.weight'))
        refuseTensor(
          file,
          t,
          'norm vectors in an adapter are not supported (llama.cpp skips them; running the adapter without them would not be the adapter)',
          'LORA_UNSUPPORTED',
        )
      refuseTensor(file, t, 'a LoRA tensor name ends in .lora_a or .lora_b')
    }
    const target = t.name.slice(0, -A_SUFFIX.length)
    const half = halves.get(target) ?? {}
    half[isA ? 'a' : 'b'] = t
    halves.set(target, half)
  }
  const pairs: LoraTensorPair[] = []
  for (const [target, {a, b}] of halves) {
    if (!a || !b) refuseTensor(file, (a ?? b)!, `its pair ${quoted(target + (a ? B_SUFFIX : A_SUFFIX))} is missing`)
    if (a.shape.length !== 2 || b.shape.length !== 2)
      refuseTensor(file, a.shape.length !== 2 ? a : b, `has ${(a.shape.length !== 2 ? a : b).shape.length} dimensions; LoRA tensors have 2`)
    if (a.shape[1] !== b.shape[0])
      refuseTensor(
        file,
        b,
        `lora_a is [${a.shape.join(', ')}] and lora_b [${b.shape.join(', ')}]: their ranks (a's ne[1], b's ne[0]) differ` +
          ' (llama.cpp: "lora_a tensor is not transposed")',
      )
    pairs.push({target, a, b})
  }
  if (pairs.length === 0) throw new RunnerError('LORA_EMPTY', `${quoted(path)}: the adapter has no LoRA tensors`, ExitCode.invalidModel)
  return {
    path,
    fileSize: file.fileSize,
    architecture,
    alpha,
    alphaPresent,
    pairs,
    ranks: pairs.map((p) => p.a.shape[1]!),
    name: meta.stringOr('general.name', undefined),
  }
}
