import {ExitCode} from '../errors.js'
import {type GgufModelFiles, GgufMetadata, GgufValueType, isGgufArray, valueTypeName} from '../gguf/index.js'
import {printable, quoted} from '../util/index.js'
import {ARCHITECTURES} from './families.js'
import type {ConfigPatch, FeatureInput} from './features.js'
import {bad, HPARAM_LIMITS} from './hparams.js'
import {readDeclaredRope, resolveRope, type RopeOverrides} from './rope-scaling.js'
import type {ArchitectureSpec, ModelConfig, ModelPlan, TensorBinding} from './types.js'

export {ARCHITECTURES} from './families.js'
export {HPARAM_LIMITS} from './hparams.js'

/** The model's config with llama.cpp's rope overrides applied (the file's declaration is kept in ropeScaling). */
export function withRopeOverrides(config: ModelConfig, overrides: RopeOverrides | undefined): ModelConfig {
  if (!overrides || Object.values(overrides).every((v) => v === undefined)) return config
  const rope = resolveRope(config.ropeScaling.declared, overrides, config.nCtxTrain)
  return {...config, ...rope.fields, ropeScaling: rope.scaling}
}

/** ggml types the engine has kernels for (native typeTraits() agrees: test/native). */
export const ENGINE_WEIGHT_TYPES: ReadonlySet<string> = new Set([
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q8_1',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
  'Q8_K',
  'IQ4_NL',
  'MXFP4',
])

/**
 * Turn a GGUF model into what the engine loads: a config built from metadata (every value checked
 * by name) and every tensor bound to its role, its shape checked against the config. Refuses unknown
 * architectures, unsupported types, missing, misshapen or unexpected tensors, before anything is
 * allocated by the engine.
 */
export function planModel(model: GgufModelFiles): ModelPlan {
  const first = model.shards[0]!
  const meta = new GgufMetadata(model.metadata, first.kvOffsets, model.path)
  const archName = meta.has('general.architecture')
    ? meta.string('general.architecture')
    : bad('ARCH_MISSING', `${printable(model.path, {max: 1000})}: general.architecture is missing`)
  const spec = ARCHITECTURES.get(archName)
  if (!spec) {
    bad(
      'ARCH_UNSUPPORTED',
      `general.architecture ${quoted(archName)} is not supported (supported: ${[...ARCHITECTURES.keys()].join(', ')})`,
      ExitCode.unsupported,
    )
  }
  const config = buildConfig(meta, archName, spec, model)
  const files = model.shards.map((s) => s.path)
  return {config, files, tensors: bindTensors(model, spec, config, files)}
}

function buildConfig(meta: GgufMetadata, a: string, spec: ArchitectureSpec, model: GgufModelFiles): ModelConfig {
  const L = HPARAM_LIMITS
  refuseUnreadKeys(meta, a, spec)
  const nEmbd = meta.uint(`${a}.embedding_length`, {min: 1, max: L.nEmbd})
  const nLayer = meta.uint(`${a}.block_count`, {min: 1, max: L.nLayer})
  // Per-block arrays are how a removed sublayer is declared (llama.cpp's "deci" convention): 0 at
  // that block. Every other block must have the same count; other per-block shapes are refused.
  const nHeadPer = perBlock(model, meta, `${a}.attention.head_count`, nLayer, {min: 0, max: L.nHead})
  const nHead = uniform(nHeadPer, `${a}.attention.head_count`)
  const nHeadKvPer = model.metadata.has(`${a}.attention.head_count_kv`)
    ? perBlock(model, meta, `${a}.attention.head_count_kv`, nLayer, {min: 0, max: L.nHead})
    : nHeadPer
  const nHeadKv = uniform(nHeadKvPer, `${a}.attention.head_count_kv`)
  nHeadPer.forEach((h, i) => {
    if ((h === 0) !== (nHeadKvPer[i] === 0)) {
      bad(
        'ARCH_BAD_HPARAMS',
        `block ${i}: ${a}.attention.head_count ${h} and head_count_kv ${nHeadKvPer[i]} disagree on whether it has attention`,
      )
    }
  })
  const nFfPer = perBlock(model, meta, `${a}.feed_forward_length`, nLayer, {min: 0, max: L.nFf})
  const nFf = uniform(nFfPer, `${a}.feed_forward_length`)
  if (nHead % nHeadKv !== 0) {
    bad('ARCH_BAD_HPARAMS', `${a}.attention.head_count ${nHead} is not a multiple of ${a}.attention.head_count_kv ${nHeadKv}`)
  }
  let headDim: number
  let headDimSource: string
  if (meta.has(`${a}.attention.key_length`)) {
    headDim = meta.uint(`${a}.attention.key_length`, {min: 2, max: L.headDim})
    headDimSource = `${a}.attention.key_length ${headDim}`
  } else {
    if (nEmbd % nHead !== 0)
      bad('ARCH_BAD_HPARAMS', `${a}.embedding_length ${nEmbd} is not divisible by ${a}.attention.head_count ${nHead}`)
    headDim = nEmbd / nHead
    headDimSource = `${a}.embedding_length ${nEmbd} / ${a}.attention.head_count ${nHead}`
  }
  const valueLength = meta.uintOr(`${a}.attention.value_length`, headDim, {min: 1, max: L.headDim})
  if (valueLength !== headDim)
    bad('ARCH_UNSUPPORTED', `${a}.attention.value_length ${valueLength} differs from key_length ${headDim}`, ExitCode.unsupported)
  if (headDim % 2 !== 0 || headDim > L.headDim)
    bad('ARCH_BAD_HPARAMS', `head dimension ${headDim} (${headDimSource}) must be even and at most ${L.headDim}`)
  const nRot = meta.uintOr(`${a}.rope.dimension_count`, headDim, {min: 2, max: L.headDim})
  if (nRot > headDim || nRot % 2 !== 0)
    bad('ARCH_BAD_HPARAMS', `${a}.rope.dimension_count ${nRot} must be even and at most the head dimension ${headDim}`)
  const nCtxTrain = meta.uint(`${a}.context_length`, {min: 1, max: L.nCtx})
  // Rope scaling as llama.cpp reads it for every family (./rope-scaling.ts); overrides come later (withRopeOverrides).
  const declared = readDeclaredRope(
    meta,
    a,
    nCtxTrain,
    spec.features.flatMap((f) => f.ropeScalingTypes ?? []),
  )
  const rope = resolveRope(declared, {}, nCtxTrain)
  const {ropeFreqBase, ropeFreqScale} = rope.fields
  const normEps = meta.float(`${a}.attention.layer_norm_rms_epsilon`, {min: 0, max: 1})

  const tokens = model.metadata.get('tokenizer.ggml.tokens')
  if (!tokens || !isGgufArray(tokens.value) || tokens.value.itemType !== GgufValueType.STRING) {
    const found = !tokens
      ? 'it is missing'
      : isGgufArray(tokens.value)
        ? `found an array of ${valueTypeName(tokens.value.itemType)}`
        : `found ${valueTypeName(tokens.type)}`
    bad('ARCH_BAD_VOCAB', `tokenizer.ggml.tokens must be an array of strings; ${found}`)
  }
  const nVocab = tokens.value.items.length
  if (nVocab < 1 || nVocab > L.nVocab) bad('ARCH_BAD_VOCAB', `tokenizer.ggml.tokens has ${nVocab} entries, outside [1, ${L.nVocab}]`)
  if (meta.has(`${a}.vocab_size`)) {
    const declared = meta.uint(`${a}.vocab_size`)
    if (declared !== nVocab) bad('ARCH_BAD_VOCAB', `${a}.vocab_size ${declared} disagrees with tokenizer.ggml.tokens (${nVocab} entries)`)
  }
  // Tied: the family's table has no output tensor (gemma2: llama.cpp never reads one), or the file has none.
  const tied = !spec.tensors.some((t) => t.role === 'output') || !model.tensors.some((t) => t.name === 'output.weight')
  const input: FeatureInput = {meta, model, arch: a, base: {nEmbd, nLayer, nHead, headDim, nFf, ropeFreqBase, ropeFreqScale}}
  const features = spec.features.reduce<ConfigPatch>((patch, f) => ({...patch, ...f.read?.(input)}), {})
  return {
    architecture: a,
    nVocab,
    nEmbd,
    nLayer,
    nHead,
    nHeadKv,
    headDim,
    nFf,
    nCtxTrain,
    nRot,
    ropeType: spec.ropeType,
    ...rope.fields,
    ropeScaling: rope.scaling,
    normEps,
    tiedEmbeddings: tied,
    attnRemoved: nHeadPer.map((h) => h === 0),
    ffnRemoved: nFfPer.map((f) => f === 0),
    ...features,
  }
}

/**
 * Metadata that changes the math (the features' guards: sliding-window keys) is refused when no
 * feature of the family reads it, naming the families that implement it, so it is never ignored.
 */
function refuseUnreadKeys(meta: GgufMetadata, a: string, spec: ArchitectureSpec): void {
  const read = new Set(spec.features.flatMap((f) => [...(f.guards ?? []).map((g) => g.key), ...(f.ignores ?? [])]))
  const families = [...ARCHITECTURES.values()]
  const guarded = new Map(families.flatMap((x) => x.features.flatMap((f) => (f.guards ?? []).map((g) => [g.key, g.what] as const))))
  for (const [guard, what] of guarded) {
    const key = `${a}.${guard}`
    if (read.has(guard) || !meta.has(key)) continue
    const implementing = families.filter((x) => x.features.some((f) => f.guards?.some((g) => g.key === guard))).map((x) => x.name)
    bad('ARCH_UNSUPPORTED', `${key}: ${what} is not supported for ${a} (only ${implementing.join(', ')})`, ExitCode.unsupported)
  }
}

/** A scalar (the same for every block) or an array of one value per block. */
function perBlock(model: GgufModelFiles, meta: GgufMetadata, key: string, nLayer: number, range: {min: number; max: number}): number[] {
  const kv = model.metadata.get(key)
  if (kv && isGgufArray(kv.value)) {
    const items = Array.from(kv.value.items as ArrayLike<number | bigint>, Number)
    if (items.length !== nLayer) bad('ARCH_BAD_HPARAMS', `${key} has ${items.length} entries for ${nLayer} blocks`)
    items.forEach((v, i) => {
      if (!Number.isInteger(v) || v < range.min || v > range.max)
        bad('ARCH_BAD_HPARAMS', `${key}[${i}] is ${v}, outside [${range.min}, ${range.max}]`)
    })
    return items
  }
  return Array.from({length: nLayer}, () => meta.uint(key, {min: 1, max: range.max}))
}

/** The one nonzero value of a per-block list; blocks with 0 have the sublayer removed. */
function uniform(values: readonly number[], key: string): number {
  const nonzero = [...new Set(values.filter((v) => v !== 0))]
  if (nonzero.length === 0) bad('ARCH_BAD_HPARAMS', `${key} is 0 in every block: no block has this sublayer`)
  if (nonzero.length > 1)
    bad(
      'ARCH_UNSUPPORTED',
      `${key} differs between blocks (${nonzero.join(', ')}); only 0 (removed) or one common value is supported`,
      ExitCode.unsupported,
    )
  return nonzero[0]!
}

function bindTensors(model: GgufModelFiles, spec: ArchitectureSpec, config: ModelConfig, files: string[]): TensorBinding[] {
  const byName = new Map(model.tensors.map((t) => [t.name, t]))
  const used = new Set<string>()
  const out: TensorBinding[] = []
  for (const s of spec.tensors) {
    if (s.when && !s.when(config)) continue
    const layers = s.layers ? s.layers(config) : s.perLayer ? Array.from({length: config.nLayer}, (_, i) => i) : [-1]
    for (const layer of layers) {
      const name = s.name.replace('{L}', String(layer))
      const t = byName.get(name)
      // Experts in the legacy split layout: one 2-D tensor per expert, bound to the same role.
      const splitName = (e: number) => s.split!.replace('{L}', String(layer)).replace('{E}', String(e))
      if (s.split && byName.has(splitName(0))) {
        if (t) bad('ARCH_BAD_TENSOR_SHAPE', `tensor ${name} and the split expert tensors ${splitName(0)}, ... are both present`)
        const removedHere = (s.sublayer === 'ffn' && config.ffnRemoved[layer]) || (s.sublayer === 'attn' && config.attnRemoved[layer])
        if (removedHere) bad('ARCH_SUBLAYER_PRESENT', `tensor ${splitName(0)} is present but block ${layer}'s FFN is declared removed`)
        const want = s.shape(config).slice(0, 2)
        for (let e = 0; e < config.nExpert!; e++) {
          const en = splitName(e)
          const et =
            byName.get(en) ?? bad('ARCH_MISSING_TENSOR', `tensor ${en} is missing (expert ${e} of ${config.nExpert}, split layout)`)
          used.add(en)
          out.push(checkedBinding(et, en, s, layer, want, files, e))
        }
        continue
      }
      const removed =
        layer >= 0 && ((s.sublayer === 'attn' && config.attnRemoved[layer]) || (s.sublayer === 'ffn' && config.ffnRemoved[layer]))
      // A removed sublayer keeps at most its norms, which it no longer uses (the engine refuses anything else of it too).
      if (removed && !s.preNorm && !s.postNorm) {
        if (t) {
          const why = s.sublayer === 'attn' ? 'attention.head_count is 0 there' : 'feed_forward_length is 0 there'
          bad(
            'ARCH_SUBLAYER_PRESENT',
            `tensor ${name} is present but block ${layer}'s ${s.sublayer === 'attn' ? 'attention' : 'FFN'} is declared removed (${why})`,
          )
        }
        continue
      }
      if (!t) {
        if (s.optional || removed) continue
        bad('ARCH_MISSING_TENSOR', `tensor ${name} is missing${s.split ? ` (nor split per expert as ${splitName(0)}, ...)` : ''}`)
      }
      used.add(name)
      out.push(checkedBinding(t, name, s, layer, s.shape(config), files))
    }
  }
  const extra = model.tensors.find((t) => !used.has(t.name))
  if (extra)
    bad(
      'ARCH_UNKNOWN_TENSOR',
      `tensor ${printable(extra.name)} is not part of the ${spec.name} architecture as the engine knows it`,
      ExitCode.unsupported,
    )
  return out
}

/** One tensor's shape (trailing 1s ignored, as ggml pads) and type checked, then its binding. */
function checkedBinding(
  t: GgufModelFiles['tensors'][number],
  name: string,
  s: ArchitectureSpec['tensors'][number],
  layer: number,
  want: readonly number[],
  files: string[],
  expert?: number,
): TensorBinding {
  const got = [...t.shape]
  while (got.length > want.length && got[got.length - 1] === 1) got.pop()
  if (got.length !== want.length || got.some((d, i) => d !== want[i])) {
    bad('ARCH_BAD_TENSOR_SHAPE', `tensor ${name} has shape [${t.shape.join(', ')}], the metadata implies [${want.join(', ')}]`)
  }
  if (!ENGINE_WEIGHT_TYPES.has(t.type.name)) {
    bad(
      'ARCH_UNSUPPORTED_TYPE',
      `tensor ${name} is ${t.type.name}, which the engine does not support yet (${[...ENGINE_WEIGHT_TYPES].join(', ')})`,
      ExitCode.unsupported,
    )
  }
  if (s.f32Only && t.type.name !== 'F32') {
    bad('ARCH_UNSUPPORTED_TYPE', `tensor ${name} is ${t.type.name}; norm weights must be F32`, ExitCode.unsupported)
  }
  return {
    name,
    role: s.role,
    layer,
    type: t.type,
    shape: t.shape,
    file: files.indexOf(t.file),
    offset: t.offset,
    byteSize: t.byteSize,
    ...(expert !== undefined ? {expert} : {}),
  }
}
