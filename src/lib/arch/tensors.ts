/**
 * Tensor tables the families share (./families.ts composes them): names as llama.cpp writes them,
 * each bound to a runner.h role, with the shape the config implies (ggml order).
 */
import type {ModelConfig, TensorSpec} from './types.js'

const vec = (c: {nEmbd: number}) => [c.nEmbd]
export const dense = (c: ModelConfig) => !c.nExpert
export const withExperts = (c: ModelConfig) => !!c.nExpert

/** Embedding, head, and per block: attention (norm, q, k, v, output) and a dense SwiGLU FFN. */
export const LLAMA_TENSORS: readonly TensorSpec[] = [
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
]

/**
 * A mixture of experts (llama.cpp's build_moe_ffn): the router `ffn_gate_inp`, and the experts either
 * fused in 3-D tensors (ne[2] = expert) or, in the legacy layout, one 2-D tensor per expert
 * (`blk.N.ffn_gate.E.weight`); both bind to the same roles.
 */
export const EXPERT_TENSORS: readonly TensorSpec[] = [
  {
    role: 'ffn_gate_inp',
    name: 'blk.{L}.ffn_gate_inp.weight',
    perLayer: true,
    shape: (c) => [c.nEmbd, c.nExpert!],
    sublayer: 'ffn',
    when: withExperts,
  },
  {
    role: 'ffn_gate_exps',
    name: 'blk.{L}.ffn_gate_exps.weight',
    split: 'blk.{L}.ffn_gate.{E}.weight',
    perLayer: true,
    shape: (c) => [c.nEmbd, c.nFfExp!, c.nExpert!],
    sublayer: 'ffn',
    when: withExperts,
  },
  {
    role: 'ffn_up_exps',
    name: 'blk.{L}.ffn_up_exps.weight',
    split: 'blk.{L}.ffn_up.{E}.weight',
    perLayer: true,
    shape: (c) => [c.nEmbd, c.nFfExp!, c.nExpert!],
    sublayer: 'ffn',
    when: withExperts,
  },
  {
    role: 'ffn_down_exps',
    name: 'blk.{L}.ffn_down_exps.weight',
    split: 'blk.{L}.ffn_down.{E}.weight',
    perLayer: true,
    shape: (c) => [c.nFfExp!, c.nEmbd, c.nExpert!],
    sublayer: 'ffn',
    when: withExperts,
  },
]

/** Biases on the Q, K and V projections (qwen2). */
export const QKV_BIASES: readonly TensorSpec[] = [
  {role: 'attn_q_bias', name: 'blk.{L}.attn_q.bias', perLayer: true, shape: (c) => [c.nHead * c.headDim], f32Only: true, sublayer: 'attn'},
  {
    role: 'attn_k_bias',
    name: 'blk.{L}.attn_k.bias',
    perLayer: true,
    shape: (c) => [c.nHeadKv * c.headDim],
    f32Only: true,
    sublayer: 'attn',
  },
  {
    role: 'attn_v_bias',
    name: 'blk.{L}.attn_v.bias',
    perLayer: true,
    shape: (c) => [c.nHeadKv * c.headDim],
    f32Only: true,
    sublayer: 'attn',
  },
]

/** An RMS norm over each query and key head before rope (qwen3, gemma3). */
export const QK_NORMS: readonly TensorSpec[] = [
  {role: 'attn_q_norm', name: 'blk.{L}.attn_q_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
  {role: 'attn_k_norm', name: 'blk.{L}.attn_k_norm.weight', perLayer: true, shape: (c) => [c.headDim], f32Only: true, sublayer: 'attn'},
]

/** RMS norms of each sublayer's output before the residual add (gemma2, gemma3). */
export const POST_NORMS: readonly TensorSpec[] = [
  {
    role: 'attn_post_norm',
    name: 'blk.{L}.post_attention_norm.weight',
    perLayer: true,
    shape: vec,
    f32Only: true,
    sublayer: 'attn',
    postNorm: true,
  },
  {role: 'ffn_post_norm', name: 'blk.{L}.post_ffw_norm.weight', perLayer: true, shape: vec, f32Only: true, sublayer: 'ffn', postNorm: true},
]

/**
 * Q, K and V in one fused tensor (rows q, then k, then v) and gate with up in one (rows gate, then
 * up, under the name ffn_up) (phi3); the engine binds the fused rows as views.
 */
export const FUSED_QKV_GATE_UP: readonly TensorSpec[] = [
  {
    role: 'attn_qkv',
    name: 'blk.{L}.attn_qkv.weight',
    perLayer: true,
    shape: (c) => [c.nEmbd, (c.nHead + 2 * c.nHeadKv) * c.headDim],
    sublayer: 'attn',
  },
  {role: 'ffn_gate_up', name: 'blk.{L}.ffn_up.weight', perLayer: true, shape: (c) => [c.nEmbd, 2 * c.nFf], sublayer: 'ffn'},
]

/** longrope's frequency factors (phi3), model-wide, optional. */
export const ROPE_FACTORS: readonly TensorSpec[] = [
  {role: 'rope_factors_long', name: 'rope_factors_long.weight', perLayer: false, shape: (c) => [c.nRot / 2], f32Only: true, optional: true},
  {
    role: 'rope_factors_short',
    name: 'rope_factors_short.weight',
    perLayer: false,
    shape: (c) => [c.nRot / 2],
    f32Only: true,
    optional: true,
  },
]

/** A table without some roles (the families' variations of llama's). */
export function without(tensors: readonly TensorSpec[], ...roles: ReadonlyArray<TensorSpec['role']>): TensorSpec[] {
  return tensors.filter((t) => !roles.includes(t.role))
}

/** The NextN block's index: the last nNextn blocks are the MTP head's (none without one). */
const nextnBlock = (c: ModelConfig) => (c.nNextn ? [c.nLayer - c.nNextn] : [])

/**
 * A multi-token-prediction (NextN) head, as llama.cpp names it (`blk.N.nextn.*`, N the first NextN
 * block): the projection of [enorm(embed(token)), hnorm(hidden)] to n_embd, its two norms, and an
 * optional embedding, head norm and head of its own (else the model's). The block's attention and
 * FFN are the ordinary per-block tensors of block N.
 */
export const NEXTN_TENSORS: readonly TensorSpec[] = [
  {role: 'nextn_eh_proj', name: 'blk.{L}.nextn.eh_proj.weight', perLayer: true, layers: nextnBlock, shape: (c) => [2 * c.nEmbd, c.nEmbd]},
  {
    role: 'nextn_embed_tokens',
    name: 'blk.{L}.nextn.embed_tokens.weight',
    perLayer: true,
    layers: nextnBlock,
    shape: (c) => [c.nEmbd, c.nVocab],
    optional: true,
  },
  {role: 'nextn_enorm', name: 'blk.{L}.nextn.enorm.weight', perLayer: true, layers: nextnBlock, shape: vec, f32Only: true},
  {role: 'nextn_hnorm', name: 'blk.{L}.nextn.hnorm.weight', perLayer: true, layers: nextnBlock, shape: vec, f32Only: true},
  {
    role: 'nextn_shared_head_norm',
    name: 'blk.{L}.nextn.shared_head_norm.weight',
    perLayer: true,
    layers: nextnBlock,
    shape: vec,
    f32Only: true,
    optional: true,
  },
  {
    role: 'nextn_shared_head_head',
    name: 'blk.{L}.nextn.shared_head_head.weight',
    perLayer: true,
    layers: nextnBlock,
    shape: (c) => [c.nEmbd, c.nVocab],
    optional: true,
  },
]
