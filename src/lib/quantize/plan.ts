import AjvModule from 'ajv'

import {ExitCode, RunnerError} from '../errors.js'
import {type GgmlTypeInfo, ggmlTypeByName, type GgufModelFiles, type GgufTensorInfo} from '../gguf/index.js'

/** Types `runner quantize` can write today (the engine's reference quantizers; K-quants arrive with issue #4). */
export const QUANTIZE_TYPES = ['F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1'] as const
/** Types it can read and convert from (dequantizing requantizes: refused, as llama.cpp does without --allow-requantize). */
const SOURCE_TYPES = new Set(['F32', 'F16', 'BF16'])

/** llama.cpp's LLAMA_FTYPE values, for general.file_type. */
export const FILE_TYPE: Readonly<Record<string, number>> = {F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q8_0: 7, Q5_0: 8, Q5_1: 9, BF16: 32}

export interface TypePlanRule {
  /** A regular expression matched against the whole tensor name. */
  readonly pattern: string
  readonly type: string
}

export interface QuantizeOptions {
  readonly type: string
  /** One type for every eligible tensor (llama.cpp's --pure). Required until the named mixes land. */
  readonly pure: boolean
  /** Leave output.weight as it is (llama.cpp's --leave-output-tensor). */
  readonly keepOutput?: boolean
  /** Per-tensor rules, first match wins, applied after the base policy. */
  readonly plan?: readonly TypePlanRule[]
}

export interface TensorDecision {
  readonly tensor: GgufTensorInfo
  readonly from: GgmlTypeInfo
  readonly to: GgmlTypeInfo
  /** Why `to` (for the summary and docs). */
  readonly reason: string
}

const Ajv = AjvModule as unknown as typeof AjvModule.default
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
  if (!t) usage('QUANT_BAD_TYPE', `${what}: unknown type ${JSON.stringify(name)} (${QUANTIZE_TYPES.join(', ')})`)
  if (!(QUANTIZE_TYPES as readonly string[]).includes(t.name)) {
    throw new RunnerError('QUANT_UNSUPPORTED_TYPE', `${what}: ${t.name} cannot be written yet (${QUANTIZE_TYPES.join(', ')}; K-quants come with the K-quant kernels)`, ExitCode.unsupported)
  }
  return t
}

/** A type plan file's content, validated (ajv) and compiled; refused by name when malformed. */
export function parseTypePlan(json: unknown, file: string): TypePlanRule[] {
  if (!validatePlan(json)) {
    const e = validatePlan.errors?.[0]
    usage('QUANT_BAD_PLAN', `${file}: ${e?.instancePath || '(root)'} ${e?.message ?? 'is invalid'}; expected {"rules": [{"pattern": "REGEX", "type": "Q8_0"}, ...]}`)
  }
  const rules = (json as {rules: TypePlanRule[]}).rules
  rules.forEach((r, i) => {
    try {
      new RegExp(`^(?:${r.pattern})$`)
    } catch (error) {
      usage('QUANT_BAD_PLAN', `${file}: /rules/${i}/pattern ${JSON.stringify(r.pattern)} is not a valid regular expression: ${(error as Error).message}`)
    }
    targetType(r.type, `${file}: /rules/${i}/type`)
  })
  return rules
}

/**
 * Which type each tensor gets. Base policy (llama.cpp's --pure): every tensor of two or more
 * dimensions whose name ends in "weight" becomes the target type, except the MoE router
 * (ffn_gate_inp); 1-D tensors keep their type; a tensor whose ne0 is not a multiple of the target's
 * block falls back to F16, as llama.cpp does. Then --keep-output, then the plan's rules.
 */
export function planQuantization(model: GgufModelFiles, options: QuantizeOptions, tensors: readonly GgufTensorInfo[] = model.tensors): TensorDecision[] {
  const target = targetType(options.type, '--type')
  if (!options.pure) {
    throw new RunnerError(
      'QUANT_MIX_UNSUPPORTED',
      `${target.name} without --pure would be llama.cpp's default mix, which keeps some tensors in K-quant types this build cannot write yet; pass --pure (one type for every weight matrix), with a --type-plan for per-tensor exceptions`,
      ExitCode.unsupported,
    )
  }
  const rules = (options.plan ?? []).map((r) => ({...r, re: new RegExp(`^(?:${r.pattern})$`), used: false, to: targetType(r.type, 'plan')}))
  const decisions = tensors.map((t): TensorDecision => {
    let to = t.type
    let reason = 'kept (1-D or not a weight)'
    if (t.shape.length >= 2 && t.name.endsWith('weight') && !t.name.includes('ffn_gate_inp')) {
      to = target
      reason = `--type ${target.name}`
      if (options.keepOutput && t.name === 'output.weight') {
        to = t.type
        reason = 'kept (--keep-output)'
      }
    }
    const rule = rules.find((r) => r.re.test(t.name))
    if (rule) {
      rule.used = true
      to = rule.to
      reason = `plan rule ${JSON.stringify(rule.pattern)}`
    }
    if (to.id !== t.type.id && t.shape[0]! % to.blockSize !== 0) {
      to = ggmlTypeByName('F16')!
      reason += `, F16 because ne0 ${t.shape[0]} is not a multiple of ${to.blockSize}`
    }
    if (to.id !== t.type.id && !SOURCE_TYPES.has(t.type.name)) {
      usage('QUANT_REQUANTIZE', `tensor ${t.name} is already ${t.type.name}; converting it to ${to.name} would requantize it, which loses precision twice; start from the F32/F16/BF16 file`)
    }
    return {tensor: t, from: t.type, to, reason}
  })
  const unused = rules.find((r) => !r.used)
  if (unused) usage('QUANT_PLAN_UNUSED_RULE', `plan rule ${JSON.stringify(unused.pattern)} selects no tensor of this model`)
  if (decisions.every((d) => d.to.id === d.from.id)) {
    usage('QUANT_NOTHING_TO_DO', `nothing would change: the model is already ${target.name} wherever this plan applies`)
  }
  return decisions
}
