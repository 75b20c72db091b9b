/**
 * `--targets`: which weights get a LoRA pair, in llama.cpp's tensor names (attn_q) or PEFT's module
 * names (q_proj), as one list; the default is the attention's q, k, v and output, as PEFT's
 * defaults for llama-family models (attn_qkv and output on a model that fuses q, k and v). Each name
 * selects that weight in every block.
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
  attn_qkv: 'attn_qkv',
  ffn_gate_up: 'ffn_gate_up',
  qkv_proj: 'attn_qkv',
  gate_up_proj: 'ffn_gate_up',
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

/** The weights a name stands for on a model that fuses them (phi3): q, k and v are rows of attn_qkv. */
const FUSED_INTO: Partial<Record<TensorRole, TensorRole>> = {
  attn_q: 'attn_qkv',
  attn_k: 'attn_qkv',
  attn_v: 'attn_qkv',
  ffn_gate: 'ffn_gate_up',
  ffn_up: 'ffn_gate_up',
}

export function parseTargets(spec: string, model: Model): TrainTarget[] {
  const roles = new Set<TensorRole>()
  const present = new Set(model.plan.tensors.map((t) => t.role))
  const isDefault = spec === DEFAULT_TARGETS
  for (const raw of spec.split(',').map((s) => s.trim())) {
    const role = NAMES[raw]
    if (!role)
      throw new RunnerError(
        'TRAIN_BAD_TARGET',
        `--targets: unknown weight ${quoted(raw)} (${Object.keys(NAMES).join(', ')})`,
        ExitCode.usage,
      )
    const fused = FUSED_INTO[role]
    if (!present.has(role) && fused && present.has(fused)) {
      // The default means "the attention": on a fused model that is attn_qkv. Asked by name, say so.
      if (!isDefault)
        throw new RunnerError(
          'TRAIN_BAD_TARGET',
          `--targets: the model fuses ${role} into ${fused} (its rows are ${fused === 'attn_qkv' ? 'q, k and v' : 'gate and up'}): target ${fused} (PEFT: ${fused === 'attn_qkv' ? 'qkv_proj' : 'gate_up_proj'})`,
          ExitCode.usage,
        )
      roles.add(fused)
      continue
    }
    roles.add(role)
  }
  const tensors = model.plan.tensors.filter((t) => roles.has(t.role))
  for (const role of roles) {
    if (tensors.some((t) => t.role === role)) continue
    throw new RunnerError(
      'TRAIN_BAD_TARGET',
      `--targets: the model has no ${role} weight` +
        (role === 'output' && model.config.tiedEmbeddings ? ' (its head is tied to token_embd)' : ''),
      ExitCode.unsupported,
    )
  }
  return tensors.map((t) => ({name: t.name, role: t.role, layer: t.layer, nIn: t.shape[0]!, nOut: t.shape[1]!}))
}
