import {Ajv} from 'ajv'

import {ExitCode, RunnerError} from '../errors.js'
import {type GgmlTypeInfo, ggmlTypeByName, type GgufModelFiles, type GgufTensorInfo} from '../gguf/index.js'
import {quoted} from '../util/index.js'

/** Tensor types `runner quantize` can write (the engine's reference quantizers, byte-identical to llama.cpp's). */
export const QUANTIZE_TYPES = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q2_K',
  'Q3_K',
  'Q4_K',
  'Q5_K',
  'Q6_K',
  'IQ4_NL',
  'MXFP4',
] as const
/** Types it can read and convert from (dequantizing requantizes: refused, as llama.cpp does without --allow-requantize). */
const SOURCE_TYPES = new Set(['F32', 'F16', 'BF16'])

/**
 * What `--type` accepts: llama.cpp's llama-quantize names, each a LLAMA_FTYPE (written as
 * general.file_type) and the default tensor type of that file type (llama_ftype_get_default_type).
 * Without --pure a name means llama.cpp's mix for that file type (llama_tensor_get_type); with
 * --pure every eligible tensor gets the default type. Q3_K, Q4_K and Q5_K are llama-quantize's
 * aliases of Q3_K_M, Q4_K_M and Q5_K_M; MXFP4 is its MXFP4_MOE.
 */
export const QUANTIZE_MIXES: Readonly<Record<string, {readonly ftype: number; readonly base: string}>> = {
  // F32 (LLAMA_FTYPE_ALL_F32): widening an F16 file, or a merge (--merge-lora) kept in full precision
  F32: {ftype: 0, base: 'F32'},
  F16: {ftype: 1, base: 'F16'},
  BF16: {ftype: 32, base: 'BF16'},
  Q8_0: {ftype: 7, base: 'Q8_0'},
  Q4_0: {ftype: 2, base: 'Q4_0'},
  Q4_1: {ftype: 3, base: 'Q4_1'},
  Q5_0: {ftype: 8, base: 'Q5_0'},
  Q5_1: {ftype: 9, base: 'Q5_1'},
  Q2_K: {ftype: 10, base: 'Q2_K'},
  Q3_K_S: {ftype: 11, base: 'Q3_K'},
  Q3_K_M: {ftype: 12, base: 'Q3_K'},
  Q3_K_L: {ftype: 13, base: 'Q3_K'},
  Q4_K_S: {ftype: 14, base: 'Q4_K'},
  Q4_K_M: {ftype: 15, base: 'Q4_K'},
  Q5_K_S: {ftype: 16, base: 'Q5_K'},
  Q5_K_M: {ftype: 17, base: 'Q5_K'},
  Q6_K: {ftype: 18, base: 'Q6_K'},
  IQ4_NL: {ftype: 25, base: 'IQ4_NL'},
  MXFP4: {ftype: 38, base: 'MXFP4'},
  Q3_K: {ftype: 12, base: 'Q3_K'},
  Q4_K: {ftype: 15, base: 'Q4_K'},
  Q5_K: {ftype: 17, base: 'Q5_K'},
}

/** llama.cpp's LLAMA_FTYPE values, for general.file_type, by --type name. */
export const FILE_TYPE: Readonly<Record<string, number>> = {
  ...Object.fromEntries(Object.entries(QUANTIZE_MIXES).map(([k, v]) => [k, v.ftype])),
}

export interface TypePlanRule {
  /** A regular expression matched against the whole tensor name. */
  readonly pattern: string
  readonly type: string
}

export interface QuantizeOptions {
  /** A --type name (QUANTIZE_MIXES): a tensor type or one of llama.cpp's named mixes. */
  readonly type: string
  /** One type for every eligible tensor (llama.cpp's --pure) instead of the named mix. */
  readonly pure: boolean
  /** Leave output.weight as it is (llama.cpp's --leave-output-tensor). */
  readonly keepOutput?: boolean
  /** Per-tensor rules, first match wins; a matched tensor skips the mix rules (llama.cpp's --tensor-type). */
  readonly plan?: readonly TypePlanRule[]
}

export interface TensorDecision {
  readonly tensor: GgufTensorInfo
  readonly from: GgmlTypeInfo
  readonly to: GgmlTypeInfo
  /** Why `to` (for the summary and docs). */
  readonly reason: string
}

const validatePlan = new Ajv({allErrors: true}).compile({
  type: 'object',
  additionalProperties: false,
  required: ['rules'],
  properties: {
    rules: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['pattern', 'type'],
        properties: {pattern: {type: 'string', minLength: 1}, type: {type: 'string', minLength: 1}},
      },
    },
  },
})

function usage(code: string, message: string): never {
  throw new RunnerError(code, message, ExitCode.usage)
}

function targetType(name: string, what: string): GgmlTypeInfo {
  const t = ggmlTypeByName(name)
  if (!t) usage('QUANT_BAD_TYPE', `${what}: unknown type ${quoted(name)} (${QUANTIZE_TYPES.join(', ')})`)
  if (!(QUANTIZE_TYPES as readonly string[]).includes(t.name)) {
    throw new RunnerError(
      'QUANT_UNSUPPORTED_TYPE',
      `${what}: ${t.name} cannot be written (${QUANTIZE_TYPES.join(', ')})`,
      ExitCode.unsupported,
    )
  }
  return t
}

/** The --type name resolved: its file type and default tensor type. */
function resolveMix(name: string): {name: string; ftype: number; base: GgmlTypeInfo} {
  const key = name.toUpperCase()
  const mix = QUANTIZE_MIXES[key]
  if (!mix) {
    if (ggmlTypeByName(key)) targetType(key, '--type') // a ggml type we cannot write: refused as unsupported
    usage('QUANT_BAD_TYPE', `--type: unknown type or mix ${quoted(name)} (${Object.keys(QUANTIZE_MIXES).join(', ')})`)
  }
  return {name: key, ftype: mix.ftype, base: targetType(mix.base, '--type')}
}

/** A type plan file's content, validated (ajv) and compiled; refused by name when malformed. */
export function parseTypePlan(json: unknown, file: string): TypePlanRule[] {
  if (!validatePlan(json)) {
    const e = validatePlan.errors?.[0]
    usage(
      'QUANT_BAD_PLAN',
      `${file}: ${e?.instancePath || '(root)'} ${e?.message ?? 'is invalid'}; expected {"rules": [{"pattern": "REGEX", "type": "Q8_0"}, ...]}`,
    )
  }
  const rules = (json as {rules: TypePlanRule[]}).rules
  rules.forEach((r, i) => {
    try {
      new RegExp(`^(?:${r.pattern})$`)
    } catch (error) {
      usage(
        'QUANT_BAD_PLAN',
        `${file}: /rules/${i}/pattern ${quoted(r.pattern)} is not a valid regular expression: ${(error as Error).message}`,
      )
    }
    targetType(r.type, `${file}: /rules/${i}/type`)
  })
  return rules
}

// ---- llama.cpp's mix rules (src/llama-quant.cpp) -------------------------------------------------

type Category =
  | 'token_embd'
  | 'output'
  | 'attn_q'
  | 'attn_k'
  | 'attn_v'
  | 'attn_qkv'
  | 'attn_kv_b'
  | 'attn_output'
  | 'ffn_up'
  | 'ffn_gate'
  | 'ffn_down'
  | 'other'

/** tensor_get_category: by name, in llama.cpp's order of tests. */
function category(name: string): Category {
  if (name === 'output.weight') return 'output'
  if (name === 'token_embd.weight' || name === 'per_layer_token_embd.weight') return 'token_embd'
  if (name.includes('attn_qkv.weight')) return 'attn_qkv'
  if (name.includes('attn_kv_b.weight')) return 'attn_kv_b'
  if (name.includes('attn_v.weight')) return 'attn_v'
  if (name.includes('attn_k.weight')) return 'attn_k'
  if (name.includes('attn_q.weight')) return 'attn_q'
  if (name.includes('attn_output.weight')) return 'attn_output'
  if (name.includes('ffn_up')) return 'ffn_up'
  if (name.includes('ffn_gate')) return 'ffn_gate'
  if (name.includes('ffn_down')) return 'ffn_down'
  return 'other'
}

const isAttnV = (c: Category) => c === 'attn_v' || c === 'attn_qkv' || c === 'attn_kv_b'

/** The layer of a blk.N. tensor, -1 for the others (llama_model_loader's weight_name_comparer). */
function layerOf(name: string): number {
  const m = /^blk\.(\d+)\./.exec(name)
  return m ? Number(m[1]) : -1
}

/** tensor_allows_quantization, for the tensors our architectures have. */
function allowsQuantization(t: GgufTensorInfo, keepOutput: boolean): boolean {
  if (t.shape.length < 2) return false
  const n = t.name
  if (!n.endsWith('weight') || n.includes('_norm.weight')) return false
  if (keepOutput && n === 'output.weight') return false
  return !n.includes('ffn_gate_inp.weight') && !n.includes('position_embd') && !n.includes('token_types')
}

interface MixState {
  readonly ftype: string
  readonly base: string
  readonly falcon: boolean
  readonly nLayer: number
  readonly nGqa: number
  readonly nExpert: number
  readonly is70B: boolean
  readonly tied: boolean
  readonly nAttnV: number
  iAttnV: number
  iFfnDown: number
  iFfnGate: number
  iFfnUp: number
}

/** i_layer < n/8 || i_layer >= 7n/8 || (i_layer - n/8) % 3 == 2, in C's integer arithmetic. */
function useMoreBits(i: number, n: number): boolean {
  const e = Math.trunc(n / 8)
  return i < e || i >= Math.trunc((7 * n) / 8) || (i - e) % 3 === 2
}

/** llama_tensor_get_type_impl for the file types runner writes (none needing an importance matrix). */
function mixType(s: MixState, t: GgufTensorInfo, cat: Category): string {
  const f = s.ftype
  let type = s.base
  if (cat === 'output' || (s.tied && cat === 'token_embd')) {
    const qk = ggmlTypeByName(s.base)!.blockSize
    if (f === 'MXFP4') type = 'Q8_0'
    else if (s.falcon || t.shape[0]! % qk !== 0) type = 'Q8_0'
    else if (type !== 'Q8_0') type = 'Q6_K'
  } else if (f === 'MXFP4') {
    type = (t.shape[2] ?? 1) > 1 ? 'MXFP4' : 'Q8_0'
  } else if (cat === 'token_embd') {
    // stays the default type for every file type runner writes
  } else if (isAttnV(cat)) {
    if (f === 'Q2_K') type = s.nGqa >= 4 ? 'Q4_K' : 'Q3_K'
    else if (f === 'Q3_K_M') type = s.iAttnV < 2 ? 'Q5_K' : 'Q4_K'
    else if (f === 'Q3_K_L') type = 'Q5_K'
    else if (f === 'IQ4_NL' && s.nGqa >= 4) type = 'Q5_K'
    else if ((f === 'Q4_K_M' || f === 'Q5_K_M') && useMoreBits(s.iAttnV, s.nAttnV)) type = 'Q6_K'
    else if (f === 'Q4_K_S' && s.iAttnV < 4) type = 'Q5_K'
    if (s.is70B && (type === 'Q3_K' || type === 'Q4_K')) type = 'Q5_K'
    if (s.nExpert === 8) type = 'Q8_0'
    s.iAttnV++
  } else if (cat === 'attn_k') {
    if (s.nExpert === 8) type = 'Q8_0'
  } else if (cat === 'ffn_down') {
    const [i, n] = s.nExpert > 1 ? [layerOf(t.name), s.nLayer] : [s.iFfnDown, s.nLayer]
    if (f === 'Q2_K') type = 'Q3_K'
    else if (f === 'Q3_K_M') type = i < Math.trunc(n / 16) ? 'Q5_K' : !s.falcon || useMoreBits(i, n) ? 'Q4_K' : 'Q3_K'
    else if (f === 'Q3_K_L') type = s.falcon ? 'Q4_K' : 'Q5_K'
    else if (f === 'Q4_K_M') {
      if (s.falcon) type = i < Math.trunc(n / 16) ? 'Q6_K' : useMoreBits(i, n) ? 'Q5_K' : 'Q4_K'
      else if (useMoreBits(i, n)) type = 'Q6_K'
    } else if (i < Math.trunc(n / 8) && f === 'IQ4_NL') type = 'Q5_K'
    else if (f === 'Q5_K_M' && useMoreBits(i, n)) type = 'Q6_K'
    else if (f === 'Q4_K_S' && !s.falcon && i < Math.trunc(n / 8)) type = 'Q5_K'
    s.iFfnDown++
  } else if (cat === 'attn_output') {
    if (!s.falcon) {
      if (s.nExpert === 8) {
        if (['Q2_K', 'Q3_K_S', 'Q3_K_M', 'IQ4_NL', 'Q4_K_S', 'Q4_K_M'].includes(f)) type = 'Q5_K'
      } else if (f === 'Q2_K') type = 'Q3_K'
      else if (f === 'Q3_K_M') type = 'Q4_K'
      else if (f === 'Q3_K_L') type = 'Q5_K'
    } else if (f === 'Q3_K_L') type = 'Q4_K'
  } else if (cat === 'ffn_gate') {
    // (llama.cpp's attn_qkv branch further down its chain is never reached: attn_qkv is attn_v-like)
    s.iFfnGate++
  } else if (cat === 'ffn_up') {
    s.iFfnUp++
  }
  return type
}

/**
 * tensor_type_fallback: a type whose block does not divide ne0 becomes Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0,
 * Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when that does not divide it either. (For the 32-value types
 * llama.cpp has no fallback and refuses the tensor; runner writes F16, as it always has.)
 */
const FALLBACK: Readonly<Record<string, string>> = {Q2_K: 'Q4_0', Q3_K: 'Q4_0', Q4_K: 'Q5_0', Q5_K: 'Q5_1', Q6_K: 'Q8_0'}

function fallback(t: GgufTensorInfo, to: GgmlTypeInfo): {to: GgmlTypeInfo; note: string} {
  const ne0 = t.shape[0]!
  if (ne0 % to.blockSize === 0) return {to, note: ''}
  const next = FALLBACK[to.name] ? ggmlTypeByName(FALLBACK[to.name]!)! : undefined
  if (next && ne0 % next.blockSize === 0) return {to: next, note: `, ${next.name} because ne0 ${ne0} is not a multiple of ${to.blockSize}`}
  return {to: ggmlTypeByName('F16')!, note: `, F16 because ne0 ${ne0} is not a multiple of ${to.blockSize}`}
}

function metaNumber(model: GgufModelFiles, key: string): number | undefined {
  const v = model.metadata.get(key)?.value
  if (typeof v === 'number') return v
  if (typeof v === 'bigint') return Number(v)
  if (v && typeof v === 'object' && 'items' in v) {
    const first = (v as {items: ArrayLike<number | bigint>}).items[0]
    return first === undefined ? undefined : Number(first)
  }
  return undefined
}

function mixState(model: GgufModelFiles, tensors: readonly GgufTensorInfo[], ftype: string, base: string): MixState {
  const arch = String(model.metadata.get('general.architecture')?.value ?? '')
  const nLayer = metaNumber(model, `${arch}.block_count`) ?? 1 + Math.max(-1, ...tensors.map((t) => layerOf(t.name)))
  const nHead = metaNumber(model, `${arch}.attention.head_count`) ?? 1
  const nHeadKv = metaNumber(model, `${arch}.attention.head_count_kv`) || nHead
  return {
    ftype,
    base,
    falcon: arch === 'falcon',
    nLayer,
    nGqa: nHeadKv > 0 ? Math.trunc(nHead / nHeadKv) : 1,
    nExpert: metaNumber(model, `${arch}.expert_count`) ?? 0,
    // llama.cpp's LLM_TYPE_70B for the llama family: 80 layers with grouped-query attention
    is70B: arch === 'llama' && nLayer === 80 && nHead !== nHeadKv,
    // init_quantize_state_counters: tied unless an output.weight exists (over every tensor of the file)
    tied: !model.tensors.some((t) => t.name === 'output.weight'),
    nAttnV: tensors.filter((t) => isAttnV(category(t.name))).length,
    iAttnV: 0,
    iFfnDown: 0,
    iFfnGate: 0,
    iFfnUp: 0,
  }
}

/**
 * Which type each tensor gets, as llama.cpp's llama_model_quantize decides it (no importance matrix):
 *  - eligible tensors (2-D or more, named *weight, not a norm, not the MoE router; output.weight
 *    unless --keep-output) get the --type's default type with --pure, else llama.cpp's mix rules for
 *    that file type, visited in llama.cpp's order (by layer, then name) since the rules count tensors;
 *  - a plan rule that matches a tensor sets its type instead (and, as llama.cpp's --tensor-type, the
 *    mix rules do not see it);
 *  - then the fallback for a block that does not divide ne0; 1-D tensors keep their type.
 */
export function planQuantization(
  model: GgufModelFiles,
  options: QuantizeOptions,
  tensors: readonly GgufTensorInfo[] = model.tensors,
  /** Tensors rewritten whatever their type (--merge-lora): the plan is not "nothing to do" then. */
  rewritten: ReadonlySet<string> = new Set(),
): TensorDecision[] {
  const mix = resolveMix(options.type)
  const rules = (options.plan ?? []).map((r) => ({...r, re: new RegExp(`^(?:${r.pattern})$`), used: false, to: targetType(r.type, 'plan')}))
  const arch = String(model.metadata.get('general.architecture')?.value ?? '')
  const mixed = !options.pure && mix.base.blockSize > 1
  if (mixed && arch === 'falcon') {
    throw new RunnerError(
      'QUANT_MIX_UNSUPPORTED',
      `llama.cpp's ${mix.name} mix has falcon-specific rules runner does not implement; pass --pure`,
      ExitCode.unsupported,
    )
  }
  const state = mixState(model, tensors, mix.name, mix.base.name)
  const order = tensors.map((t, i) => ({t, i, layer: layerOf(t.name)}))
  order.sort((a, b) => a.layer - b.layer || (a.t.name < b.t.name ? -1 : a.t.name > b.t.name ? 1 : 0))
  const decisions: TensorDecision[] = new Array(tensors.length)
  for (const {t, i} of order) {
    let to = t.type
    let reason = 'kept (1-D or not a weight)'
    if (allowsQuantization(t, Boolean(options.keepOutput))) {
      const rule = rules.find((r) => r.re.test(t.name))
      if (rule) {
        rule.used = true
        to = rule.to
        reason = `plan rule ${quoted(rule.pattern)}`
      } else if (mixed) {
        to = ggmlTypeByName(mixType(state, t, category(t.name)))!
        reason = to.id === mix.base.id ? `--type ${mix.name}` : `${mix.name} mix (llama.cpp's rule for ${category(t.name)})`
      } else {
        to = mix.base
        reason = `--type ${mix.name}${options.pure ? ' --pure' : ''}`
      }
      if (to.blockSize > 1) {
        const f = fallback(t, to)
        to = f.to
        reason += f.note
      }
    } else if (options.keepOutput && t.name === 'output.weight' && t.shape.length >= 2) {
      reason = 'kept (--keep-output)'
    }
    if (to.id !== t.type.id && !SOURCE_TYPES.has(t.type.name)) {
      usage(
        'QUANT_REQUANTIZE',
        `tensor ${t.name} is already ${t.type.name}; converting it to ${to.name} would requantize it, which loses precision twice; start from the F32/F16/BF16 file`,
      )
    }
    decisions[i] = {tensor: t, from: t.type, to, reason}
  }
  const unused = rules.find((r) => !r.used)
  if (unused) usage('QUANT_PLAN_UNUSED_RULE', `plan rule ${quoted(unused.pattern)} selects no tensor of this model`)
  if (decisions.every((d) => d.to.id === d.from.id && !rewritten.has(d.tensor.name))) {
    usage('QUANT_NOTHING_TO_DO', `nothing would change: the model is already ${mix.name} wherever this plan applies`)
  }
  return decisions
}
