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
 * Quantized types (q8_0, q4_0, q4_1, q5_0, q5_1) quantize the very float32 weights the f32 model of
 * the same seed holds, with the engine's weight quantizer (bit-identical to llama.cpp's
 * quantize_row_*_ref, through the native addon), as `llama-quantize --pure` would: every 2-D
 * tensor gets the type, except one whose ne0 is not a multiple of 32, which falls back to F16.
 * Tensors are generated and quantized a chunk of rows at a time, so memory stays flat.
 */
import {resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {quantizeRef} from '../src/lib/engine/kernels.js'
import {GgmlType, type GgmlTypeInfo, ggmlTypeById, type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../src/lib/gguf/index.js'
import {f32ToF16Bits} from '../src/lib/util/half.js'
import {deriveSeed, SeededRandom} from '../src/lib/util/random.js'

export interface TestModelSpec {
  readonly arch: 'llama'
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
  /** Leave out output.weight so the model ties its head to token_embd. */
  readonly tied?: boolean
  readonly name?: string
}

export const DEFAULT_TOKENIZER = resolve(fileURLToPath(import.meta.url), '../../../shared/models/stories260K.gguf')

const TOKEN_TYPE_UNUSED = 5

export const TEST_MODEL_TYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1'] as const
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
}
/** general.file_type: llama.cpp's LLAMA_FTYPE_ALL_F32, _MOSTLY_F16, _MOSTLY_BF16, _MOSTLY_Q8_0, _Q4_0, _Q4_1, _Q5_0, _Q5_1. */
const FILE_TYPES: Record<TestModelType, number> = {f32: 0, f16: 1, bf16: 32, q8_0: 7, q4_0: 2, q4_1: 3, q5_0: 8, q5_1: 9}
/** llama.cpp's GGML_QNT_VERSION, written as general.quantization_version in quantized files. */
const QUANTIZATION_VERSION = 2
const isQuantized = (t: TestModelType) => t !== 'f32' && t !== 'f16' && t !== 'bf16'

interface TensorPlan {
  name: string
  shape: number[]
  /** Returns the next weight; called shape-product times in ggml order. */
  init: (rng: SeededRandom) => number
}

function validate(s: TestModelSpec): void {
  const positive = {nEmbd: s.nEmbd, nLayer: s.nLayer, nHead: s.nHead, nHeadKv: s.nHeadKv, nFf: s.nFf, nCtx: s.nCtx}
  for (const [k, v] of Object.entries(positive)) {
    if (!Number.isSafeInteger(v) || v < 1) throw new Error(`${k} must be a positive integer, got ${v}`)
  }
  if (s.nEmbd % s.nHead !== 0) throw new Error(`nEmbd ${s.nEmbd} is not divisible by nHead ${s.nHead}`)
  if (s.nHead % s.nHeadKv !== 0) throw new Error(`nHead ${s.nHead} is not a multiple of nHeadKv ${s.nHeadKv}`)
}

function plan(s: TestModelSpec, nVocab: number): TensorPlan[] {
  const headDim = s.nEmbd / s.nHead
  const kvDim = headDim * s.nHeadKv
  const normal = (std: number, mean = 0) => (rng: SeededRandom) => mean + std * rng.normal()
  const proj = (nIn: number) => normal(1 / Math.sqrt(nIn))
  const norm = normal(0.05, 1)
  const tensors: TensorPlan[] = [
    {name: 'token_embd.weight', shape: [s.nEmbd, nVocab], init: normal(0.5)},
    {name: 'output_norm.weight', shape: [s.nEmbd], init: norm},
  ]
  if (!s.tied) tensors.push({name: 'output.weight', shape: [s.nEmbd, nVocab], init: normal(3 / Math.sqrt(s.nEmbd))})
  for (let i = 0; i < s.nLayer; i++) {
    const b = `blk.${i}`
    tensors.push(
      {name: `${b}.attn_norm.weight`, shape: [s.nEmbd], init: norm},
      {name: `${b}.attn_q.weight`, shape: [s.nEmbd, s.nEmbd], init: proj(s.nEmbd)},
      {name: `${b}.attn_k.weight`, shape: [s.nEmbd, kvDim], init: proj(s.nEmbd)},
      {name: `${b}.attn_v.weight`, shape: [s.nEmbd, kvDim], init: proj(s.nEmbd)},
      {name: `${b}.attn_output.weight`, shape: [s.nEmbd, s.nEmbd], init: proj(s.nEmbd)},
      {name: `${b}.ffn_norm.weight`, shape: [s.nEmbd], init: norm},
      {name: `${b}.ffn_gate.weight`, shape: [s.nEmbd, s.nFf], init: proj(s.nEmbd)},
      {name: `${b}.ffn_up.weight`, shape: [s.nEmbd, s.nFf], init: proj(s.nEmbd)},
      {name: `${b}.ffn_down.weight`, shape: [s.nFf, s.nEmbd], init: proj(s.nFf)},
    )
  }
  return tensors
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

/** The type a tensor is written in: 1-D stay F32; quantized types fall back to F16 where ne0 % 32 != 0. */
function tensorType(shape: readonly number[], type: TestModelType): GgmlTypeInfo {
  if (shape.length === 1) return WEIGHT_TYPES.f32
  const want = WEIGHT_TYPES[type]
  return shape[0]! % want.blockSize === 0 ? want : WEIGHT_TYPES.f16
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
  const a = spec.arch
  const u32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.UINT32, value})
  const f32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.FLOAT32, value})
  const str = (key: string, value: string): GgufKv => ({key, type: GgufValueType.STRING, value})
  const kvs: GgufKv[] = [
    str('general.architecture', a),
    str('general.type', 'model'),
    str('general.name', spec.name ?? `runner-test-${a}`),
    u32('general.file_type', FILE_TYPES[spec.type]),
    ...(isQuantized(spec.type) ? [u32('general.quantization_version', QUANTIZATION_VERSION)] : []),
    u32(`${a}.vocab_size`, nVocab),
    u32(`${a}.context_length`, spec.nCtx),
    u32(`${a}.embedding_length`, spec.nEmbd),
    u32(`${a}.block_count`, spec.nLayer),
    u32(`${a}.feed_forward_length`, spec.nFf),
    u32(`${a}.attention.head_count`, spec.nHead),
    u32(`${a}.attention.head_count_kv`, spec.nHeadKv),
    u32(`${a}.rope.dimension_count`, spec.nEmbd / spec.nHead),
    f32(`${a}.rope.freq_base`, spec.ropeFreqBase ?? 10000),
    f32(`${a}.attention.layer_norm_rms_epsilon`, spec.rmsEps ?? 1e-5),
    ...tokenizer,
  ]
  if (!TEST_MODEL_TYPES.includes(spec.type)) throw new Error(`type ${String(spec.type)} is not one of ${TEST_MODEL_TYPES.join(', ')}`)
  const tensors = plan(spec, nVocab).map((t) => {
    const type = tensorType(t.shape, spec.type)
    return {name: t.name, type, shape: t.shape, data: () => weights(t, type, spec.seed, isQuantized(spec.type))}
  })
  await writeGguf(out, {kvs, tensors}, {inputs: [spec.tokenizerFrom], onProgress})
}

const USAGE = `usage: tsx scripts/make-test-model.ts --out FILE [--arch llama] [--n-embd 128] [--n-layer 2]
  [--n-head 8] [--n-head-kv 2] [--n-ff 352] [--context 256] [--type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1] [--seed 1]
  [--vocab N] [--tokenizer-from FILE.gguf] [--tied] [--rope-base 10000] [--eps 1e-5] [--name NAME]

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
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  })
  if (values.help || !values.out) {
    console.error(USAGE)
    process.exit(values.help ? 0 : 2)
  }
  if (values.arch !== 'llama') throw new Error(`--arch ${values.arch} is not supported yet (only llama)`)
  const type = TEST_MODEL_TYPES.find((t) => t === values.type)
  if (!type) throw new Error(`--type ${values.type} is not supported (${TEST_MODEL_TYPES.join(', ')})`)
  const int = (flag: string, v: string) => {
    const n = Number(v)
    if (!Number.isSafeInteger(n)) throw new Error(`--${flag} must be an integer, got ${v}`)
    return n
  }
  const spec: TestModelSpec = {
    arch: 'llama',
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
