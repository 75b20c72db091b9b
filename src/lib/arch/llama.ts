import type {ArchitectureSpec, ModelConfig, TensorSpec} from './types.js'

const vec = (c: {nEmbd: number}) => [c.nEmbd]
const dense = (c: ModelConfig) => !c.nExpert
const moe = (c: ModelConfig) => !!c.nExpert

/**
 * A mixture of experts (llama.cpp's build_moe_ffn): the router `ffn_gate_inp`, and the experts either
 * fused in 3-D tensors (ne[2] = expert) or, in the legacy layout, one 2-D tensor per expert
 * (`blk.N.ffn_gate.E.weight`); both bind to the same roles.
 */
const experts: TensorSpec[] = [
  {role: 'ffn_gate_inp', name: 'blk.{L}.ffn_gate_inp.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nExpert!], sublayer: 'ffn', when: moe},
  {role: 'ffn_gate_exps', name: 'blk.{L}.ffn_gate_exps.weight', split: 'blk.{L}.ffn_gate.{E}.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFfExp!, c.nExpert!], sublayer: 'ffn', when: moe},
  {role: 'ffn_up_exps', name: 'blk.{L}.ffn_up_exps.weight', split: 'blk.{L}.ffn_up.{E}.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFfExp!, c.nExpert!], sublayer: 'ffn', when: moe},
  {role: 'ffn_down_exps', name: 'blk.{L}.ffn_down_exps.weight', split: 'blk.{L}.ffn_down.{E}.weight', perLayer: true, shape: (c) => [c.nFfExp!, c.nEmbd, c.nExpert!], sublayer: 'ffn', when: moe},
]

/**
 * llama (and mistral-style files that say `general.architecture = llama`): RMS norm, rope with
 * adjacent pairs (llama.cpp's LLAMA_ROPE_TYPE_NORM), grouped-query attention, SwiGLU. With
 * `llama.expert_count` > 0 (Mixtral) the FFN is a mixture of experts of width feed_forward_length.
 */
export const llama: ArchitectureSpec = {
  name: 'llama',
  ropeType: 'norm',
  moe: {presence: 'optional', ffKey: 'feed_forward_length'},
  tensors: [
    {role: 'token_embd', name: 'token_embd.weight', perLayer: false, shape: (c) => [c.nEmbd, c.nVocab]},
    {role: 'output_norm', name: 'output_norm.weight', perLayer: false, shape: vec, f32Only: true},
    {role: 'output', name: 'output.weight', perLayer: false, shape: (c) => [c.nEmbd, c.nVocab], optional: true},
    {role: 'attn_norm', name: 'blk.{L}.attn_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'attn', preNorm: true},
    {role: 'attn_q', name: 'blk.{L}.attn_q.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHead * c.headDim], sublayer: 'attn'},
    {role: 'attn_k', name: 'blk.{L}.attn_k.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHeadKv * c.headDim], sublayer: 'attn'},
    {role: 'attn_v', name: 'blk.{L}.attn_v.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHeadKv * c.headDim], sublayer: 'attn'},
    {role: 'attn_output', name: 'blk.{L}.attn_output.weight', perLayer: true, shape: (c) => [c.nHead * c.headDim, c.nEmbd], sublayer: 'attn'},
    {role: 'ffn_norm', name: 'blk.{L}.ffn_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'ffn', preNorm: true},
    {role: 'ffn_gate', name: 'blk.{L}.ffn_gate.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFf], sublayer: 'ffn', when: dense},
    {role: 'ffn_up', name: 'blk.{L}.ffn_up.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFf], sublayer: 'ffn', when: dense},
    {role: 'ffn_down', name: 'blk.{L}.ffn_down.weight', perLayer: true, shape: (c) => [c.nFf, c.nEmbd], sublayer: 'ffn', when: dense},
    ...experts,
  ],
}

/** qwen2: llama's tensors plus biases on the Q, K and V projections; rope pairs i with i + n/2 (NEOX). */
export const qwen2: ArchitectureSpec = {
  name: 'qwen2',
  ropeType: 'neox',
  tensors: [
    ...llama.tensors.filter(withoutExperts),
    {role: 'attn_q_bias', name: 'blk.{L}.attn_q.bias', perLayer: true, shape: (c) => [c.nHead * c.headDim], f32Only: true, sublayer: 'attn'},
    {role: 'attn_k_bias', name: 'blk.{L}.attn_k.bias', perLayer: true, shape: (c) => [c.nHeadKv * c.headDim], f32Only: true, sublayer: 'attn'},
    {role: 'attn_v_bias', name: 'blk.{L}.attn_v.bias', perLayer: true, shape: (c) => [c.nHeadKv * c.headDim], f32Only: true, sublayer: 'attn'},
  ] satisfies TensorSpec[],
}

/** qwen3: llama's tensors plus an RMS norm over each query and key head before rope (NEOX). */
const qkNorms: TensorSpec[] = [
  {role: 'attn_q_norm', name: 'blk.{L}.attn_q_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
  {role: 'attn_k_norm', name: 'blk.{L}.attn_k_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
]

export const qwen3: ArchitectureSpec = {
  name: 'qwen3',
  ropeType: 'neox',
  tensors: [...llama.tensors.filter(withoutExperts), ...qkNorms],
}

/**
 * qwen3moe: qwen3's attention (q/k norms, NEOX) and a mixture of experts in every block, of width
 * expert_feed_forward_length (feed_forward_length is present in real files but unused).
 */
export const qwen3moe: ArchitectureSpec = {
  name: 'qwen3moe',
  ropeType: 'neox',
  moe: {presence: 'required', ffKey: 'expert_feed_forward_length'},
  tensors: [...llama.tensors.filter((t) => !['ffn_gate', 'ffn_up', 'ffn_down'].includes(t.role)), ...qkNorms],
}

const postNorms: TensorSpec[] = [
  {role: 'attn_post_norm', name: 'blk.{L}.post_attention_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'attn'},
  {role: 'ffn_post_norm', name: 'blk.{L}.post_ffw_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'ffn'},
]

/**
 * gemma2: llama's tensors with post-norms on both sublayers, GELU gate, soft-capped scores and
 * logits, sliding windows on alternating blocks, rope NEOX, and the head always tied to token_embd
 * (llama.cpp never reads an output.weight for gemma2). Norm weights are stored folded (1 + w).
 */
export const gemma2: ArchitectureSpec = {
  name: 'gemma2',
  ropeType: 'neox',
  gemma: 2,
  tensors: [...llama.tensors.filter((t) => withoutExperts(t) && t.role !== 'output'), ...postNorms],
}

/** gemma3: gemma2 without soft-capping of the scores, plus q/k norms; output.weight optional. */
export const gemma3: ArchitectureSpec = {
  name: 'gemma3',
  ropeType: 'neox',
  gemma: 3,
  tensors: [...llama.tensors.filter(withoutExperts), ...postNorms, ...qkNorms],
}

/**
 * granite: llama's tensors and rope (NORM), with four multipliers from metadata: the embedding is
 * scaled, each sublayer's output is scaled before it joins the residual, attention.scale replaces
 * 1/sqrt(head_dim), and logits are divided by logit_scale.
 */
export const granite: ArchitectureSpec = {name: 'granite', ropeType: 'norm', multipliers: true, tensors: llama.tensors.filter(withoutExperts)}

/**
 * phi3: Q, K and V in one fused tensor (rows q, then k, then v) and gate with up in one (rows gate,
 * then up, under the name ffn_up); rope NEOX. The engine binds the fused rows as views.
 */
export const phi3: ArchitectureSpec = {
  name: 'phi3',
  ropeType: 'neox',
  phi3: true,
  tensors: [
    ...llama.tensors.filter((t) => withoutExperts(t) && !['attn_q', 'attn_k', 'attn_v', 'ffn_gate', 'ffn_up'].includes(t.role)),
    {role: 'attn_qkv', name: 'blk.{L}.attn_qkv.weight', perLayer: true, shape: (c) => [c.nEmbd, (c.nHead + 2 * c.nHeadKv) * c.headDim], sublayer: 'attn'},
    {role: 'ffn_gate_up', name: 'blk.{L}.ffn_up.weight', perLayer: true, shape: (c) => [c.nEmbd, 2 * c.nFf], sublayer: 'ffn'},
    {role: 'rope_factors_long', name: 'rope_factors_long.weight', perLayer: false, shape: (c) => [c.nRot / 2], f32Only: true, optional: true},
    {role: 'rope_factors_short', name: 'rope_factors_short.weight', perLayer: false, shape: (c) => [c.nRot / 2], f32Only: true, optional: true},
  ] satisfies TensorSpec[],
}

/** The tensors of a family without experts: llama's, less the expert entries. */
function withoutExperts(t: TensorSpec): boolean {
  return t.when !== moe
}
