/**
 * Tensor roles: what each weight is for. The ids are the engine's `runner_tensor_role` (runner.h);
 * a test checks this table against the native names (one owner per fact, the other side agrees).
 */
export const TENSOR_ROLES = [
  'token_embd',
  'output_norm',
  'output',
  'attn_norm',
  'attn_q',
  'attn_k',
  'attn_v',
  'attn_output',
  'ffn_norm',
  'ffn_gate',
  'ffn_up',
  'ffn_down',
  'attn_q_bias',
  'attn_k_bias',
  'attn_v_bias',
  'attn_q_norm',
  'attn_k_norm',
  'attn_qkv',
  'ffn_gate_up',
  'attn_post_norm',
  'ffn_post_norm',
  'ffn_gate_inp',
  'ffn_gate_exps',
  'ffn_up_exps',
  'ffn_down_exps',
  'rope_factors_long',
  'rope_factors_short',
  'nextn_eh_proj',
  'nextn_embed_tokens',
  'nextn_enorm',
  'nextn_hnorm',
  'nextn_shared_head_norm',
  'nextn_shared_head_head',
] as const

export type TensorRole = (typeof TENSOR_ROLES)[number]

export function roleId(role: TensorRole): number {
  return TENSOR_ROLES.indexOf(role)
}
