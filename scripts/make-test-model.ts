/**
 * Writes deterministic random-weight GGUF models for tests and benchmarks.
 *
 *   npx tsx scripts/make-test-model.ts --out /tmp/tiny.gguf --n-embd 128 --n-layer 2 --n-head 8 \
 *     --n-head-kv 2 --n-ff 352 --context 256 --type f16 --seed 7
 *
 * The tokenizer metadata (every `tokenizer.*` key) is copied from an existing GGUF, by default
 * ../shared/models/stories260K.gguf, so the model tokenizes real text. Weights follow the shared
 * fixtures' initialisation: projections N(0, 1/in), norms 1 + N(0, 0.05²), embeddings N(0, 0.5²),
 * output N(0, 9/n_embd). Each tensor draws from its own stream (seed + tensor name), so a tensor's
 * bytes do not depend on the shape of the others. 1-D tensors stay F32, as llama.cpp writes them.
 *
 * Quantized types (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k..q6_k, iq4_nl, mxfp4) quantize the very float32 weights the f32 model of
 * the same seed holds, with the engine's weight quantizer (bit-identical to llama.cpp's
 * quantize_row_*_ref, through the native addon), as `llama-quantize --pure` would: every 2-D
 * tensor gets the type, except one whose ne0 is not a multiple of 32, which falls back to F16.
 * Tensors are generated and quantized a chunk of rows at a time, so memory stays flat.
 */
import {resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {quantizeRef} from '../src/lib/engine/index.js'
import {GgmlType, type GgmlTypeInfo, ggmlTypeById, type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../src/lib/gguf/index.js'
import {f32ToF16Bits} from '../src/lib/util/half.js'
import {deriveSeed, SeededRandom} from '../src/lib/util/random.js'

/** Families the writer knows (mixtral is `general.architecture = llama` with experts). */
export const TEST_MODEL_ARCHS = ['llama', 'qwen2', 'qwen3', 'granite', 'phi3', 'gemma2', 'gemma3', 'qwen3moe', 'mixtral'] as const
export type TestModelArch = (typeof TEST_MODEL_ARCHS)[number]

export interface TestModelSpec {
  readonly arch: TestModelArch
  readonly nEmbd: number
  readonly nLayer: number
  readonly nHead: number
  readonly nHeadKv: number
  readonly nFf: number
  readonly nCtx: number
  /** Weight type of the 2-D tensors. */
  readonly type: TestModelType
  readonly seed: bigint
  /** GGUF whose `tokenizer.*` metadata is copied. */
  readonly tokenizerFrom: string
  /** Pad the copied vocabulary with unused tokens up to this size (benchmarks want 32000). */
  readonly nVocab?: number
  readonly ropeFreqBase?: number
  readonly rmsEps?: number
  /** Leave out output.weight so the model ties its head to token_embd (gemma2 always is). */
  readonly tied?: boolean
  readonly name?: string
  /** Per-head width (attention.key_length/value_length); default nEmbd / nHead. */
  readonly headDim?: number
  /** Mixture of experts (qwen3moe, mixtral): experts per block, used per token, expert width (qwen3moe; mixtral uses nFf). */
  readonly nExpert?: number
  readonly nExpertUsed?: number
  readonly nFfExp?: number
  /** Experts fused in 3-D tensors (default) or one 2-D tensor per expert (the legacy layout; llama.cpp no longer loads it). */
  readonly expertLayout?: 'fused' | 'split'
  /** Every expert holds the dense FFN of the same seed (blk.N.ffn_{gate,up,down}.weight's stream): the MoE anchor. */
  readonly identicalExperts?: boolean
  /** gemma: the window and (gemma3) its pattern and rope base on sliding blocks; gemma2's soft-caps. */
  readonly slidingWindow?: number
  /** A period, or one flag per block (llama.cpp reads either). */
  readonly slidingWindowPattern?: number | readonly boolean[]
  readonly ropeBaseSwa?: number
  readonly attnSoftcap?: number
  readonly finalSoftcap?: number
  /** phi3 longrope: rope_factors_long/short tensors, rope.scaling.attn_factor and original_context_length. */
  readonly longrope?: {readonly originalContext: number; readonly attnFactor: number}
}

/** granite's multipliers in the files we write (the shared fixture's values). */
const GRANITE = {embeddingScale: 12, residualScale: 0.22, attentionScale: 0.125, logitScale: 4}

export const DEFAULT_TOKENIZER = resolve(fileURLToPath(import.meta.url), '../../../shared/models/stories260K.gguf')

const TOKEN_TYPE_UNUSED = 5

export const TEST_MODEL_TYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k', 'iq4_nl', 'mxfp4'] as const
export type TestModelType = (typeof TEST_MODEL_TYPES)[number]

const WEIGHT_TYPES: Record<TestModelType, GgmlTypeInfo> = {
  f32: ggmlTypeById(GgmlType.F32)!,
  f16: ggmlTypeById(GgmlType.F16)!,
  bf16: ggmlTypeById(GgmlType.BF16)!,
  q8_0: ggmlTypeById(GgmlType.Q8_0)!,
  q4_0: ggmlTypeById(GgmlType.Q4_0)!,
  q4_1: ggmlTypeById(GgmlType.Q4_1)!,
  q5_0: ggmlTypeById(GgmlType.Q5_0)!,
  q5_1: ggmlTypeById(GgmlType.Q5_1)!,
  q2_k: ggmlTypeById(GgmlType.Q2_K)!,
  q3_k: ggmlTypeById(GgmlType.Q3_K)!,
  q4_k: ggmlTypeById(GgmlType.Q4_K)!,
  q5_k: ggmlTypeById(GgmlType.Q5_K)!,
  q6_k: ggmlTypeById(GgmlType.Q6_K)!,
  iq4_nl: ggmlTypeById(GgmlType.IQ4_NL)!,
  mxfp4: ggmlTypeById(GgmlType.MXFP4)!,
}
/**
 * general.file_type: llama.cpp's LLAMA_FTYPE_ALL_F32, _MOSTLY_F16, _MOSTLY_BF16, _MOSTLY_Q8_0, _Q4_0, _Q4_1, _Q5_0, _Q5_1;
 * for the K-quants what `llama-quantize --pure` writes for the all-one-type mix: _Q2_K (10), _Q3_K_S (11),
 * _Q4_K_S (14), _Q5_K_S (16), _Q6_K (18); _IQ4_NL (25) and _MXFP4_MOE (38).
 */
const FILE_TYPES: Record<TestModelType, number> = {f32: 0, f16: 1, bf16: 32, q8_0: 7, q4_0: 2, q4_1: 3, q5_0: 8, q5_1: 9, q2_k: 10, q3_k: 11, q4_k: 14, q5_k: 16, q6_k: 18, iq4_nl: 25, mxfp4: 38}
/** llama.cpp's GGML_QNT_VERSION, written as general.quantization_version in quantized files. */
const QUANTIZATION_VERSION = 2
const isQuantized = (t: TestModelType) => t !== 'f32' && t !== 'f16' && t !== 'bf16'

interface TensorPlan {
  name: string
  shape: number[]
  /** Returns the next weight; called shape-product times in ggml order. */
  init: (rng: SeededRandom) => number
  /** Never quantized (the MoE router, as llama-quantize keeps ffn_gate_inp). */
  keepF32?: boolean
}

function validate(s: TestModelSpec): void {
  const positive = {nEmbd: s.nEmbd, nLayer: s.nLayer, nHead: s.nHead, nHeadKv: s.nHeadKv, nFf: s.nFf, nCtx: s.nCtx}
  for (const [k, v] of Object.entries(positive)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${k} must be a positive integer, got ${v}`)
  }
  if (s.headDim === undefined && s.nEmbd % s.nHead !== 0) throw new Error(`nEmbd ${s.nEmbd} is not divisible by nHead ${s.nHead}`)
  if (!TEST_MODEL_ARCHS.includes(s.arch)) throw new Error(`arch ${String(s.arch)} is not one of ${TEST_MODEL_ARCHS.join(', ')}`)
  if (s.arch === 'qwen3moe' || s.arch === 'mixtral') {
    const n = s.nExpert ?? 0
    const k = s.nExpertUsed ?? 0
    if (n < 1 || k < 1 || k > n) throw new Error(`${s.arch} needs 1 <= nExpertUsed (${k}) <= nExpert (${n})`)
    if (s.arch === 'qwen3moe' && !(s.nFfExp! >= 1)) throw new Error('qwen3moe needs nFfExp')
  }
  if (s.nHead % s.nHeadKv !== 0) throw new Error(`nHead ${s.nHead} is not a multiple of nHeadKv ${s.nHeadKv}`)
}

function plan(s: TestModelSpec, nVocab: number): TensorPlan[] {
  const a = s.arch
  const headDim = s.headDim ?? s.nEmbd / s.nHead
  const qDim = headDim * s.nHead
  const kvDim = headDim * s.nHeadKv
  const normal = (std: number, mean = 0) => (rng: SeededRandom) => mean + std * rng.normal()
  const proj = (nIn: number) => normal(1 / Math.sqrt(nIn))
  const norm = normal(0.05, 1)
  const gemma = a === 'gemma2' || a === 'gemma3'
  const moe = a === 'qwen3moe' || a === 'mixtral'
  const tied = s.tied || a === 'gemma2'
  // As the shared fixtures: a tied non-llama model gets token_embd N(0, 1/n_embd) and output_norm
  // centred on 3 (llama keeps its historical initialisation); gemma's post-norms are centred on 4.
  const fixtureTied = tied && a !== 'llama'
  const logitScale = a === 'granite' ? GRANITE.logitScale : 1
  const tensors: TensorPlan[] = [
    {name: 'token_embd.weight', shape: [s.nEmbd, nVocab], init: fixtureTied ? normal(1 / Math.sqrt(s.nEmbd)) : normal(0.5)},
    {name: 'output_norm.weight', shape: [s.nEmbd], init: fixtureTied ? normal(0.05, 3) : norm},
  ]
  if (!tied) tensors.push({name: 'output.weight', shape: [s.nEmbd, nVocab], init: normal((3 * logitScale) / Math.sqrt(s.nEmbd))})
  if (s.longrope) {
    // Frequency divisors >= 1, as Phi-3's: large for the long-context set, near 1 for the short one.
    tensors.push(
      {name: 'rope_factors_long.weight', shape: [headDim / 2], init: (rng) => 1 + 4 * Math.abs(rng.normal())},
      {name: 'rope_factors_short.weight', shape: [headDim / 2], init: (rng) => 1 + 0.25 * Math.abs(rng.normal())},
    )
  }
  for (let i = 0; i < s.nLayer; i++) {
    const b = `blk.${i}`
    tensors.push({name: `${b}.attn_norm.weight`, shape: [s.nEmbd], init: norm})
    if (a === 'phi3') {
      tensors.push({name: `${b}.attn_qkv.weight`, shape: [s.nEmbd, qDim + 2 * kvDim], init: proj(s.nEmbd)})
    } else {
      tensors.push(
        {name: `${b}.attn_q.weight`, shape: [s.nEmbd, qDim], init: proj(s.nEmbd)},
        {name: `${b}.attn_k.weight`, shape: [s.nEmbd, kvDim], init: proj(s.nEmbd)},
        {name: `${b}.attn_v.weight`, shape: [s.nEmbd, kvDim], init: proj(s.nEmbd)},
      )
    }
    if (a === 'qwen2') {
      tensors.push(
        {name: `${b}.attn_q.bias`, shape: [qDim], init: normal(0.5)},
        {name: `${b}.attn_k.bias`, shape: [kvDim], init: normal(0.5)},
        {name: `${b}.attn_v.bias`, shape: [kvDim], init: normal(0.5)},
      )
    }
    if (a === 'qwen3' || a === 'qwen3moe' || a === 'gemma3') {
      tensors.push({name: `${b}.attn_q_norm.weight`, shape: [headDim], init: norm}, {name: `${b}.attn_k_norm.weight`, shape: [headDim], init: norm})
    }
    tensors.push({name: `${b}.attn_output.weight`, shape: [qDim, s.nEmbd], init: proj(qDim)})
    if (gemma) tensors.push({name: `${b}.post_attention_norm.weight`, shape: [s.nEmbd], init: normal(0.05, 4)})
    tensors.push({name: `${b}.ffn_norm.weight`, shape: [s.nEmbd], init: norm})
    if (moe) {
      tensors.push(...expertTensors(s, b))
    } else if (a === 'phi3') {
      tensors.push({name: `${b}.ffn_up.weight`, shape: [s.nEmbd, 2 * s.nFf], init: proj(s.nEmbd)})
    } else {
      tensors.push({name: `${b}.ffn_gate.weight`, shape: [s.nEmbd, s.nFf], init: proj(s.nEmbd)}, {name: `${b}.ffn_up.weight`, shape: [s.nEmbd, s.nFf], init: proj(s.nEmbd)})
    }
    if (!moe) tensors.push({name: `${b}.ffn_down.weight`, shape: [s.nFf, s.nEmbd], init: proj(s.nFf)})
    if (gemma) tensors.push({name: `${b}.post_ffw_norm.weight`, shape: [s.nEmbd], init: normal(0.05, 4)})
  }
  return tensors
}

/**
 * A block's router and experts. Expert e of ffn_gate draws from the stream named like its tensor in
 * the split layout (blk.N.ffn_gate.E.weight), so the fused and split files hold the same weights; with
 * identicalExperts every expert draws the dense blk.N.ffn_gate.weight stream instead.
 */
function expertTensors(s: TestModelSpec, b: string): TensorPlan[] {
  const nExpert = s.nExpert!
  const nFf = s.arch === 'qwen3moe' ? s.nFfExp! : s.nFf
  const out: TensorPlan[] = [{name: `${b}.ffn_gate_inp.weight`, shape: [s.nEmbd, nExpert], init: (rng) => (2 / Math.sqrt(s.nEmbd)) * rng.normal(), keepF32: true}]
  for (const [kind, nIn, nOut] of [['gate', s.nEmbd, nFf], ['up', s.nEmbd, nFf], ['down', nFf, s.nEmbd]] as const) {
    const std = 1 / Math.sqrt(nIn)
    const stream = (e: number) => (s.identicalExperts ? `${b}.ffn_${kind}.weight` : `${b}.ffn_${kind}.${e}.weight`)
    if (s.expertLayout === 'split') {
      for (let e = 0; e < nExpert; e++) {
        const own = stream(e)
        out.push({name: `${b}.ffn_${kind}.${e}.weight`, shape: [nIn, nOut], init: slabs(s.seed, nIn * nOut, () => own, std)})
      }
    } else {
      out.push({name: `${b}.ffn_${kind}_exps.weight`, shape: [nIn, nOut, nExpert], init: slabs(s.seed, nIn * nOut, stream, std)})
    }
  }
  return out
}

/** Values of N(0, std²), slab k (of `per` values) drawn from the stream named stream(k). */
function slabs(seed: bigint, per: number, stream: (k: number) => string, std: number): TensorPlan['init'] {
  let last: SeededRandom | undefined
  let n = 0
  let rng: SeededRandom | undefined
  return (writerRng) => {
    if (writerRng !== last) {
      last = writerRng // a new pass over the tensor starts again
      n = 0
    }
    if (n % per === 0) rng = new SeededRandom(deriveSeed(seed, stream(n / per)))
    n++
    return std * rng!.normal()
  }
}

/** Encode the weights of `t` from `init` in `type`, in chunks, so huge tensors stream. */
function* weights(t: TensorPlan, type: GgmlTypeInfo, seed: bigint, fromF32: boolean): Iterable<Uint8Array> {
  const rng = new SeededRandom(deriveSeed(seed, t.name))
  const total = t.shape.reduce((a, b) => a * b, 1)
  if (type.id !== GgmlType.F32 && (type.id !== GgmlType.F16 || fromF32)) {
    // Through float32, as llama.cpp quantizes an F32 model: whole rows per chunk.
    const ne0 = t.shape[0]!
    const rows = Math.max(1, Math.floor((1 << 18) / ne0))
    for (let done = 0; done < total; done += rows * ne0) {
      const n = Math.min(rows * ne0, total - done)
      const out = new Float32Array(n)
      for (let i = 0; i < n; i++) out[i] = t.init(rng)
      yield quantizeRef(type, out)
    }
    return
  }
  const chunk = 1 << 18
  for (let done = 0; done < total; done += chunk) {
    const n = Math.min(chunk, total - done)
    if (type.id === GgmlType.F32) {
      const out = new Float32Array(n)
      for (let i = 0; i < n; i++) out[i] = t.init(rng)
      yield new Uint8Array(out.buffer)
    } else {
      const out = new Uint16Array(n)
      for (let i = 0; i < n; i++) out[i] = f32ToF16Bits(t.init(rng))
      yield new Uint8Array(out.buffer)
    }
  }
}

/**
 * llama.cpp's tensor_type_fallback (src/llama-quant.cpp), which applies in --pure mode too: a K-quant
 * whose 256-value blocks do not divide ne0 becomes Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1,
 * Q6_K -> Q8_0, and F16 when that does not fit either.
 */
const K_FALLBACK: Partial<Record<TestModelType, TestModelType>> = {q2_k: 'q4_0', q3_k: 'q4_0', q4_k: 'q5_0', q5_k: 'q5_1', q6_k: 'q8_0'}

/** The type a tensor is written in: 1-D stay F32; quantized types fall back (K_FALLBACK, then F16) where ne0 is not a multiple of the block. */
function tensorType(shape: readonly number[], type: TestModelType): GgmlTypeInfo {
  if (shape.length === 1) return WEIGHT_TYPES.f32
  const want = WEIGHT_TYPES[type]
  if (shape[0]! % want.blockSize === 0) return want
  const fallback = K_FALLBACK[type]
  return fallback && shape[0]! % WEIGHT_TYPES[fallback].blockSize === 0 ? WEIGHT_TYPES[fallback] : WEIGHT_TYPES.f16
}

function tokenizerKvs(path: string, nVocab: number | undefined): {kvs: GgufKv[]; nVocab: number} {
  const src = readGgufModel(path)
  const kvs = src.kvs.filter((kv) => kv.key.startsWith('tokenizer.'))
  const tokens = kvs.find((kv) => kv.key === 'tokenizer.ggml.tokens')
  if (!tokens || typeof tokens.value !== 'object') throw new Error(`${path} has no tokenizer.ggml.tokens array`)
  const have = tokens.value.items.length
  if (nVocab === undefined || nVocab === have) return {kvs, nVocab: have}
  if (nVocab < have) throw new Error(`nVocab ${nVocab} is smaller than the source vocabulary (${have})`)
  const extra = nVocab - have
  const padded = kvs.map((kv): GgufKv => {
    const items = typeof kv.value === 'object' ? kv.value.items : undefined
    if (!items || items.length !== have) return kv
    switch (kv.key) {
      case 'tokenizer.ggml.tokens':
        return {...kv, value: {itemType: GgufValueType.STRING, items: [...(items as string[]), ...Array.from({length: extra}, (_, i) => `<unused${i}>`)]}}
      case 'tokenizer.ggml.scores': {
        const scores = new Float32Array(nVocab)
        scores.set(items as Float32Array)
        return {...kv, value: {itemType: GgufValueType.FLOAT32, items: scores}}
      }
      case 'tokenizer.ggml.token_type': {
        const types = new Int32Array(nVocab).fill(TOKEN_TYPE_UNUSED)
        types.set(items as Int32Array)
        return {...kv, value: {itemType: GgufValueType.INT32, items: types}}
      }
      default:
        throw new Error(`cannot pad per-token array ${kv.key}`)
    }
  })
  return {kvs: padded, nVocab}
}

export async function makeTestModel(out: string, spec: TestModelSpec, onProgress?: (done: number, total: number) => void): Promise<void> {
  validate(spec)
  const {kvs: tokenizer, nVocab} = tokenizerKvs(spec.tokenizerFrom, spec.nVocab)
  const a = spec.arch === 'mixtral' ? 'llama' : spec.arch
  const headDim = spec.headDim ?? spec.nEmbd / spec.nHead
  const u32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.UINT32, value})
  const f32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.FLOAT32, value})
  const str = (key: string, value: string): GgufKv => ({key, type: GgufValueType.STRING, value})
  const kvs: GgufKv[] = [
    str('general.architecture', a),
    str('general.type', 'model'),
    // llama.cpp's vocab loader special-cases a general.name containing "phi3" (README: fixture-phi).
    str('general.name', spec.name ?? `runner-test-${spec.arch === 'phi3' ? 'fused-qkv' : spec.arch}`),
    u32('general.file_type', FILE_TYPES[spec.type]),
    ...(isQuantized(spec.type) ? [u32('general.quantization_version', QUANTIZATION_VERSION)] : []),
    u32(`${a}.vocab_size`, nVocab),
    u32(`${a}.context_length`, spec.nCtx),
    u32(`${a}.embedding_length`, spec.nEmbd),
    u32(`${a}.block_count`, spec.nLayer),
    u32(`${a}.feed_forward_length`, spec.nFf),
    u32(`${a}.attention.head_count`, spec.nHead),
    u32(`${a}.attention.head_count_kv`, spec.nHeadKv),
    u32(`${a}.rope.dimension_count`, headDim),
    f32(`${a}.rope.freq_base`, spec.ropeFreqBase ?? 10000),
    f32(`${a}.attention.layer_norm_rms_epsilon`, spec.rmsEps ?? 1e-5),
    ...familyKvs(spec, a, headDim),
    ...tokenizer,
  ]
  if (!TEST_MODEL_TYPES.includes(spec.type)) throw new Error(`type ${String(spec.type)} is not one of ${TEST_MODEL_TYPES.join(', ')}`)
  const tensors = plan(spec, nVocab).map((t) => {
    const type = t.keepF32 ? WEIGHT_TYPES.f32 : tensorType(t.shape, spec.type)
    return {name: t.name, type, shape: t.shape, data: () => weights(t, type, spec.seed, isQuantized(spec.type))}
  })
  await writeGguf(out, {kvs, tensors}, {inputs: [spec.tokenizerFrom], onProgress})
}

/** The metadata each family adds (keys as llama.cpp's llama-arch.cpp names them). */
function familyKvs(spec: TestModelSpec, a: string, headDim: number): GgufKv[] {
  const u32 = (key: string, value: number): GgufKv => ({key: `${a}.${key}`, type: GgufValueType.UINT32, value})
  const f32 = (key: string, value: number): GgufKv => ({key: `${a}.${key}`, type: GgufValueType.FLOAT32, value})
  const kvs: GgufKv[] = []
  if (spec.headDim !== undefined) kvs.push(u32('attention.key_length', headDim), u32('attention.value_length', headDim))
  switch (spec.arch) {
    case 'granite':
      kvs.push(
        f32('embedding_scale', GRANITE.embeddingScale),
        f32('residual_scale', GRANITE.residualScale),
        f32('attention.scale', GRANITE.attentionScale),
        f32('logit_scale', GRANITE.logitScale),
      )
      break
    case 'gemma2':
      kvs.push(u32('attention.sliding_window', spec.slidingWindow ?? 8), f32('attn_logit_softcapping', spec.attnSoftcap ?? 5), f32('final_logit_softcapping', spec.finalSoftcap ?? 10))
      break
    case 'gemma3':
      kvs.push(
        u32('attention.sliding_window', spec.slidingWindow ?? 8),
        typeof spec.slidingWindowPattern === 'object'
          ? {key: `${a}.attention.sliding_window_pattern`, type: GgufValueType.ARRAY, value: {itemType: GgufValueType.BOOL, items: [...spec.slidingWindowPattern]}}
          : u32('attention.sliding_window_pattern', spec.slidingWindowPattern ?? 2),
        f32('rope.freq_base_swa', spec.ropeBaseSwa ?? 10000),
      )
      break
    case 'qwen3moe':
      kvs.push(u32('expert_count', spec.nExpert!), u32('expert_used_count', spec.nExpertUsed!), u32('expert_feed_forward_length', spec.nFfExp!))
      break
    case 'mixtral':
      kvs.push(u32('expert_count', spec.nExpert!), u32('expert_used_count', spec.nExpertUsed!))
      break
    default:
      break
  }
  if (spec.longrope) {
    kvs.push(
      {key: `${a}.rope.scaling.type`, type: GgufValueType.STRING, value: 'longrope'},
      f32('rope.scaling.attn_factor', spec.longrope.attnFactor),
      u32('rope.scaling.original_context_length', spec.longrope.originalContext),
    )
  }
  return kvs
}

const USAGE = `usage: tsx scripts/make-test-model.ts --out FILE [--arch llama] [--n-embd 128] [--n-layer 2]
  [--n-head 8] [--n-head-kv 2] [--n-ff 352] [--context 256] [--type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k|iq4_nl|mxfp4] [--seed 1]
  [--vocab N] [--tokenizer-from FILE.gguf] [--tied] [--rope-base 10000] [--eps 1e-5] [--name NAME]
  [--arch llama|qwen2|qwen3|granite|phi3|gemma2|gemma3|qwen3moe|mixtral] [--head-dim N]
  [--experts N --experts-used K [--expert-ff N] [--split-experts] [--identical-experts]]
  [--sliding-window N] [--sliding-window-pattern N]

TinyLlama-1.1B shape: --n-embd 2048 --n-layer 22 --n-head 32 --n-head-kv 4 --n-ff 5632 --vocab 32000 --context 2048`

async function main(): Promise<void> {
  const {values} = parseArgs({
    options: {
      out: {type: 'string'},
      arch: {type: 'string', default: 'llama'},
      'n-embd': {type: 'string', default: '128'},
      'n-layer': {type: 'string', default: '2'},
      'n-head': {type: 'string', default: '8'},
      'n-head-kv': {type: 'string', default: '2'},
      'n-ff': {type: 'string', default: '352'},
      context: {type: 'string', default: '256'},
      type: {type: 'string', default: 'f32'},
      seed: {type: 'string', default: '1'},
      vocab: {type: 'string'},
      'tokenizer-from': {type: 'string', default: DEFAULT_TOKENIZER},
      tied: {type: 'boolean', default: false},
      'rope-base': {type: 'string', default: '10000'},
      eps: {type: 'string', default: '1e-5'},
      name: {type: 'string'},
      'head-dim': {type: 'string'},
      experts: {type: 'string'},
      'experts-used': {type: 'string'},
      'expert-ff': {type: 'string'},
      'split-experts': {type: 'boolean', default: false},
      'identical-experts': {type: 'boolean', default: false},
      'sliding-window': {type: 'string'},
      'sliding-window-pattern': {type: 'string'},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  })
  if (values.help || !values.out) {
    console.error(USAGE)
    process.exit(values.help ? 0 : 2)
  }
  const arch = TEST_MODEL_ARCHS.find((x) => x === values.arch)
  if (!arch) throw new Error(`--arch ${values.arch} is not supported (${TEST_MODEL_ARCHS.join(', ')})`)
  const type = TEST_MODEL_TYPES.find((t) => t === values.type)
  if (!type) throw new Error(`--type ${values.type} is not supported (${TEST_MODEL_TYPES.join(', ')})`)
  const int = (flag: string, v: string) => {
    const n = Number(v)
    if (!Number.isSafeInteger(n)) throw new Error(`--${flag} must be an integer, got ${v}`)
    return n
  }
  const opt = (flag: string, v: string | undefined) => (v === undefined ? undefined : int(flag, v))
  const spec: TestModelSpec = {
    arch,
    headDim: opt('head-dim', values['head-dim']),
    nExpert: opt('experts', values.experts),
    nExpertUsed: opt('experts-used', values['experts-used']),
    nFfExp: opt('expert-ff', values['expert-ff']),
    expertLayout: values['split-experts'] ? 'split' : 'fused',
    identicalExperts: values['identical-experts'],
    slidingWindow: opt('sliding-window', values['sliding-window']),
    slidingWindowPattern: opt('sliding-window-pattern', values['sliding-window-pattern']),
    nEmbd: int('n-embd', values['n-embd']),
    nLayer: int('n-layer', values['n-layer']),
    nHead: int('n-head', values['n-head']),
    nHeadKv: int('n-head-kv', values['n-head-kv']),
    nFf: int('n-ff', values['n-ff']),
    nCtx: int('context', values.context),
    type,
    seed: BigInt(values.seed),
    tokenizerFrom: values['tokenizer-from'],
    nVocab: values.vocab === undefined ? undefined : int('vocab', values.vocab),
    tied: values.tied,
    ropeFreqBase: Number(values['rope-base']),
    rmsEps: Number(values.eps),
    name: values.name,
  }
  const started = Date.now()
  await makeTestModel(values.out, spec, (done, total) => {
    if (process.stderr.isTTY) process.stderr.write(`\rwriting ${values.out}: ${((100 * done) / total).toFixed(0)}%`)
  })
  process.stderr.write(`\nwrote ${values.out} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(`make-test-model: ${(error as Error).message}`)
    process.exit(1)
  })
}
