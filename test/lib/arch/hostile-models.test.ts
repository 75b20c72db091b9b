// Hostile models are refused at load, by name, before anything they would size is allocated.
//
// Each case is a real GGUF file: ../shared/models/stories260K.gguf (llama2.c's model, converted by
// llama.cpp) read with our reader and written again with exactly one thing changed, then loaded through
// the whole path (`Model.load`: reader → planModel → createTokenizer → native modelLoad). The outside
// anchor is the unmodified file: it loads (llama.cpp loads it too: shared/reference/stories260K.json),
// so each refusal is caused by the one change, not by our writer. The expected values come from the
// file itself (n_embd 64, 8 heads over 4 KV heads, head_dim 8, n_ff 172, 5 blocks, 512 tokens; the
// table in shared/reference/README.md).
//
// The native loader is then called directly with descriptors that lie, to check its own defence in
// depth (runner.h: it re-checks every extent, shape and type and never trusts the caller).
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {ENGINE_WEIGHT_TYPES, planModel, TENSOR_ROLES} from '../../../src/lib/arch/index.js'
import type {ModelPlan} from '../../../src/lib/arch/index.js'
import {loadAddon, type NativeAddon, type NativeModelConfig, type NativeTensorDesc} from '../../../src/lib/engine/addon.js'
import {quantizeRef, typeTraits} from '../../../src/lib/engine/kernels.js'
import {Model, nativeConfig, nativeTensor} from '../../../src/lib/engine/model.js'
import {ExitCode, RunnerError} from '../../../src/lib/errors.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'
import {
  GgmlType,
  ggmlTypeById,
  GgufError,
  type GgufKv,
  type GgufModelFiles,
  GgufValueType,
  type GgufWriteTensor,
  isGgufArray,
  readGgufModel,
  writeGguf,
} from '../../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
/** A refusal happens while reading the header, so it must be quick: nothing big is read or allocated. */
const FAST_MS = 200

const dir = mkdtempSync(join(tmpdir(), 'runner-hostile-models-'))
after(() => rmSync(dir, {recursive: true, force: true}))

// ---- building hostile files ---------------------------------------------------------------------

type KvEdit = (kvs: GgufKv[]) => GgufKv[]
type TensorEdit = (tensors: GgufWriteTensor[]) => GgufWriteTensor[]

let source: GgufModelFiles | undefined
function stories(): GgufModelFiles {
  source ??= readGgufModel(STORIES)
  return source
}

/** Replace (or add) one key. */
const setKv =
  (key: string, type: GgufValueType, value: GgufKv['value']): KvEdit =>
  (kvs) =>
    kvs.some((kv) => kv.key === key) ? kvs.map((kv) => (kv.key === key ? {key, type, value} : kv)) : [...kvs, {key, type, value}]
const u32 = (key: string, v: number) => setKv(key, GgufValueType.UINT32, v)
const delKv =
  (key: string): KvEdit =>
  (kvs) =>
    kvs.filter((kv) => kv.key !== key)
/** The items of one of stories260K's arrays. */
function itemsOf(key: string): ArrayLike<unknown> & {slice(a?: number, b?: number): unknown} {
  // The case tables are built at import; without ../shared every suite using them skips, saying why.
  if (!hasShared()) return []
  const v = stories().metadata.get(key)?.value
  assert.ok(v !== undefined && typeof v === 'object' && isGgufArray(v), `${key} is an array in stories260K`)
  return v.items as ArrayLike<unknown> & {slice(a?: number, b?: number): unknown}
}
const array = (key: string, itemType: GgufValueType, items: unknown) =>
  setKv(key, GgufValueType.ARRAY, {itemType, items} as GgufKv['value'])

/** Change one tensor's header (type, shape) and give it data of the size the new header implies. */
const editTensor =
  (name: string, change: {shape?: number[]; type?: number}): TensorEdit =>
  (tensors) => {
    assert.ok(
      tensors.some((t) => t.name === name),
      `stories260K has ${name}`,
    )
    return tensors.map((t) => {
      if (t.name !== name) return t
      const type = ggmlTypeById(change.type ?? (typeof t.type === 'number' ? t.type : t.type.id))!
      const shape = change.shape ?? [...t.shape]
      const n = shape.reduce((a, b) => a * b, 1)
      // Bytes the new header implies; the values do not matter, the file is refused before they are read.
      return {name, type, shape, data: new Uint8Array((n / type.blockSize) * type.bytesPerBlock)}
    })
  }
const dropTensor =
  (name: string): TensorEdit =>
  (tensors) => {
    assert.ok(
      tensors.some((t) => t.name === name),
      `stories260K has ${name}`,
    )
    return tensors.filter((t) => t.name !== name)
  }
const addTensor =
  (t: GgufWriteTensor): TensorEdit =>
  (tensors) => [...tensors, t]

let counter = 0
/** stories260K with its metadata and tensors passed through the edits, written to a new file. */
async function variant(edit: {kvs?: KvEdit; tensors?: TensorEdit} = {}): Promise<string> {
  const m = stories()
  const kvs = (edit.kvs ?? ((x) => x))([...m.kvs])
  const tensors = (edit.tensors ?? ((x) => x))(
    m.tensors.map((t) => ({name: t.name, type: t.type, shape: [...t.shape], data: {file: t.file, offset: t.offset}})),
  )
  const path = join(dir, `hostile-${counter++}.gguf`)
  await writeGguf(path, {kvs, tensors})
  return path
}

// ---- the native loader is never reached by a refused file ---------------------------------------

/** Counts calls to the addon's modelLoad (the one place that maps and binds weights). */
let nativeLoads = 0
function spyOnNativeLoad(): void {
  const addon = loadAddon() as NativeAddon & {__spied?: boolean}
  if (addon.__spied) return
  const real = addon.modelLoad.bind(addon)
  addon.modelLoad = (...args: Parameters<NativeAddon['modelLoad']>) => {
    nativeLoads++
    return real(...args)
  }
  addon.__spied = true
}

interface Refusal {
  /** RunnerError code. */
  readonly code: string
  readonly exit: number
  /** Strings (or patterns) the message must contain: the key or tensor, and the bad value. */
  readonly mentions: ReadonlyArray<string | RegExp>
  /** For a GgufError / TokenizerError: the field it names. */
  readonly field?: string
}

/** Load the file through Model.load and check the refusal: code, exit code, names, speed, native untouched. */
async function expectRefused(path: string, want: Refusal): Promise<void> {
  const loadsBefore = nativeLoads
  const t0 = performance.now()
  let error: unknown
  try {
    const model = await Model.load(path)
    model.dispose()
  } catch (e) {
    error = e
  }
  const ms = performance.now() - t0
  assert.ok(error instanceof RunnerError, `refused with a RunnerError, got ${error === undefined ? 'a loaded model' : String(error)}`)
  assert.equal(error.code, want.code, error.message)
  assert.equal(error.exitCode, want.exit, error.message)
  for (const m of want.mentions) {
    if (typeof m === 'string') assert.ok(error.message.includes(m), `"${error.message}" names ${JSON.stringify(m)}`)
    else assert.match(error.message, m)
  }
  if (want.field !== undefined) assert.equal((error as RunnerError & {field?: string}).field, want.field, error.message)
  assert.ok(ms < FAST_MS, `refused in ${ms.toFixed(1)} ms (< ${FAST_MS} ms): ${error.message}`)
  assert.equal(nativeLoads, loadsBefore, `the native loader was not called for a refused file (${error.message})`)
}

interface Case extends Refusal {
  readonly name: string
  readonly kvs?: KvEdit
  readonly tensors?: TensorEdit
}

const A = 'llama'
const META_RANGE = 'GGUF_META_RANGE'
const META_TYPE = 'GGUF_META_TYPE'
const META_MISSING = 'GGUF_META_MISSING'
const bad = ExitCode.invalidModel
const unsupported = ExitCode.unsupported

/** Hyperparameters out of range or inconsistent. stories260K: n_embd 64, 8/4 heads, head_dim 8, 5 blocks. */
const HPARAM_CASES: Case[] = [
  {
    name: 'block_count huge (10^9)',
    kvs: u32(`${A}.block_count`, 1_000_000_000),
    code: META_RANGE,
    exit: bad,
    field: `${A}.block_count`,
    mentions: [`${A}.block_count`, '1000000000'],
  },
  {
    name: 'block_count 2^64 - 1 (u64)',
    kvs: setKv(`${A}.block_count`, GgufValueType.UINT64, (1n << 64n) - 1n),
    code: META_RANGE,
    exit: bad,
    field: `${A}.block_count`,
    mentions: [`${A}.block_count`, '18446744073709551615'],
  },
  {
    name: 'block_count 0',
    kvs: u32(`${A}.block_count`, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.block_count`,
    mentions: [`${A}.block_count`, '0 is outside'],
  },
  {
    name: 'block_count 6 (one more than the file has)',
    kvs: u32(`${A}.block_count`, 6),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.5.'],
  },
  {
    name: 'block_count 4 (one less than the file has)',
    kvs: u32(`${A}.block_count`, 4),
    code: 'ARCH_UNKNOWN_TENSOR',
    exit: unsupported,
    mentions: ['blk.4.'],
  },
  {
    name: 'block_count is a string',
    kvs: setKv(`${A}.block_count`, GgufValueType.STRING, '5'),
    code: META_TYPE,
    exit: bad,
    field: `${A}.block_count`,
    mentions: [`${A}.block_count`, 'string'],
  },
  {
    name: 'block_count is a float',
    kvs: setKv(`${A}.block_count`, GgufValueType.FLOAT32, 5),
    code: META_TYPE,
    exit: bad,
    field: `${A}.block_count`,
    mentions: [`${A}.block_count`, 'f32'],
  },
  {
    name: 'head_count 0',
    kvs: u32(`${A}.attention.head_count`, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.head_count`,
    mentions: [`${A}.attention.head_count at`, '0 is outside'],
  },
  {
    name: 'head_count huge',
    kvs: u32(`${A}.attention.head_count`, 4_000_000_000),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.head_count`,
    mentions: [`${A}.attention.head_count at`, '4000000000'],
  },
  {
    name: 'head_count_kv 0',
    kvs: u32(`${A}.attention.head_count_kv`, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.head_count_kv`,
    mentions: [`${A}.attention.head_count_kv`, '0 is outside'],
  },
  {
    name: 'head_count not a multiple of head_count_kv (8 over 3)',
    kvs: u32(`${A}.attention.head_count_kv`, 3),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.attention.head_count 8`, `${A}.attention.head_count_kv 3`],
  },
  {
    name: 'head_count_kv larger than head_count (8 over 16)',
    kvs: u32(`${A}.attention.head_count_kv`, 16),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.attention.head_count 8`, `${A}.attention.head_count_kv 16`],
  },
  {
    name: 'per-layer head counts that differ (8, 4, 8, 8, 8)',
    kvs: array(`${A}.attention.head_count`, GgufValueType.UINT32, Uint32Array.of(8, 4, 8, 8, 8)),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.attention.head_count`, '8, 4'],
  },
  {
    name: 'per-layer head counts of the wrong length (3 for 5 blocks)',
    kvs: array(`${A}.attention.head_count`, GgufValueType.UINT32, Uint32Array.of(8, 8, 8)),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.attention.head_count`, '3 entries'],
  },
  {
    name: 'embedding_length not divisible by head_count (60 / 8)',
    kvs: u32(`${A}.embedding_length`, 60),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.embedding_length 60`, `${A}.attention.head_count 8`],
  },
  {
    name: 'embedding_length huge (2^31)',
    kvs: u32(`${A}.embedding_length`, 2 ** 31),
    code: META_RANGE,
    exit: bad,
    field: `${A}.embedding_length`,
    mentions: [`${A}.embedding_length`, '2147483648'],
  },
  {
    name: 'embedding_length missing',
    kvs: delKv(`${A}.embedding_length`),
    code: META_MISSING,
    exit: bad,
    field: `${A}.embedding_length`,
    mentions: [`${A}.embedding_length`, 'missing'],
  },
  {
    name: 'odd head dimension (embedding_length 56 = 8 heads × 7)',
    kvs: u32(`${A}.embedding_length`, 56),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['head dimension 7', `${A}.embedding_length 56`],
  },
  {
    name: 'odd head dimension (key_length 7)',
    kvs: u32(`${A}.attention.key_length`, 7),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['head dimension 7', `${A}.attention.key_length 7`],
  },
  {
    name: 'key_length huge',
    kvs: u32(`${A}.attention.key_length`, 1 << 20),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.key_length`,
    mentions: [`${A}.attention.key_length`, '1048576'],
  },
  {
    name: 'value_length different from key_length',
    kvs: u32(`${A}.attention.value_length`, 16),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.attention.value_length 16`],
  },
  {
    name: 'rope dimensions beyond the head size (16 > 8)',
    kvs: u32(`${A}.rope.dimension_count`, 16),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.rope.dimension_count 16`, 'head dimension 8'],
  },
  {
    name: 'rope dimensions odd (7)',
    kvs: u32(`${A}.rope.dimension_count`, 7),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.rope.dimension_count 7`],
  },
  {
    name: 'rope dimensions absurd (10^6)',
    kvs: u32(`${A}.rope.dimension_count`, 1_000_000),
    code: META_RANGE,
    exit: bad,
    field: `${A}.rope.dimension_count`,
    mentions: [`${A}.rope.dimension_count`, '1000000'],
  },
  {
    name: 'context_length absurd (2^31)',
    kvs: u32(`${A}.context_length`, 2 ** 31),
    code: META_RANGE,
    exit: bad,
    field: `${A}.context_length`,
    mentions: [`${A}.context_length`, '2147483648'],
  },
  {
    name: 'context_length absurd (2^63, u64)',
    kvs: setKv(`${A}.context_length`, GgufValueType.UINT64, 1n << 63n),
    code: META_RANGE,
    exit: bad,
    field: `${A}.context_length`,
    mentions: [`${A}.context_length`, '9223372036854775808'],
  },
  {
    name: 'context_length negative (i32)',
    kvs: setKv(`${A}.context_length`, GgufValueType.INT32, -1),
    code: META_RANGE,
    exit: bad,
    field: `${A}.context_length`,
    mentions: [`${A}.context_length`, '-1'],
  },
  {
    name: 'context_length 0',
    kvs: u32(`${A}.context_length`, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.context_length`,
    mentions: [`${A}.context_length`, '0 is outside'],
  },
  {
    name: 'feed_forward_length 0',
    kvs: u32(`${A}.feed_forward_length`, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.feed_forward_length`,
    mentions: [`${A}.feed_forward_length`, '0 is outside'],
  },
  {
    name: 'rms epsilon NaN',
    kvs: setKv(`${A}.attention.layer_norm_rms_epsilon`, GgufValueType.FLOAT32, Number.NaN),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.layer_norm_rms_epsilon`,
    mentions: [`${A}.attention.layer_norm_rms_epsilon`, 'NaN'],
  },
  {
    name: 'rms epsilon negative',
    kvs: setKv(`${A}.attention.layer_norm_rms_epsilon`, GgufValueType.FLOAT32, -1),
    code: META_RANGE,
    exit: bad,
    field: `${A}.attention.layer_norm_rms_epsilon`,
    mentions: [`${A}.attention.layer_norm_rms_epsilon`, '-1'],
  },
  {
    name: 'rope freq_base 0',
    kvs: setKv(`${A}.rope.freq_base`, GgufValueType.FLOAT32, 0),
    code: META_RANGE,
    exit: bad,
    field: `${A}.rope.freq_base`,
    mentions: [`${A}.rope.freq_base`, '0 is outside'],
  },
  {
    // llama.cpp knows none, linear, yarn and longrope (and asserts on anything else).
    name: 'rope scaling type dynamic',
    kvs: setKv(`${A}.rope.scaling.type`, GgufValueType.STRING, 'dynamic'),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.rope.scaling.type`, '"dynamic"', 'none, linear, yarn'],
  },
  {
    // llama.cpp reads it only for grok and mistral3: for llama it would be ignored, so it is refused.
    name: 'rope.scaling.yarn_beta_fast on llama',
    kvs: setKv(`${A}.rope.scaling.yarn_beta_fast`, GgufValueType.FLOAT32, 8),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.rope.scaling.yarn_beta_fast`, 'not read for llama'],
  },
  {
    name: 'rope.scaling.yarn_log_multiplier on llama',
    kvs: setKv(`${A}.rope.scaling.yarn_log_multiplier`, GgufValueType.FLOAT32, 0.1),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.rope.scaling.yarn_log_multiplier`],
  },
  {
    name: 'rope scaling factor negative',
    kvs: setKv(`${A}.rope.scaling.factor`, GgufValueType.FLOAT32, -2),
    code: META_RANGE,
    exit: bad,
    field: `${A}.rope.scaling.factor`,
    mentions: [`${A}.rope.scaling.factor`],
  },
]

/** Unknown or missing architecture. */
const ARCH_CASES: Case[] = [
  {
    name: 'general.architecture missing',
    kvs: delKv('general.architecture'),
    code: 'ARCH_MISSING',
    exit: bad,
    mentions: ['general.architecture'],
  },
  {
    name: 'general.architecture unknown ("gptneox")',
    kvs: setKv('general.architecture', GgufValueType.STRING, 'gptneox'),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: ['general.architecture', '"gptneox"'],
  },
  {
    name: 'general.architecture empty',
    kvs: setKv('general.architecture', GgufValueType.STRING, ''),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: ['general.architecture', '""'],
  },
  {
    name: 'general.architecture not a string',
    kvs: setKv('general.architecture', GgufValueType.UINT32, 7),
    code: META_TYPE,
    exit: bad,
    field: 'general.architecture',
    mentions: ['general.architecture', 'u32'],
  },
]

/** Tensors whose shapes or types disagree with the hyperparameters (or that are missing or unknown). */
const TENSOR_CASES: Case[] = [
  {
    name: 'token_embd one row short',
    tensors: editTensor('token_embd.weight', {shape: [64, 511]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['token_embd.weight', '[64, 511]', '[64, 512]'],
  },
  {
    name: 'attn_k as wide as attn_q (ignores the 4 KV heads)',
    tensors: editTensor('blk.2.attn_k.weight', {shape: [64, 64]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['blk.2.attn_k.weight', '[64, 64]', '[64, 32]'],
  },
  {
    name: 'ffn_down transposed',
    tensors: editTensor('blk.0.ffn_down.weight', {shape: [64, 172]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['blk.0.ffn_down.weight', '[64, 172]', '[172, 64]'],
  },
  {
    name: 'a norm with two rows',
    tensors: editTensor('blk.1.attn_norm.weight', {shape: [64, 2]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['blk.1.attn_norm.weight', '[64, 2]', '[64]'],
  },
  {
    name: 'attn_q with a third dimension of 2',
    tensors: editTensor('blk.4.attn_q.weight', {shape: [64, 64, 2]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['blk.4.attn_q.weight', '[64, 64, 2]'],
  },
  {
    name: 'output with the vocabulary on ne0',
    tensors: editTensor('output.weight', {shape: [512, 64]}),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['output.weight', '[512, 64]', '[64, 512]'],
  },
  {
    name: 'a norm stored as F16',
    tensors: editTensor('output_norm.weight', {type: GgmlType.F16}),
    code: 'ARCH_UNSUPPORTED_TYPE',
    exit: unsupported,
    mentions: ['output_norm.weight', 'F16'],
  },
  {
    name: 'a weight in a type the engine lacks (NVFP4)',
    tensors: editTensor('blk.0.attn_q.weight', {type: 40}),
    code: 'ARCH_UNSUPPORTED_TYPE',
    exit: unsupported,
    mentions: ['blk.0.attn_q.weight', 'NVFP4'],
  },
  {
    name: 'a weight in an integer type (I32)',
    tensors: editTensor('blk.3.attn_v.weight', {type: 26}),
    code: 'ARCH_UNSUPPORTED_TYPE',
    exit: unsupported,
    mentions: ['blk.3.attn_v.weight', 'I32'],
  },
  {
    name: 'a missing layer tensor',
    tensors: dropTensor('blk.3.ffn_up.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.3.ffn_up.weight'],
  },
  {
    name: 'token_embd missing',
    tensors: dropTensor('token_embd.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['token_embd.weight'],
  },
  {
    name: 'an unknown tensor (a q bias llama does not have)',
    tensors: addTensor({name: 'blk.0.attn_q.bias', type: GgmlType.F32, shape: [64], data: new Uint8Array(256)}),
    code: 'ARCH_UNKNOWN_TENSOR',
    exit: unsupported,
    mentions: ['blk.0.attn_q.bias'],
  },
]

/** Vocabulary arrays of different lengths or wrong element types; special-token ids outside the vocabulary. */
const VOCAB_CASES: Case[] = [
  {
    name: 'scores one shorter than tokens',
    kvs: array('tokenizer.ggml.scores', GgufValueType.FLOAT32, itemsOf('tokenizer.ggml.scores').slice(0, 511)),
    code: 'TOKENIZER_BAD_VOCAB',
    exit: bad,
    field: 'tokenizer.ggml.scores',
    mentions: ['tokenizer.ggml.scores', '511', '512'],
  },
  {
    name: 'token_type one longer than tokens',
    kvs: array('tokenizer.ggml.token_type', GgufValueType.INT32, Int32Array.of(...(itemsOf('tokenizer.ggml.token_type') as Int32Array), 1)),
    code: 'TOKENIZER_BAD_VOCAB',
    exit: bad,
    field: 'tokenizer.ggml.token_type',
    mentions: ['tokenizer.ggml.token_type', '513', '512'],
  },
  {
    name: 'tokens as an array of i32',
    kvs: array(
      'tokenizer.ggml.tokens',
      GgufValueType.INT32,
      Int32Array.from({length: 512}, (_, i) => i),
    ),
    code: 'ARCH_BAD_VOCAB',
    exit: bad,
    mentions: ['tokenizer.ggml.tokens', 'i32'],
  },
  {
    name: 'tokens empty',
    kvs: array('tokenizer.ggml.tokens', GgufValueType.STRING, []),
    code: 'ARCH_BAD_VOCAB',
    exit: bad,
    mentions: ['tokenizer.ggml.tokens', '0 entries'],
  },
  {
    name: 'tokens missing',
    kvs: delKv('tokenizer.ggml.tokens'),
    code: 'ARCH_BAD_VOCAB',
    exit: bad,
    mentions: ['tokenizer.ggml.tokens', 'missing'],
  },
  {
    name: 'scores as strings',
    kvs: array(
      'tokenizer.ggml.scores',
      GgufValueType.STRING,
      Array.from({length: 512}, () => '0'),
    ),
    code: 'TOKENIZER_BAD_VOCAB',
    exit: bad,
    field: 'tokenizer.ggml.scores',
    mentions: ['tokenizer.ggml.scores', 'string'],
  },
  {
    name: 'token_type as u8',
    kvs: array('tokenizer.ggml.token_type', GgufValueType.UINT8, Uint8Array.from(itemsOf('tokenizer.ggml.token_type') as Int32Array)),
    code: META_TYPE,
    exit: bad,
    field: 'tokenizer.ggml.token_type',
    mentions: ['tokenizer.ggml.token_type', 'u8'],
  },
  {
    name: 'a token type outside 0..6',
    kvs: array(
      'tokenizer.ggml.token_type',
      GgufValueType.INT32,
      Int32Array.from(itemsOf('tokenizer.ggml.token_type') as Int32Array, (v, i) => (i === 300 ? 9 : (v as number))),
    ),
    code: 'TOKENIZER_BAD_VOCAB',
    exit: bad,
    field: 'tokenizer.ggml.token_type',
    mentions: ['tokenizer.ggml.token_type', 'token 300', 'type 9'],
  },
  {
    name: 'a duplicate token text',
    kvs: array(
      'tokenizer.ggml.tokens',
      GgufValueType.STRING,
      (itemsOf('tokenizer.ggml.tokens') as string[]).map((t, i) => (i === 400 ? (itemsOf('tokenizer.ggml.tokens') as string[])[300]! : t)),
    ),
    code: 'TOKENIZER_BAD_VOCAB',
    exit: bad,
    field: 'tokenizer.ggml.tokens',
    mentions: ['tokenizer.ggml.tokens', '300', '400'],
  },
  {
    name: 'vocab_size disagrees with the tokens',
    kvs: u32(`${A}.vocab_size`, 600),
    code: 'ARCH_BAD_VOCAB',
    exit: bad,
    mentions: [`${A}.vocab_size 600`, '512'],
  },
  {
    name: 'bos_token_id one past the vocabulary',
    kvs: u32('tokenizer.ggml.bos_token_id', 512),
    code: 'TOKENIZER_BAD_SPECIAL_TOKEN',
    exit: bad,
    field: 'tokenizer.ggml.bos_token_id',
    mentions: ['tokenizer.ggml.bos_token_id', '512'],
  },
  {
    name: 'eos_token_id far outside the vocabulary',
    kvs: u32('tokenizer.ggml.eos_token_id', 70_000),
    code: 'TOKENIZER_BAD_SPECIAL_TOKEN',
    exit: bad,
    field: 'tokenizer.ggml.eos_token_id',
    mentions: ['tokenizer.ggml.eos_token_id', '70000'],
  },
  {
    name: 'unknown_token_id negative',
    kvs: setKv('tokenizer.ggml.unknown_token_id', GgufValueType.INT32, -7),
    code: 'TOKENIZER_BAD_SPECIAL_TOKEN',
    exit: bad,
    field: 'tokenizer.ggml.unknown_token_id',
    mentions: ['tokenizer.ggml.unknown_token_id', '-7'],
  },
]

describe('hostile models: refused at load by name, fast, before the engine maps anything', {skip: SKIP}, () => {
  before(async () => {
    spyOnNativeLoad()
    // Anchor: the unmodified file, passed through the same read-and-write, loads and generates.
    const path = await variant()
    const loadsBefore = nativeLoads
    const model = await Model.load(path)
    assert.equal(nativeLoads, loadsBefore + 1, 'the spy sees a real load')
    try {
      assert.equal(model.config.nLayer, 5)
      assert.equal(model.config.headDim, 8)
      const ctx = await model.createContext({nCtx: 32, threads: 1})
      try {
        const logits = await ctx.decode([1, 403, 407, 261, 378], {logits: 'last'})
        // llama.cpp's greedy continuation of "Once upon a time" starts with token 432 (",").
        let best = 0
        for (let i = 1; i < logits!.length; i++) if (logits![i]! > logits![best]!) best = i
        assert.equal(best, 432)
      } finally {
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
  })

  for (const [group, cases] of [
    ['hyperparameters', HPARAM_CASES],
    ['architecture', ARCH_CASES],
    ['tensors', TENSOR_CASES],
    ['vocabulary', VOCAB_CASES],
  ] as const) {
    describe(group, () => {
      for (const c of cases) {
        test(`${c.name} → ${c.code}`, async () => {
          const path = await variant({kvs: c.kvs, tensors: c.tensors})
          await expectRefused(path, c)
        })
      }
    })
  }

  test('an architecture llama.cpp has but the engine lacks (gemma4) is refused naming it and every supported one', async () => {
    const path = await variant({kvs: setKv('general.architecture', GgufValueType.STRING, 'gemma4')})
    await expectRefused(path, {
      code: 'ARCH_UNSUPPORTED',
      exit: unsupported,
      mentions: ['"gemma4"', 'supported: llama, qwen2, qwen3, qwen3moe, granite, phi3, gemma2, gemma3'],
    })
  })

  test('a trailing dimension of 1 is not a disagreement (ggml pads shapes with 1)', async () => {
    const path = await variant({tensors: (ts) => ts.map((t) => (t.name === 'blk.0.attn_q.weight' ? {...t, shape: [64, 64, 1]} : t))})
    const model = await Model.load(path)
    model.dispose()
  })
})

// ---- the families' own keys (issue #5): gemma2, gemma3 and qwen3moe fixtures, patched ----------------

const familySources = new Map<string, GgufModelFiles>()
/** A shared fixture with its metadata and tensors passed through the edits. */
async function familyVariant(fixture: string, edit: {kvs?: KvEdit; tensors?: TensorEdit} = {}): Promise<string> {
  if (!familySources.has(fixture)) familySources.set(fixture, readGgufModel(sharedPath('fixtures', `${fixture}.gguf`)))
  const m = familySources.get(fixture)!
  const kvs = (edit.kvs ?? ((x) => x))([...m.kvs])
  const tensors = (edit.tensors ?? ((x) => x))(
    m.tensors.map((t) => ({name: t.name, type: t.type, shape: [...t.shape], data: {file: t.file, offset: t.offset}})),
  )
  const path = join(dir, `family-${counter++}.gguf`)
  await writeGguf(path, {kvs, tensors})
  return path
}
/** Edit one tensor of a fixture (dropTensor/editTensor check against stories260K, so these are separate). */
const dropNamed =
  (name: string): TensorEdit =>
  (ts) => {
    assert.ok(
      ts.some((t) => t.name === name),
      name,
    )
    return ts.filter((t) => t.name !== name)
  }
const reshapeNamed =
  (name: string, shape: number[]): TensorEdit =>
  (ts) =>
    ts.map((t) =>
      t.name === name ? {name, type: ggmlTypeById(GgmlType.F32)!, shape, data: new Uint8Array(shape.reduce((a, b) => a * b, 1) * 4)} : t,
    )

interface FamilyCase extends Case {
  readonly fixture: 'gemma2' | 'gemma3' | 'qwen3moe' | 'phi3'
}
const FAMILY_CASES: FamilyCase[] = [
  {
    fixture: 'gemma2',
    name: 'sliding_window 0 (every key outside the window)',
    kvs: u32('gemma2.attention.sliding_window', 0),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['gemma2.attention.sliding_window is 0'],
  },
  {
    fixture: 'gemma2',
    name: 'sliding_window beyond the context ceiling',
    kvs: u32('gemma2.attention.sliding_window', 2 ** 31),
    code: META_RANGE,
    exit: bad,
    field: 'gemma2.attention.sliding_window',
    mentions: ['gemma2.attention.sliding_window', '2147483648'],
  },
  {
    fixture: 'gemma2',
    name: 'sliding_window_pattern as an array of u32',
    kvs: array('gemma2.attention.sliding_window_pattern', GgufValueType.UINT32, Uint32Array.of(1, 0, 1, 0)),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['gemma2.attention.sliding_window_pattern', 'u32'],
  },
  {
    fixture: 'gemma2',
    name: 'sliding_window_pattern of 3 bools for 4 blocks',
    kvs: array('gemma2.attention.sliding_window_pattern', GgufValueType.BOOL, [true, false, true]),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['gemma2.attention.sliding_window_pattern', '3 entries', '4 blocks'],
  },
  {
    fixture: 'gemma2',
    name: 'attention soft-cap 0',
    kvs: setKv('gemma2.attn_logit_softcapping', GgufValueType.FLOAT32, 0),
    code: META_RANGE,
    exit: bad,
    field: 'gemma2.attn_logit_softcapping',
    mentions: ['gemma2.attn_logit_softcapping'],
  },
  {
    fixture: 'gemma2',
    name: 'final soft-cap NaN',
    kvs: setKv('gemma2.final_logit_softcapping', GgufValueType.FLOAT32, Number.NaN),
    code: META_RANGE,
    exit: bad,
    field: 'gemma2.final_logit_softcapping',
    mentions: ['gemma2.final_logit_softcapping', 'NaN'],
  },
  {
    fixture: 'gemma2',
    name: 'an output.weight (llama.cpp ties gemma2 to token_embd)',
    tensors: (ts) => [
      ...ts,
      {name: 'output.weight', type: ggmlTypeById(GgmlType.F32)!, shape: [96, 512], data: new Uint8Array(96 * 512 * 4)},
    ],
    code: 'ARCH_UNKNOWN_TENSOR',
    exit: unsupported,
    mentions: ['output.weight'],
  },
  {
    fixture: 'gemma2',
    name: 'a post-FFN norm missing',
    tensors: dropNamed('blk.1.post_ffw_norm.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.1.post_ffw_norm.weight'],
  },
  {
    fixture: 'gemma3',
    name: 'a sliding_window_pattern without a sliding_window',
    kvs: delKv('gemma3.attention.sliding_window'),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['gemma3.attention.sliding_window_pattern', 'missing'],
  },
  {
    fixture: 'gemma3',
    name: 'a q norm missing',
    tensors: dropNamed('blk.2.attn_q_norm.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.2.attn_q_norm.weight'],
  },
  {
    fixture: 'qwen3moe',
    name: 'expert_used_count 9 > expert_count 8',
    kvs: u32('qwen3moe.expert_used_count', 9),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: ['qwen3moe.expert_used_count 9', 'qwen3moe.expert_count 8'],
  },
  {
    fixture: 'qwen3moe',
    name: 'expert_used_count 0',
    kvs: u32('qwen3moe.expert_used_count', 0),
    code: META_RANGE,
    exit: bad,
    field: 'qwen3moe.expert_used_count',
    mentions: ['qwen3moe.expert_used_count', '0 is outside'],
  },
  {
    fixture: 'qwen3moe',
    name: 'expert_count 0',
    kvs: u32('qwen3moe.expert_count', 0),
    code: META_RANGE,
    exit: bad,
    field: 'qwen3moe.expert_count',
    mentions: ['qwen3moe.expert_count', '0 is outside'],
  },
  {
    fixture: 'qwen3moe',
    name: "expert_count beyond llama.cpp's 1024",
    kvs: u32('qwen3moe.expert_count', 2048),
    code: META_RANGE,
    exit: bad,
    field: 'qwen3moe.expert_count',
    mentions: ['qwen3moe.expert_count', '2048'],
  },
  {
    fixture: 'qwen3moe',
    name: 'expert_count missing',
    kvs: delKv('qwen3moe.expert_count'),
    code: META_MISSING,
    exit: bad,
    field: 'qwen3moe.expert_count',
    mentions: ['qwen3moe.expert_count'],
  },
  {
    fixture: 'qwen3moe',
    name: 'expert_feed_forward_length missing',
    kvs: delKv('qwen3moe.expert_feed_forward_length'),
    code: META_MISSING,
    exit: bad,
    field: 'qwen3moe.expert_feed_forward_length',
    mentions: ['qwen3moe.expert_feed_forward_length'],
  },
  {
    fixture: 'qwen3moe',
    name: 'ffn_up_exps with 7 experts',
    tensors: reshapeNamed('blk.0.ffn_up_exps.weight', [64, 96, 7]),
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['blk.0.ffn_up_exps.weight', '[64, 96, 7]', '[64, 96, 8]'],
  },
  {
    fixture: 'qwen3moe',
    name: 'a router missing',
    tensors: dropNamed('blk.1.ffn_gate_inp.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.1.ffn_gate_inp.weight'],
  },
  {
    fixture: 'qwen3moe',
    name: 'ffn_down_exps missing (in neither layout)',
    tensors: dropNamed('blk.0.ffn_down_exps.weight'),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.0.ffn_down_exps.weight', 'blk.0.ffn_down.0.weight'],
  },
  {
    fixture: 'phi3',
    name: 'longrope factors of the wrong length (16 for n_rot / 2 = 16 is right; 15 is not)',
    tensors: (ts) => [...ts, {name: 'rope_factors_long.weight', type: ggmlTypeById(GgmlType.F32)!, shape: [15], data: new Uint8Array(60)}],
    code: 'ARCH_BAD_TENSOR_SHAPE',
    exit: bad,
    mentions: ['rope_factors_long.weight', '[15]', '[16]'],
  },
  {
    fixture: 'phi3',
    name: 'longrope factors stored as F16',
    tensors: (ts) => [...ts, {name: 'rope_factors_short.weight', type: ggmlTypeById(GgmlType.F16)!, shape: [16], data: new Uint8Array(32)}],
    code: 'ARCH_UNSUPPORTED_TYPE',
    exit: unsupported,
    mentions: ['rope_factors_short.weight', 'F16'],
  },
  {
    fixture: 'phi3',
    name: 'rope.scaling.attn_factor NaN',
    kvs: setKv('phi3.rope.scaling.attn_factor', GgufValueType.FLOAT32, Number.NaN),
    code: META_RANGE,
    exit: bad,
    field: 'phi3.rope.scaling.attn_factor',
    mentions: ['phi3.rope.scaling.attn_factor'],
  },
  {
    fixture: 'qwen3moe',
    name: 'a dense FFN tensor in an expert model',
    tensors: (ts) => [
      ...ts,
      {name: 'blk.0.ffn_up.weight', type: ggmlTypeById(GgmlType.F32)!, shape: [64, 128], data: new Uint8Array(64 * 128 * 4)},
    ],
    code: 'ARCH_UNKNOWN_TENSOR',
    exit: unsupported,
    mentions: ['blk.0.ffn_up.weight'],
  },
]
/** The same keys on a llama file (stories260K). */
const LLAMA_FAMILY_CASES: Case[] = [
  {
    name: 'longrope on llama (only phi3 reads it)',
    kvs: setKv(`${A}.rope.scaling.type`, GgufValueType.STRING, 'longrope'),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.rope.scaling.type`, '"longrope"'],
  },
  {
    name: 'a sliding window on llama (no llama.cpp graph for it)',
    kvs: u32(`${A}.attention.sliding_window`, 16),
    code: 'ARCH_UNSUPPORTED',
    exit: unsupported,
    mentions: [`${A}.attention.sliding_window`],
  },
  {
    name: 'expert_used_count without expert_count',
    kvs: u32(`${A}.expert_used_count`, 2),
    code: 'ARCH_BAD_HPARAMS',
    exit: bad,
    mentions: [`${A}.expert_used_count 2`, `${A}.expert_count`],
  },
  {
    name: 'expert_count 4 on a file with dense FFN tensors',
    kvs: (kvs) => u32(`${A}.expert_used_count`, 2)(u32(`${A}.expert_count`, 4)(kvs)),
    code: 'ARCH_MISSING_TENSOR',
    exit: bad,
    mentions: ['blk.0.ffn_gate_inp.weight'],
  },
]

describe('hostile family models (gemma2, gemma3, qwen3moe, llama with experts): refused by name, fast', {skip: SKIP}, () => {
  before(() => spyOnNativeLoad())
  test('the unmodified fixtures, through the same read-and-write, load (the anchor)', async () => {
    for (const f of ['gemma2', 'gemma3', 'qwen3moe', 'phi3']) {
      const model = await Model.load(await familyVariant(f))
      model.dispose()
    }
  })
  test("phi3: a sliding_window key is read and ignored, as llama.cpp does (it disables Phi's window)", async () => {
    const model = await Model.load(await familyVariant('phi3', {kvs: u32('phi3.attention.sliding_window', 2047)}))
    assert.equal(model.config.nSwa, undefined)
    model.dispose()
  })
  for (const c of FAMILY_CASES) {
    test(`${c.fixture}: ${c.name} → ${c.code}`, async () => {
      await expectRefused(await familyVariant(c.fixture, {kvs: c.kvs, tensors: c.tensors}), c)
    })
  }
  for (const c of LLAMA_FAMILY_CASES) {
    test(`llama: ${c.name} → ${c.code}`, async () => {
      await expectRefused(await variant({kvs: c.kvs, tensors: c.tensors}), c)
    })
  }
})

describe('hostile models through the CLI: exit 3 or 5 with the code on stderr, never a signal', {skip: SKIP}, () => {
  const cases: Array<{name: string; file: () => Promise<string>; exit: number; code: string; mentions: string[]}> = [
    {
      name: 'block_count huge',
      file: () => variant({kvs: u32(`${A}.block_count`, 1_000_000_000)}),
      exit: 3,
      code: 'GGUF_META_RANGE',
      mentions: [`${A}.block_count`, '1000000000'],
    },
    {
      name: 'unknown architecture',
      file: () => variant({kvs: setKv('general.architecture', GgufValueType.STRING, 'gptneox')}),
      exit: 5,
      code: 'ARCH_UNSUPPORTED',
      mentions: ['gptneox'],
    },
    {
      name: 'misshapen tensor',
      file: () => variant({tensors: editTensor('blk.2.attn_k.weight', {shape: [64, 64]})}),
      exit: 3,
      code: 'ARCH_BAD_TENSOR_SHAPE',
      mentions: ['blk.2.attn_k.weight', '[64, 64]'],
    },
    {
      name: 'bos id outside the vocabulary',
      file: () => variant({kvs: u32('tokenizer.ggml.bos_token_id', 512)}),
      exit: 3,
      code: 'TOKENIZER_BAD_SPECIAL_TOKEN',
      mentions: ['tokenizer.ggml.bos_token_id', '512'],
    },
    {
      name: 'an unsupported family (gemma4)',
      file: () => variant({kvs: setKv('general.architecture', GgufValueType.STRING, 'gemma4')}),
      exit: 5,
      code: 'ARCH_UNSUPPORTED',
      mentions: ['gemma4', 'gemma2, gemma3'],
    },
  ]
  for (const c of cases) {
    test(`${c.name}: exit ${c.exit}, ${c.code}`, async () => {
      const path = await c.file()
      const r = await runCliAsync(['run', '-m', path, '-p', 'x', '-n', '4'], {timeoutMs: 20_000})
      assert.equal(r.status, c.exit, `exit status (null would be a signal); stderr: ${r.stderr}`)
      assert.ok(r.stderr.includes(`[${c.code}]`), r.stderr)
      for (const m of c.mentions) assert.ok(r.stderr.includes(m), `stderr names ${m}: ${r.stderr}`)
      assert.equal(r.stdout, '', 'nothing generated')
    })
  }

  test('with --json the refusal is also one JSON document on stdout', async () => {
    const path = await variant({kvs: u32(`${A}.attention.head_count_kv`, 3)})
    const r = await runCliAsync(['run', '-m', path, '-p', 'x', '--json'], {timeoutMs: 20_000})
    assert.equal(r.status, 3, r.stderr)
    const doc = JSON.parse(r.stdout) as {error: {code: string; message: string}}
    assert.equal(doc.error.code, 'ARCH_BAD_HPARAMS')
    assert.match(doc.error.message, /head_count_kv 3/)
  })
})

// ---- the native loader on its own --------------------------------------------------------------

describe('the native loader re-checks what it is given (defence in depth)', {skip: SKIP}, () => {
  let addon: NativeAddon
  let plan: ModelPlan
  let config: NativeModelConfig
  let honest: NativeTensorDesc[]
  let fileSize: number
  const ROLE = (name: (typeof TENSOR_ROLES)[number]) => TENSOR_ROLES.indexOf(name)
  /** Index of the descriptor of `role` in `layer`. */
  const at = (role: (typeof TENSOR_ROLES)[number], layer: number) => {
    const i = honest.findIndex((t) => t.role === ROLE(role) && t.layer === layer)
    assert.ok(i >= 0, `${role} of layer ${layer}`)
    return i
  }
  /** The honest table with one descriptor changed. */
  const lie = (i: number, change: Partial<NativeTensorDesc>) => honest.map((t, j) => (j === i ? {...t, ...change} : {...t}))

  before(() => {
    addon = loadAddon()
    const gguf = readGgufModel(STORIES)
    plan = planModel(gguf)
    config = nativeConfig(plan.config)
    honest = plan.tensors.map(nativeTensor)
    fileSize = gguf.shards[0]!.fileSize
  })

  /** The load is rejected (never resolved, never a crash) with `code`, the message naming everything in `mentions`. */
  async function rejects(
    cfg: NativeModelConfig,
    paths: string[],
    tensors: NativeTensorDesc[],
    code: string,
    ...mentions: Array<string | RegExp>
  ) {
    await assert.rejects(addon.modelLoad(cfg, paths, tensors), (e: unknown) => {
      assert.ok(e instanceof Error, `an Error, got ${String(e)}`)
      assert.equal((e as Error & {code?: string}).code, code, e.message)
      for (const m of mentions) {
        if (typeof m === 'string') assert.ok(e.message.includes(m), `"${e.message}" names ${JSON.stringify(m)}`)
        else assert.match(e.message, m)
      }
      return true
    })
  }

  test('the honest descriptors load (the anchor: each rejection below is caused by its one lie)', async () => {
    const h = await addon.modelLoad(config, [STORIES], honest)
    addon.modelFree(h)
  })

  test('an offset past the end of the file', async () => {
    await rejects(
      config,
      [STORIES],
      lie(at('token_embd', -1), {offset: fileSize + 32}),
      'ENGINE_BAD_MODEL',
      'token_embd',
      String(fileSize + 32),
      String(fileSize),
    )
  })

  test('a byte range that runs past the end of the file (the last tensor, shifted)', async () => {
    const i = honest.reduce((best, t, j) => (t.offset > honest[best]!.offset ? j : best), 0)
    const t = honest[i]!
    await rejects(
      config,
      [STORIES],
      lie(i, {offset: fileSize - t.size + 32}),
      'ENGINE_BAD_MODEL',
      TENSOR_ROLES[t.role]!,
      'outside its file',
    )
  })

  test('an offset near 2^53 (offset + size would wrap in a careless check)', async () => {
    await rejects(
      config,
      [STORIES],
      lie(at('output', -1), {offset: Number.MAX_SAFE_INTEGER - 100}),
      'ENGINE_BAD_MODEL',
      'output',
      String(Number.MAX_SAFE_INTEGER - 100),
    )
  })

  test('a size that does not match the shape', async () => {
    await rejects(config, [STORIES], lie(at('attn_q', 2), {size: 16384 - 4}), 'ENGINE_BAD_MODEL', 'attn_q', 'layer 2', '16380', '16384')
  })

  test('a role id out of range (12, -1)', async () => {
    await rejects(config, [STORIES], lie(3, {role: TENSOR_ROLES.length}), 'ENGINE_BAD_MODEL', `role ${TENSOR_ROLES.length}`, 'tensor 3')
    await rejects(config, [STORIES], lie(3, {role: -1}), 'ENGINE_BAD_MODEL', 'role -1')
  })

  test('a layer out of range, and a model-wide tensor given a layer', async () => {
    await rejects(config, [STORIES], lie(at('ffn_up', 4), {layer: 5}), 'ENGINE_BAD_MODEL', 'ffn_up', 'layer 5')
    await rejects(config, [STORIES], lie(at('ffn_up', 4), {layer: -1}), 'ENGINE_BAD_MODEL', 'ffn_up', 'layer -1')
    await rejects(config, [STORIES], lie(at('output_norm', -1), {layer: 0}), 'ENGINE_BAD_MODEL', 'output_norm', 'layer 0')
  })

  test('a file index out of range', async () => {
    await rejects(config, [STORIES], lie(at('attn_v', 1), {file: 1}), 'ENGINE_BAD_MODEL', 'attn_v', 'file index 1')
    await rejects(config, [STORIES], lie(at('attn_v', 1), {file: -1}), 'ENGINE_BAD_MODEL', 'attn_v', 'file index -1')
  })

  test('a shape that disagrees with the config (attn_k as wide as attn_q, size to match)', async () => {
    await rejects(
      config,
      [STORIES],
      lie(at('attn_k', 0), {ne: [64, 64], size: 64 * 64 * 4}),
      'ENGINE_BAD_MODEL',
      'attn_k',
      '[64, 64]',
      '[64, 32]',
    )
  })

  test('a shape with a third dimension that is not 1', async () => {
    await rejects(config, [STORIES], lie(at('ffn_gate', 3), {ne: [64, 172, 2]}), 'ENGINE_BAD_MODEL', 'ffn_gate', 'layer 3')
  })

  test('a config that disagrees with the tensors (n_ff 173)', async () => {
    await rejects({...config, n_ff: 173}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'ffn_gate', '[64, 172]', '[64, 173]')
  })

  test('n_layer 0, n_layer beyond the limit, n_head_kv 0, n_vocab 0', async () => {
    await rejects({...config, n_layer: 0}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'n_layer 0')
    await rejects({...config, n_layer: 1 << 30}, [STORIES], honest, 'ENGINE_BAD_MODEL', `n_layer ${1 << 30}`)
    await rejects({...config, n_head_kv: 0}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'n_head_kv 0')
    await rejects({...config, n_vocab: 0}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'n_vocab 0')
  })

  test('head_dim odd, and rope dimensions beyond it', async () => {
    await rejects({...config, head_dim: 7}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'head_dim 7')
    await rejects({...config, n_rot: 16}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'n_rot 16')
  })

  test('non-finite numerics in the config', async () => {
    await rejects({...config, rope_freq_base: Number.NaN}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'rope_freq_base')
    await rejects({...config, norm_eps: Number.POSITIVE_INFINITY}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'norm_eps')
    await rejects({...config, rope_type: 7}, [STORIES], honest, 'ENGINE_BAD_MODEL', 'rope_type 7')
  })

  test('a type id the engine lacks (IQ2_XXS = 16, IQ4_XS = 23, 9999)', async () => {
    await rejects(config, [STORIES], lie(at('attn_output', 0), {type: 16}), 'ENGINE_UNSUPPORTED', 'attn_output', 'type 16')
    await rejects(config, [STORIES], lie(at('attn_output', 0), {type: 23}), 'ENGINE_UNSUPPORTED', 'attn_output', 'type 23')
    await rejects(config, [STORIES], lie(at('attn_output', 0), {type: 9999}), 'ENGINE_UNSUPPORTED', 'attn_output', 'type 9999')
  })

  test('a norm in F16 (the forward pass reads norms as F32)', async () => {
    await rejects(config, [STORIES], lie(at('ffn_norm', 2), {type: GgmlType.F16, size: 128}), 'ENGINE_UNSUPPORTED', 'ffn_norm', 'F16')
  })

  test('a tensor missing, and a tensor given twice', async () => {
    await rejects(
      config,
      [STORIES],
      honest.filter((_, j) => j !== at('ffn_down', 4)),
      'ENGINE_BAD_MODEL',
      'blk.4.ffn_down',
      'missing',
    )
    await rejects(config, [STORIES], [...honest.map((t) => ({...t})), {...honest[at('attn_q', 1)]!}], 'ENGINE_BAD_MODEL', 'attn_q', 'twice')
  })

  test('no files or no tensors: ENGINE_INVALID_ARGUMENT', async () => {
    await rejects(config, [], honest, 'ENGINE_INVALID_ARGUMENT')
    await rejects(config, [STORIES], [], 'ENGINE_INVALID_ARGUMENT')
  })

  test('a file that does not exist: ENGINE_IO naming it', async () => {
    const missing = join(dir, 'no-such-model.gguf')
    await rejects(config, [missing], honest, 'ENGINE_IO', missing)
  })

  test('fields that are not integers are refused before any work (a thrown TypeError/RangeError)', () => {
    assert.throws(() => addon.modelLoad({...config, n_embd: 64.5}, [STORIES], honest), /n_embd must be a 32-bit integer/)
    assert.throws(() => addon.modelLoad({...config, n_embd: 2 ** 40}, [STORIES], honest), /n_embd must be a 32-bit integer/)
    assert.throws(() => addon.modelLoad(config, [STORIES], lie(0, {offset: -1})), /offset must be a non-negative integer/)
    assert.throws(() => addon.modelLoad(config, [STORIES], lie(0, {ne: [64, 512, 1, 1, 1]})), /1 to 4 dimensions/)
    assert.throws(() => addon.modelLoad(config, [STORIES], lie(0, {ne: []})), /1 to 4 dimensions/)
  })

  test('after every rejection the process is alive and the honest model still generates', async () => {
    const h = await addon.modelLoad(config, [STORIES], honest)
    const ctx = await addon.contextCreate(h, {nCtx: 16, nBatch: 16, threads: 1, kvType: 1})
    const logits = new Float32Array(config.n_vocab)
    await addon.decode(ctx, Int32Array.of(1, 403, 407, 261, 378), 0, 1, logits)
    assert.ok(logits.every(Number.isFinite))
    addon.contextFree(ctx)
    addon.modelFree(h)
  })
})

// ---- one owner per fact, and the other side agrees ------------------------------------------

describe('the native loader re-checks expert and sliding-window fields (defence in depth)', {skip: SKIP}, () => {
  const QWEN3MOE = sharedPath('fixtures', 'qwen3moe.gguf')
  const GEMMA2 = sharedPath('fixtures', 'gemma2.gguf')
  async function rejects(
    file: string,
    edit: (c: NativeModelConfig, t: NativeTensorDesc[]) => [NativeModelConfig, NativeTensorDesc[]],
    ...mentions: string[]
  ) {
    const plan = planModel(readGgufModel(file))
    const [cfg, tensors] = edit(nativeConfig(plan.config), plan.tensors.map(nativeTensor))
    await assert.rejects(loadAddon().modelLoad(cfg, [file], tensors), (e: unknown) => {
      assert.equal((e as Error & {code?: string}).code, 'ENGINE_BAD_MODEL', (e as Error).message)
      for (const m of mentions) assert.ok((e as Error).message.includes(m), `"${(e as Error).message}" names ${m}`)
      return true
    })
  }
  const role = (name: (typeof TENSOR_ROLES)[number]) => TENSOR_ROLES.indexOf(name)
  test('the honest tables load (the anchor)', async () => {
    for (const file of [QWEN3MOE, GEMMA2]) {
      const plan = planModel(readGgufModel(file))
      loadAddon().modelFree(await loadAddon().modelLoad(nativeConfig(plan.config), [file], plan.tensors.map(nativeTensor)))
    }
  })
  test('n_expert_used above n_expert, n_expert beyond 1024, experts without n_ff_exp', async () => {
    await rejects(QWEN3MOE, (c, t) => [{...c, n_expert_used: 9}, t], 'n_expert_used 9')
    await rejects(QWEN3MOE, (c, t) => [{...c, n_expert: 2048}, t], 'n_expert 2048')
    await rejects(QWEN3MOE, (c, t) => [{...c, n_ff_exp: 0}, t], 'n_ff_exp 0')
  })
  test('a fused expert tensor given as one expert of the split layout, or with an index out of range', async () => {
    const exps = (t: NativeTensorDesc[]) => t.findIndex((d) => d.role === role('ffn_up_exps') && d.layer === 1)
    await rejects(
      QWEN3MOE,
      (c, t) => [c, t.map((d, i) => (i === exps(t) ? {...d, expert: 3} : d))],
      'ffn_up_exps',
      '[64, 96, 8]',
      '[64, 96, 1]',
    )
    await rejects(
      QWEN3MOE,
      (c, t) => [c, t.map((d, i) => (i === exps(t) ? {...d, expert: 8, ne: [64, 96], size: d.size / 8} : d))],
      'expert 8 out of range',
    )
    await rejects(
      QWEN3MOE,
      (c, t) => [c, t.map((d) => (d.role === role('attn_q') && d.layer === 0 ? {...d, expert: 0} : d))],
      'expert index 0',
    )
  })
  test('one expert given twice (fused and split), and an expert missing', async () => {
    await rejects(
      QWEN3MOE,
      (c, t) => {
        const fused = t.find((d) => d.role === role('ffn_gate_exps') && d.layer === 0)!
        return [c, [...t, {...fused, expert: 5, ne: [64, 96], size: fused.size / 8}]]
      },
      'given twice',
      'expert 5',
    )
    await rejects(
      QWEN3MOE,
      (c, t) => [c, t.filter((d) => !(d.role === role('ffn_down_exps') && d.layer === 1))],
      'blk.1.ffn_down_exps',
      'missing',
    )
  })
  test('sliding-window layers with n_swa 0, and post-norms in only some blocks', async () => {
    await rejects(GEMMA2, (c, t) => [{...c, n_swa: 0}, t], 'sliding-window layer', 'n_swa is 0')
    await rejects(GEMMA2, (c, t) => [c, t.filter((d) => !(d.role === role('attn_post_norm') && d.layer === 2))], 'attn_post_norm')
  })
  test('post-norms follow the sublayers a block has: a removed FFN may keep its post-norm (unused) or drop it, a kept FFN may not drop it', async () => {
    const plan = planModel(readGgufModel(GEMMA2))
    const ffn = ['ffn_gate', 'ffn_up', 'ffn_down'].map((r) => role(r as (typeof TENSOR_ROLES)[number]))
    const cut = (c: NativeModelConfig, t: NativeTensorDesc[]): [NativeModelConfig, NativeTensorDesc[]] => [
      {...c, ffn_removed: Uint8Array.from({length: plan.config.nLayer}, (_, i) => Number(i === 1))},
      t.filter((d) => !(d.layer === 1 && ffn.includes(d.role))),
    ]
    const [cfg, tensors] = cut(nativeConfig(plan.config), plan.tensors.map(nativeTensor))
    loadAddon().modelFree(await loadAddon().modelLoad(cfg, [GEMMA2], tensors))
    loadAddon().modelFree(
      await loadAddon().modelLoad(
        cfg,
        [GEMMA2],
        tensors.filter((d) => !(d.layer === 1 && d.role === role('ffn_post_norm'))),
      ),
    )
    await rejects(
      GEMMA2,
      (c, t) => [c, t.filter((d) => !(d.layer === 1 && d.role === role('ffn_post_norm')))],
      'block 1',
      'ffn_post_norm is missing',
    )
  })
})

describe('a context whose KV cache cannot fit in memory', {skip: SKIP}, () => {
  test('is refused before anything is allocated, naming the bytes it would need', async () => {
    const {makeTestModel} = await import('../../../scripts/make-test-model.js')
    const path = join(dir, 'wide-kv.gguf')
    // 16 blocks x 2 KV heads x head_dim 128: 16 KiB of F16 cache per position, 256 GiB at 2^24 positions.
    await makeTestModel(path, {
      arch: 'llama',
      nEmbd: 256,
      nLayer: 16,
      nHead: 2,
      nHeadKv: 2,
      nFf: 64,
      nCtx: 1 << 24,
      type: 'q8_0',
      seed: 5n,
      tokenizerFrom: STORIES,
    })
    const model = await Model.load(path)
    try {
      const nCtx = 1 << 24
      const need = nCtx * 16 * 2 * 256 * 2
      const {totalmem} = await import('node:os')
      assert.ok(totalmem() < need, `this machine has ${totalmem()} bytes: the case needs more memory than that to be a refusal`)
      const t0 = performance.now()
      await assert.rejects(model.createContext({nCtx, nBatch: 1, threads: 1, kvType: 'f16'}), (e: unknown) => {
        assert.ok(e instanceof RunnerError, String(e))
        assert.equal(e.code, 'ENGINE_NO_MEMORY', e.message)
        assert.equal(e.exitCode, ExitCode.failure, 'out of memory exits 1 (failure), not 2 (usage)')
        assert.ok(e.message.includes(`needs ${need} bytes`), `names the ${need} bytes it needs: ${e.message}`)
        assert.ok(e.message.includes('16 layers'), e.message)
        return true
      })
      assert.ok(performance.now() - t0 < 1000, 'refused without touching memory')
      // The anchor: the same model with a context that fits is created.
      const ctx = await model.createContext({nCtx: 4096, nBatch: 8, threads: 1, kvType: 'f16'})
      ctx.dispose()
    } finally {
      model.dispose()
    }
  })
})

describe('TypeScript tables agree with the engine', () => {
  test("src/lib/arch/roles.ts TENSOR_ROLES deep-equals the engine's tensorRoles() (runner.h runner_tensor_role)", () => {
    assert.deepEqual([...TENSOR_ROLES], loadAddon().tensorRoles())
  })

  test('ENGINE_WEIGHT_TYPES (src/lib/arch/plan.ts) equals the weight types the native kernel table implements', () => {
    // A weight type is one the engine can multiply by: a vec_dot kernel (the matmul) for it.
    const native = typeTraits()
      .filter((t) => t.variants.length > 0)
      .map((t) => t.name)
    assert.deepEqual([...ENGINE_WEIGHT_TYPES].sort(), [...native].sort())
  })

  test(
    "a weight type the TypeScript side admits really runs: stories260K in Q8_1 generates llama.cpp's greedy tokens",
    {skip: SKIP},
    async () => {
      // Q8_1 is in both tables (llama.cpp never writes it as a weight, the engine dots it against Q8_1
      // activations). Every 2-D weight whose rows fill whole blocks (all but ffn_down, ne0 = 172) is
      // quantized with the engine's reference quantizer; 8-bit error is far below the margins of the first
      // 16 greedy tokens in shared/reference/stories260K.json (all > 0.8).
      const m = stories()
      const q81 = ggmlTypeById(GgmlType.Q8_1)!
      const bytes = readFileSync(STORIES)
      const tensors = m.tensors.map((t): GgufWriteTensor => {
        if (t.shape.length !== 2 || t.shape[0]! % q81.blockSize !== 0)
          return {name: t.name, type: t.type, shape: [...t.shape], data: {file: t.file, offset: t.offset}}
        const f32 = new Float32Array(bytes.buffer.slice(bytes.byteOffset + t.offset, bytes.byteOffset + t.offset + t.byteSize))
        return {name: t.name, type: q81, shape: [...t.shape], data: quantizeRef(q81, f32)}
      })
      const path = join(dir, 'stories260K-q8_1.gguf')
      await writeGguf(path, {kvs: [...m.kvs], tensors})
      const reference = JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {
        greedy: Array<{prompt_ids: number[]; ids: number[]}>
      }
      const g = reference.greedy[0]!
      const model = await Model.load(path)
      try {
        assert.ok(model.plan.tensors.filter((t) => t.type.name === 'Q8_1').length >= 20, 'most weights are Q8_1')
        const ctx = await model.createContext({nCtx: 64, threads: 1})
        const stream = ctx.generate(g.prompt_ids, {maxTokens: 16, sampling: resolveSamplingOptions({temperature: 0})})
        for await (const _ of stream) {
          // drain
        }
        const result = await stream.result
        assert.deepEqual(result.tokens, g.ids.slice(0, 16))
        ctx.dispose()
      } finally {
        model.dispose()
      }
    },
  )
})

// Keep the GgufError import honest: the metadata refusals above are GgufErrors (a RunnerError subclass).
test('metadata refusals are GgufErrors naming the key as their field', {skip: SKIP}, async () => {
  const path = await variant({kvs: u32(`${A}.block_count`, 1_000_000_000)})
  await assert.rejects(
    Model.load(path),
    (e: unknown) => e instanceof GgufError && e.field === `${A}.block_count` && e.exitCode === ExitCode.invalidModel,
  )
})
