import {ENGINE_WEIGHT_TYPES, type ModelPlan, type TensorBinding, type TensorRole} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'
import type {LoraAdapter, LoraTensorPair} from './adapter.js'

/**
 * The roles a LoRA pair may adapt (the engine adds the delta after their matmul: native model/lora.c),
 * and why the others are refused. llama.cpp also adapts token_embd (a and b swapped, through
 * get_rows) and the experts (build_lora_mm_id); runner does not yet, and says so by name.
 */
export const LORA_ROLES: ReadonlySet<TensorRole> = new Set<TensorRole>([
  'attn_q',
  'attn_k',
  'attn_v',
  'attn_output',
  'attn_qkv',
  'ffn_gate',
  'ffn_up',
  'ffn_down',
  'ffn_gate_up',
  'output',
])

const NOT_ADAPTABLE: Partial<Record<TensorRole, string>> = {
  token_embd: 'a LoRA on the token embeddings is not supported yet',
  ffn_gate_exps: 'a LoRA on expert weights is not supported yet',
  ffn_up_exps: 'a LoRA on expert weights is not supported yet',
  ffn_down_exps: 'a LoRA on expert weights is not supported yet',
  ffn_gate_inp: 'a LoRA on the expert router is not supported',
}

/** One adapted weight as the engine takes it (engine/model.ts turns it into runner_lora_pair_desc). */
export interface LoraPairBinding {
  readonly target: string
  readonly role: TensorRole
  readonly layer: number
  readonly rank: number
  readonly a: {readonly type: number; readonly shape: readonly [number, number]; readonly offset: number; readonly size: number}
  readonly b: {readonly type: number; readonly shape: readonly [number, number]; readonly offset: number; readonly size: number}
}

function part(t: LoraTensorPair['a']): LoraPairBinding['a'] {
  return {type: t.type.id, shape: [t.shape[0]!, t.shape[1]!], offset: t.offset, size: t.byteSize}
}

/**
 * Match every pair of the adapter to the base tensor it names, and check what llama.cpp checks
 * (same architecture; the tensor exists; a's ne[0] is the weight's n_in and b's ne[1] its n_out)
 * plus what runner needs (a role the engine adapts, a weight type with kernels). Refusals name the
 * adapter, the tensor and the values.
 */
export function bindLoraAdapter(adapter: LoraAdapter, plan: ModelPlan): LoraPairBinding[] {
  const where = quoted(adapter.path)
  if (adapter.architecture !== plan.config.architecture)
    throw new RunnerError(
      'LORA_WRONG_BASE',
      `${where} is an adapter for ${quoted(adapter.architecture)} models, the model is ${quoted(plan.config.architecture)} (general.architecture)`,
      ExitCode.invalidModel,
    )
  const byName = new Map<string, TensorBinding>(plan.tensors.map((t) => [t.name, t]))
  return adapter.pairs.map((p) => {
    const base = byName.get(p.target)
    if (!base)
      throw new RunnerError(
        'LORA_WRONG_BASE',
        `${where}: tensor ${quoted(p.target)} does not exist in the model` +
          (p.target === 'output.weight' && plan.config.tiedEmbeddings ? ' (its head is tied to token_embd)' : '') +
          ' (an adapter made for another base model?)',
        ExitCode.invalidModel,
      )
    if (!LORA_ROLES.has(base.role))
      throw new RunnerError(
        'LORA_UNSUPPORTED',
        `${where}: ${quoted(p.target)}: ${NOT_ADAPTABLE[base.role] ?? `a LoRA on ${base.role} is not supported`}`,
        ExitCode.unsupported,
      )
    const [nIn, nOut] = [base.shape[0]!, base.shape[1]!]
    if (p.a.shape[0] !== nIn || p.b.shape[1] !== nOut)
      throw new RunnerError(
        'LORA_WRONG_BASE',
        `${where}: ${quoted(p.target)} is [${nIn}, ${nOut}] in the model, its lora_a is [${p.a.shape.join(', ')}] and lora_b ` +
          `[${p.b.shape.join(', ')}] (expected [${nIn}, rank] and [rank, ${nOut}]: an adapter made for another base model?)`,
        ExitCode.invalidModel,
      )
    for (const t of [p.a, p.b])
      if (!ENGINE_WEIGHT_TYPES.has(t.type.name))
        throw new RunnerError(
          'LORA_UNSUPPORTED',
          `${where}: tensor ${quoted(t.name)} is ${t.type.name}, which the engine has no kernels for (${[...ENGINE_WEIGHT_TYPES].join(', ')})`,
          ExitCode.unsupported,
        )
    return {target: p.target, role: base.role, layer: base.layer, rank: p.a.shape[1]!, a: part(p.a), b: part(p.b)}
  })
}
