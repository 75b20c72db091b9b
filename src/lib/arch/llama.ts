import type {ArchitectureSpec} from './types.js'

import type {TensorSpec} from './types.js'

const vec = (c: {nEmbd: number}) => [c.nEmbd]

/**
 * llama (and mistral-style files that say `general.architecture = llama`): RMS norm, rope with
 * adjacent pairs (llama.cpp's LLAMA_ROPE_TYPE_NORM), grouped-query attention, SwiGLU.
 */
export const llama: ArchitectureSpec = {
  name: 'llama',
  ropeType: 'norm',
  tensors: [
    {role: 'token_embd', name: 'token_embd.weight', perLayer: false, shape: (c) => [c.nEmbd, c.nVocab]},
    {role: 'output_norm', name: 'output_norm.weight', perLayer: false, shape: vec, f32Only: true},
    {role: 'output', name: 'output.weight', perLayer: false, shape: (c) => [c.nEmbd, c.nVocab], optional: true},
    {role: 'attn_norm', name: 'blk.{L}.attn_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'attn'},
    {role: 'attn_q', name: 'blk.{L}.attn_q.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHead * c.headDim], sublayer: 'attn'},
    {role: 'attn_k', name: 'blk.{L}.attn_k.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHeadKv * c.headDim], sublayer: 'attn'},
    {role: 'attn_v', name: 'blk.{L}.attn_v.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nHeadKv * c.headDim], sublayer: 'attn'},
    {role: 'attn_output', name: 'blk.{L}.attn_output.weight', perLayer: true, shape: (c) => [c.nHead * c.headDim, c.nEmbd], sublayer: 'attn'},
    {role: 'ffn_norm', name: 'blk.{L}.ffn_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'ffn'},
    {role: 'ffn_gate', name: 'blk.{L}.ffn_gate.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFf], sublayer: 'ffn'},
    {role: 'ffn_up', name: 'blk.{L}.ffn_up.weight', perLayer: true, shape: (c) => [c.nEmbd, c.nFf], sublayer: 'ffn'},
    {role: 'ffn_down', name: 'blk.{L}.ffn_down.weight', perLayer: true, shape: (c) => [c.nFf, c.nEmbd], sublayer: 'ffn'},
  ],
}

/** qwen2: llama's tensors plus biases on the Q, K and V projections; rope pairs i with i + n/2 (NEOX). */
export const qwen2: ArchitectureSpec = {
  name: 'qwen2',
  ropeType: 'neox',
  tensors: [
    ...llama.tensors,
    {role: 'attn_q_bias', name: 'blk.{L}.attn_q.bias', perLayer: true, shape: (c) => [c.nHead * c.headDim], f32Only: true, sublayer: 'attn'},
    {role: 'attn_k_bias', name: 'blk.{L}.attn_k.bias', perLayer: true, shape: (c) => [c.nHeadKv * c.headDim], f32Only: true, sublayer: 'attn'},
    {role: 'attn_v_bias', name: 'blk.{L}.attn_v.bias', perLayer: true, shape: (c) => [c.nHeadKv * c.headDim], f32Only: true, sublayer: 'attn'},
  ] satisfies TensorSpec[],
}

/** qwen3: llama's tensors plus an RMS norm over each query and key head before rope (NEOX). */
export const qwen3: ArchitectureSpec = {
  name: 'qwen3',
  ropeType: 'neox',
  tensors: [
    ...llama.tensors,
    {role: 'attn_q_norm', name: 'blk.{L}.attn_q_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
    {role: 'attn_k_norm', name: 'blk.{L}.attn_k_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
  ] satisfies TensorSpec[],
}

/**
 * granite: llama's tensors and rope (NORM), with four multipliers from metadata: the embedding is
 * scaled, each sublayer's output is scaled before it joins the residual, attention.scale replaces
 * 1/sqrt(head_dim), and logits are divided by logit_scale.
 */
export const granite: ArchitectureSpec = {name: 'granite', ropeType: 'norm', multipliers: true, tensors: llama.tensors}

/**
 * phi3: Q, K and V in one fused tensor (rows q, then k, then v) and gate with up in one (rows gate,
 * then up, under the name ffn_up); rope NEOX. The engine binds the fused rows as views.
 */
export const phi3: ArchitectureSpec = {
  name: 'phi3',
  ropeType: 'neox',
  tensors: [
    ...llama.tensors.filter((t) => !['attn_q', 'attn_k', 'attn_v', 'ffn_gate', 'ffn_up'].includes(t.role)),
    {role: 'attn_qkv', name: 'blk.{L}.attn_qkv.weight', perLayer: true, shape: (c) => [c.nEmbd, (c.nHead + 2 * c.nHeadKv) * c.headDim], sublayer: 'attn'},
    {role: 'ffn_gate_up', name: 'blk.{L}.ffn_up.weight', perLayer: true, shape: (c) => [c.nEmbd, 2 * c.nFf], sublayer: 'ffn'},
  ] satisfies TensorSpec[],
}
