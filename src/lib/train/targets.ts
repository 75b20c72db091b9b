/**
 * `--targets`: which weights get a LoRA pair, in llama.cpp's tensor names (attn_q) or PEFT's module
 * names (q_proj), as one list; the default is the attention's q, k, v and output, as PEFT's
 * defaults for llama-family models. Each name selects that weight in every block.
 */
import type {TensorRole} from '../arch/index.js'
import type {Model, TrainTarget} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'

const NAMES: Readonly<Record<string, TensorRole>> = {
  attn_q: 'attn_q',
  attn_k: 'attn_k',
  attn_v: 'attn_v',
  attn_output: 'attn_output',
  ffn_gate: 'ffn_gate',
  ffn_up: 'ffn_up',
  ffn_down: 'ffn_down',
  output: 'output',
  q_proj: 'attn_q',
  k_proj: 'attn_k',
  v_proj: 'attn_v',
  o_proj: 'attn_output',
  gate_proj: 'ffn_gate',
  up_proj: 'ffn_up',
  down_proj: 'ffn_down',
  lm_head: 'output',
}

export const DEFAULT_TARGETS = 'attn_q,attn_k,attn_v,attn_output'

/** What a fused or expert weight would need, named when a model has one instead. */
const NOT_TRAINABLE: Partial<Record<TensorRole, string>> = {
  attn_qkv: 'its attention projections are fused (attn_qkv): training a LoRA on fused weights is not supported yet',
  ffn_gate_up: 'its FFN projections are fused (ffn_gate_up): training a LoRA on fused weights is not supported yet',
}

export function parseTargets(spec: string, model: Model): TrainTarget[] {
  const roles = new Set<TensorRole>()
  for (const raw of spec.split(',').map((s) => s.trim())) {
    const role = NAMES[raw]
    if (!role)
      throw new RunnerError(
        'TRAIN_BAD_TARGET',
        `--targets: unknown weight ${quoted(raw)} (${Object.keys(NAMES).join(', ')})`,
        ExitCode.usage,
      )
    roles.add(role)
  }
  const tensors = model.plan.tensors.filter((t) => roles.has(t.role))
  for (const role of roles) {
    if (tensors.some((t) => t.role === role)) continue
    const fused = model.plan.tensors.find(
      (t) => NOT_TRAINABLE[t.role] && (role.startsWith('attn') ? t.role === 'attn_qkv' : t.role === 'ffn_gate_up'),
    )
    throw new RunnerError(
      'TRAIN_BAD_TARGET',
      `--targets: the model has no ${role} weight` +
        (fused
          ? ` (${NOT_TRAINABLE[fused.role]})`
          : role === 'output' && model.config.tiedEmbeddings
            ? ' (its head is tied to token_embd)'
            : ''),
      ExitCode.unsupported,
    )
  }
  return tensors.map((t) => ({name: t.name, role: t.role, layer: t.layer, nIn: t.shape[0]!, nOut: t.shape[1]!}))
}
