/**
 * Writes deterministic random-weight GGUF models for tests and benchmarks.
 *
 *   npx tsx scripts/make-test-model.ts --out /tmp/tiny.gguf --n-embd 128 --n-layer 2 --n-head 8 \
 *     --n-head-kv 2 --n-ff 352 --context 256 --type f16 --seed 7
 *
 * A family's tensors come from its table in the architecture registry (src/lib/arch/families.ts):
 * each TensorSpec whose `when` holds for the config the spec describes (dense FFN or experts), per
 * block where it is per-layer, with the shape its rule gives; optional tensors only when asked
 * (output.weight unless tied, the rope factors with longrope); experts fused or, in the legacy
 * layout, split per expert (TensorSpec.split). So a family added to the registry is written with no
 * change here unless its files carry metadata beyond the common keys (WRITER_FAMILIES: granite's
 * multipliers, gemma's windows and soft-caps, the experts' counts) or it brings a new 1-D role
 * (ROLE_INIT). The writer's own pseudo-family mixtral is a llama file with experts.
 *
 * The tokenizer metadata (every `tokenizer.*` key) is copied from an existing GGUF, by default
 * ../shared/models/stories260K.gguf, so the model tokenizes real text. Weights are initialised by
 * role, as the shared fixtures (ROLE_INIT): projections N(0, 1/n_in), norms 1 + N(0, 0.05²),
 * post-norms 4 + N(0, 0.05²), biases and embeddings N(0, 0.5²), output N(0, (3·logit_scale)²/n_embd);
 * a tied model other than llama has token_embd N(0, 1/n_embd) and output_norm 3 + N(0, 0.05²). Each
 * tensor draws from its own stream (seed + tensor name), so a tensor's bytes depend neither on the
 * other tensors nor on their order. 1-D tensors stay F32, as llama.cpp writes them.
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

import {ARCHITECTURES, type ArchitectureSpec, type ModelConfig, type TensorRole, type TensorSpec} from '../src/lib/arch/index.js'
import {quantizeRef} from '../src/lib/engine/index.js'
import {GgmlType, type GgmlTypeInfo, ggmlTypeById, type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../src/lib/gguf/index.js'
import {deriveSeed, f32ToF16Bits, SeededRandom} from '../src/lib/util/index.js'

/** granite's multipliers in the files we write (the shared fixture's values). */
const GRANITE = {embeddingScale: 12, residualScale: 0.22, attentionScale: 0.125, logitScale: 4}

/**
 * What the writer adds to a registry family: only metadata, and only where the family's files carry
 * more than the common keys. A family absent here (a new one whose metadata is the common keys) needs
 * nothing: its tensors come from its table in src/lib/arch/families.ts.
 */
interface WriterFamily {
  /** general.architecture, and the registry entry whose tensors are written (default: the family's name). */
  readonly arch?: string
  /** Experts in every block, and the metadata key of their width: feed_forward_length (nFf) or expert_feed_forward_length (nFfExp). */
  readonly experts?: 'feed_forward_length' | 'expert_feed_forward_length'
  /** Metadata beyond the common keys (as llama.cpp's llama-arch.cpp names them). */
  readonly kvs?: (s: TestModelSpec, kv: KvMaker) => GgufKv[]
  /** general.name is runner-test-<this> (default: the family's name). */
  readonly nameSuffix?: string
  /** Tied, keeps the untied initialisation of token_embd and output_norm (its files predate the tied rule). */
  readonly historicalTiedInit?: boolean
}

interface KvMaker {
  u32: (key: string, value: number) => GgufKv
  f32: (key: string, value: number) => GgufKv
  str: (key: string, value: string) => GgufKv
  boolArray: (key: string, items: readonly boolean[]) => GgufKv
}

const WRITER_FAMILIES: Readonly<Record<string, WriterFamily>> = {
  llama: {historicalTiedInit: true},
  /** Not a registry family: a llama file with experts (llama.cpp's Mixtral). */
  mixtral: {arch: 'llama', experts: 'feed_forward_length'},
  qwen3moe: {experts: 'expert_feed_forward_length'},
  granite: {
    kvs: (_, {f32}) => [
      f32('embedding_scale', GRANITE.embeddingScale),
      f32('residual_scale', GRANITE.residualScale),
      f32('attention.scale', GRANITE.attentionScale),
      f32('logit_scale', GRANITE.logitScale),
    ],
  },
  // llama.cpp's vocab loader special-cases a general.name containing "phi3" (README: fixture-phi).
  phi3: {nameSuffix: 'fused-qkv'},
  gemma2: {
    kvs: (s, {u32, f32}) => [
      u32('attention.sliding_window', s.slidingWindow ?? 8),
      f32('attn_logit_softcapping', s.attnSoftcap ?? 5),
      f32('final_logit_softcapping', s.finalSoftcap ?? 10),
    ],
  },
  gemma3: {
    kvs: (s, {u32, f32, boolArray}) => [
      u32('attention.sliding_window', s.slidingWindow ?? 8),
      typeof s.slidingWindowPattern === 'object'
        ? boolArray('attention.sliding_window_pattern', s.slidingWindowPattern)
        : u32('attention.sliding_window_pattern', s.slidingWindowPattern ?? 2),
      f32('rope.freq_base_swa', s.ropeBaseSwa ?? 10000),
    ],
  },
}

const writerFamily = (arch: string): WriterFamily => WRITER_FAMILIES[arch] ?? {}
const ggufArch = (arch: string): string => writerFamily(arch).arch ?? arch

/**
 * Families the writer knows: every architecture of the registry (src/lib/arch/families.ts), whose
 * tensors it derives from the family's table, and its own pseudo-families (WRITER_FAMILIES with an
 * `arch`: mixtral is `general.architecture = llama` with experts).
 */
export const TEST_MODEL_ARCHS: readonly string[] = [
  ...ARCHITECTURES.keys(),
  ...Object.keys(WRITER_FAMILIES).filter((k) => WRITER_FAMILIES[k]!.arch !== undefined),
]
/** A name of TEST_MODEL_ARCHS (checked when a model is written: the registry is data). */
export type TestModelArch = string

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

export const DEFAULT_TOKENIZER = resolve(fileURLToPath(import.meta.url), '../../../shared/models/stories260K.gguf')

const TOKEN_TYPE_UNUSED = 5

export const TEST_MODEL_TYPES = [
  'f32',
  'f16',
  'bf16',
  'q8_0',
  'q4_0',
  'q4_1',
  'q5_0',
  'q5_1',
  'q2_k',
  'q3_k',
  'q4_k',
  'q5_k',
  'q6_k',
  'iq4_nl',
  'mxfp4',
] as const
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
const FILE_TYPES: Record<TestModelType, number> = {
  f32: 0,
  f16: 1,
  bf16: 32,
  q8_0: 7,
  q4_0: 2,
  q4_1: 3,
  q5_0: 8,
  q5_1: 9,
  q2_k: 10,
  q3_k: 11,
  q4_k: 14,
  q5_k: 16,
  q6_k: 18,
  iq4_nl: 25,
  mxfp4: 38,
}
/** llama.cpp's GGML_QNT_VERSION, written as general.quantization_version in quantized files. */
const QUANTIZATION_VERSION = 2
const isQuantized = (t: TestModelType) => t !== 'f32' && t !== 'f16' && t !== 'bf16'

interface TensorPlan {
  name: string
  shape: number[]
  /** Returns the next weight; called shape-product times in ggml order. */
  init: (rng: SeededRandom) => number
  /** Never quantized: 1-D weights the engine reads as F32 only, and the MoE router (llama-quantize keeps ffn_gate_inp). */
  keepF32?: boolean
}

/** A spec resolved against the registry: the file's architecture, its table, and the config its shape rules read. */
interface Resolved {
  readonly arch: string
  readonly family: WriterFamily
  readonly entry: ArchitectureSpec
  readonly config: ModelConfig
}

function resolveSpec(s: TestModelSpec, nVocab: number): Resolved {
  const family = writerFamily(s.arch)
  const arch = ggufArch(s.arch)
  const entry = ARCHITECTURES.get(arch)!
  const headDim = s.headDim ?? s.nEmbd / s.nHead
  const experts = family.experts
    ? {nExpert: s.nExpert!, nExpertUsed: s.nExpertUsed!, nFfExp: family.experts === 'feed_forward_length' ? s.nFf : s.nFfExp!}
    : {}
  // Tied when asked, or when the family's table has no head (gemma2: llama.cpp never reads one).
  const tied = !!s.tied || !entry.tensors.some((t) => t.role === 'output')
  const config: ModelConfig = {
    architecture: arch,
    nVocab,
    nEmbd: s.nEmbd,
    nLayer: s.nLayer,
    nHead: s.nHead,
    nHeadKv: s.nHeadKv,
    headDim,
    nFf: s.nFf,
    nCtxTrain: s.nCtx,
    nRot: headDim,
    ropeType: entry.ropeType,
    ropeFreqBase: s.ropeFreqBase ?? 10000,
    ropeFreqScale: 1,
    normEps: s.rmsEps ?? 1e-5,
    attnRemoved: Array.from({length: s.nLayer}, () => false),
    ffnRemoved: Array.from({length: s.nLayer}, () => false),
    tiedEmbeddings: tied,
    // Only the shapes are used here; the rope as a file without scaling keys declares it.
    ropeScaling: {
      declared: {type: 'linear', freqBase: s.ropeFreqBase ?? 10000, freqScale: 1, nCtxOrig: s.nCtx, attnFactor: 1},
      overrides: {},
      type: 'linear',
      nCtxCovered: s.nCtx,
    },
    ...experts,
  }
  return {arch, family, entry, config}
}

/** Optional tensors are written only when the spec asks for them; any other optional role is left out. */
const WANTED: Partial<Record<TensorRole, (s: TestModelSpec, c: ModelConfig) => boolean>> = {
  output: (_, c) => !c.tiedEmbeddings,
  rope_factors_long: (s) => !!s.longrope,
  rope_factors_short: (s) => !!s.longrope,
}

/** What a role's initialisation may depend on besides its shape. */
interface InitContext {
  readonly config: ModelConfig
  /** A tied model of the shared fixtures' kind: token_embd N(0, 1/n_embd), output_norm centred on 3. */
  readonly fixtureTied: boolean
  /** The file's logit_scale (granite's), which output.weight's spread follows. */
  readonly logitScale: number
}
type RoleInit = (shape: readonly number[], x: InitContext) => TensorPlan['init']

const normal =
  (std: number, mean = 0): TensorPlan['init'] =>
  (rng) =>
    mean + std * rng.normal()
const NORM: RoleInit = () => normal(0.05, 1)
const POST_NORM: RoleInit = () => normal(0.05, 4)
const BIAS: RoleInit = () => normal(0.5)
/** Projections (and any role of two or more dimensions not listed): N(0, 1/n_in), n_in = ne0. */
const PROJECTION: RoleInit = (shape) => normal(1 / Math.sqrt(shape[0]!))

/**
 * Each role's initialisation, as the shared fixtures': embeddings N(0, 0.5²), output N(0, (3·logit
 * scale)²/n_embd), norms 1 + N(0, 0.05²), post-norms 4 + N(0, 0.05²), biases N(0, 0.5²), projections
 * N(0, 1/n_in); the router N(0, 4/n_embd). Experts are drawn per expert (expertTensors).
 */
const ROLE_INIT: Partial<Record<TensorRole, RoleInit>> = {
  token_embd: (_, x) => (x.fixtureTied ? normal(1 / Math.sqrt(x.config.nEmbd)) : normal(0.5)),
  output_norm: (_, x) => (x.fixtureTied ? normal(0.05, 3) : normal(0.05, 1)),
  output: (_, x) => normal((3 * x.logitScale) / Math.sqrt(x.config.nEmbd)),
  attn_norm: NORM,
  ffn_norm: NORM,
  attn_q_norm: NORM,
  attn_k_norm: NORM,
  nextn_enorm: NORM,
  nextn_hnorm: NORM,
  nextn_shared_head_norm: NORM,
  attn_post_norm: POST_NORM,
  ffn_post_norm: POST_NORM,
  attn_q_bias: BIAS,
  attn_k_bias: BIAS,
  attn_v_bias: BIAS,
  // Frequency divisors >= 1, as Phi-3's: large for the long-context set, near 1 for the short one.
  rope_factors_long: () => (rng) => 1 + 4 * Math.abs(rng.normal()),
  rope_factors_short: () => (rng) => 1 + 0.25 * Math.abs(rng.normal()),
  ffn_gate_inp: (_, x) => (rng) => (2 / Math.sqrt(x.config.nEmbd)) * rng.normal(),
}
/** Roles never quantized although 2-D (llama-quantize keeps the router in F32). */
const KEEP_F32: ReadonlySet<TensorRole> = new Set(['ffn_gate_inp'])

function roleInit(t: TensorSpec, shape: readonly number[], x: InitContext): TensorPlan['init'] {
  const init = ROLE_INIT[t.role] ?? (shape.length > 1 ? PROJECTION : undefined)
  if (!init) throw new Error(`the writer has no initialisation for the 1-D role ${t.role} (${t.name}): add it to ROLE_INIT`)
  return init(shape, x)
}

const SUBLAYER_ORDER = {attn: 0, ffn: 1} as const

/**
 * The family's tensors, from its registry table: model-wide ones, then each block's (attention, then FFN, each in table order);
 * `when` decides dense FFN or experts, optional tensors only when WANTED.
 */
function plan(s: TestModelSpec, r: Resolved, familyKvList: readonly GgufKv[]): TensorPlan[] {
  const {config: c, entry} = r
  const logitScale = familyKvList.find((kv) => kv.key === `${r.arch}.logit_scale`)?.value
  const x: InitContext = {
    config: c,
    // As the shared fixtures: a tied model's token_embd is N(0, 1/n_embd) and its output_norm centred on 3.
    fixtureTied: c.tiedEmbeddings && !r.family.historicalTiedInit,
    logitScale: typeof logitScale === 'number' ? logitScale : 1,
  }
  const specs = entry.tensors.filter((t) => (!t.when || t.when(c)) && (!t.optional || !!WANTED[t.role]?.(s, c)))
  const one = (t: TensorSpec, name: string, shape: number[]): TensorPlan => ({
    name,
    shape,
    init: roleInit(t, shape, x),
    ...(t.f32Only || KEEP_F32.has(t.role) ? {keepF32: true} : {}),
  })
  const tensors = specs.filter((t) => !t.perLayer).map((t) => one(t, t.name, [...t.shape(c)]))
  // A block's attention tensors before its FFN's (a stable sort keeps table order within each), as converters write them.
  const perBlock = specs.filter((t) => t.perLayer).sort((p, q) => SUBLAYER_ORDER[p.sublayer ?? 'ffn'] - SUBLAYER_ORDER[q.sublayer ?? 'ffn'])
  for (let i = 0; i < c.nLayer; i++) {
    const block = (name: string) => name.replace('{L}', String(i))
    for (const t of perBlock) {
      if (t.layers && !t.layers(c).includes(i)) continue // the NextN head's tensors: its block only
      if (t.split) tensors.push(...expertTensors(s, t, c, block))
      else tensors.push(one(t, block(t.name), [...t.shape(c)]))
    }
  }
  return tensors
}

/**
 * A block's fused expert tensor ([ne0, ne1, n_expert]), or in the split layout one 2-D tensor per
 * expert (TensorSpec.split). Expert e draws from the stream named like its split tensor
 * (blk.N.ffn_gate.E.weight), so the fused and split files hold the same weights; with
 * identicalExperts every expert draws the dense tensor's stream (the split name without `.{E}`:
 * blk.N.ffn_gate.weight) instead. Values N(0, 1/ne0).
 */
function expertTensors(s: TestModelSpec, t: TensorSpec, c: ModelConfig, block: (name: string) => string): TensorPlan[] {
  const [nIn, nOut, nExpert] = t.shape(c) as [number, number, number]
  const split = block(t.split!)
  const std = 1 / Math.sqrt(nIn)
  const stream = (e: number) => (s.identicalExperts ? split.replace('.{E}', '') : split.replace('{E}', String(e)))
  if (s.expertLayout === 'split') {
    return Array.from({length: nExpert}, (_, e) => {
      const own = stream(e)
      return {name: split.replace('{E}', String(e)), shape: [nIn, nOut], init: slabs(s.seed, nIn * nOut, () => own, std)}
    })
  }
  return [{name: block(t.name), shape: [nIn, nOut, nExpert], init: slabs(s.seed, nIn * nOut, stream, std)}]
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
        return {
          ...kv,
          value: {
            itemType: GgufValueType.STRING,
            items: [...(items as string[]), ...Array.from({length: extra}, (_, i) => `<unused${i}>`)],
          },
        }
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

function validate(s: TestModelSpec): void {
  const positive = {nEmbd: s.nEmbd, nLayer: s.nLayer, nHead: s.nHead, nHeadKv: s.nHeadKv, nFf: s.nFf, nCtx: s.nCtx}
  for (const [k, v] of Object.entries(positive)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${k} must be a positive integer, got ${v}`)
  }
  if (s.headDim === undefined && s.nEmbd % s.nHead !== 0) throw new Error(`nEmbd ${s.nEmbd} is not divisible by nHead ${s.nHead}`)
  if (!TEST_MODEL_ARCHS.includes(s.arch)) throw new Error(`arch ${String(s.arch)} is not one of ${TEST_MODEL_ARCHS.join(', ')}`)
  const {experts} = writerFamily(s.arch)
  if (experts) {
    const n = s.nExpert ?? 0
    const k = s.nExpertUsed ?? 0
    if (n < 1 || k < 1 || k > n) throw new Error(`${s.arch} needs 1 <= nExpertUsed (${k}) <= nExpert (${n})`)
    if (experts === 'expert_feed_forward_length' && !(s.nFfExp! >= 1)) throw new Error(`${s.arch} needs nFfExp`)
  }
  if (s.nHead % s.nHeadKv !== 0) throw new Error(`nHead ${s.nHead} is not a multiple of nHeadKv ${s.nHeadKv}`)
  const table = ARCHITECTURES.get(ggufArch(s.arch))!.tensors
  const has = (role: TensorRole) => table.some((t) => t.role === role)
  if (s.longrope && !(has('rope_factors_long') && has('rope_factors_short')))
    throw new Error(`${s.arch} has no longrope factor tensors in its table`)
  if (s.tied && table.some((t) => t.role === 'output' && !t.optional))
    throw new Error(`${s.arch} cannot be tied: its output tensor is not optional`)
}

export async function makeTestModel(out: string, spec: TestModelSpec, onProgress?: (done: number, total: number) => void): Promise<void> {
  validate(spec)
  const {kvs: tokenizer, nVocab} = tokenizerKvs(spec.tokenizerFrom, spec.nVocab)
  const r = resolveSpec(spec, nVocab)
  const a = r.arch
  const {u32, f32, str} = kvMaker('')
  const family = familyKvs(spec, r)
  const kvs: GgufKv[] = [
    str('general.architecture', a),
    str('general.type', 'model'),
    str('general.name', spec.name ?? `runner-test-${r.family.nameSuffix ?? spec.arch}`),
    u32('general.file_type', FILE_TYPES[spec.type]),
    ...(isQuantized(spec.type) ? [u32('general.quantization_version', QUANTIZATION_VERSION)] : []),
    u32(`${a}.vocab_size`, nVocab),
    u32(`${a}.context_length`, spec.nCtx),
    u32(`${a}.embedding_length`, spec.nEmbd),
    u32(`${a}.block_count`, spec.nLayer),
    u32(`${a}.feed_forward_length`, spec.nFf),
    u32(`${a}.attention.head_count`, spec.nHead),
    u32(`${a}.attention.head_count_kv`, spec.nHeadKv),
    u32(`${a}.rope.dimension_count`, r.config.nRot),
    f32(`${a}.rope.freq_base`, r.config.ropeFreqBase),
    f32(`${a}.attention.layer_norm_rms_epsilon`, r.config.normEps),
    ...family,
    ...tokenizer,
  ]
  if (!TEST_MODEL_TYPES.includes(spec.type)) throw new Error(`type ${String(spec.type)} is not one of ${TEST_MODEL_TYPES.join(', ')}`)
  const tensors = plan(spec, r, family).map((t) => {
    const type = t.keepF32 ? WEIGHT_TYPES.f32 : tensorType(t.shape, spec.type)
    return {name: t.name, type, shape: t.shape, data: () => weights(t, type, spec.seed, isQuantized(spec.type))}
  })
  await writeGguf(out, {kvs, tensors}, {inputs: [spec.tokenizerFrom], onProgress})
}

/** Metadata constructors; keys get `prefix` (the architecture and a dot, or nothing). */
function kvMaker(prefix: string): KvMaker {
  return {
    u32: (key, value) => ({key: `${prefix}${key}`, type: GgufValueType.UINT32, value}),
    f32: (key, value) => ({key: `${prefix}${key}`, type: GgufValueType.FLOAT32, value}),
    str: (key, value) => ({key: `${prefix}${key}`, type: GgufValueType.STRING, value}),
    boolArray: (key, items) => ({
      key: `${prefix}${key}`,
      type: GgufValueType.ARRAY,
      value: {itemType: GgufValueType.BOOL, items: [...items]},
    }),
  }
}

/**
 * The metadata beyond the common keys (as llama.cpp's llama-arch.cpp names them): the head width when
 * given, the family's own (WRITER_FAMILIES), the experts' counts and width, and longrope's keys.
 */
function familyKvs(spec: TestModelSpec, r: Resolved): GgufKv[] {
  const kv = kvMaker(`${r.arch}.`)
  const {u32, f32, str} = kv
  const c = r.config
  const kvs: GgufKv[] = []
  if (spec.headDim !== undefined) kvs.push(u32('attention.key_length', c.headDim), u32('attention.value_length', c.headDim))
  kvs.push(...(r.family.kvs?.(spec, kv) ?? []))
  if (r.family.experts) {
    kvs.push(u32('expert_count', c.nExpert!), u32('expert_used_count', c.nExpertUsed!))
    if (r.family.experts === 'expert_feed_forward_length') kvs.push(u32('expert_feed_forward_length', c.nFfExp!))
  }
  if (spec.longrope) {
    kvs.push(
      str('rope.scaling.type', 'longrope'),
      f32('rope.scaling.attn_factor', spec.longrope.attnFactor),
      u32('rope.scaling.original_context_length', spec.longrope.originalContext),
    )
  }
  return kvs
}

const USAGE = `usage: tsx scripts/make-test-model.ts --out FILE [--arch llama] [--n-embd 128] [--n-layer 2]
  [--n-head 8] [--n-head-kv 2] [--n-ff 352] [--context 256] [--type ${TEST_MODEL_TYPES.join('|')}] [--seed 1]
  [--vocab N] [--tokenizer-from FILE.gguf] [--tied] [--rope-base 10000] [--eps 1e-5] [--name NAME] [--head-dim N]
  [--experts N --experts-used K [--expert-ff N] [--split-experts] [--identical-experts]]
  [--sliding-window N] [--sliding-window-pattern N]

--arch: every family of the architecture registry (its tensor table gives the file's tensors) and mixtral
  (a llama file with experts): ${TEST_MODEL_ARCHS.join(', ')}

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
