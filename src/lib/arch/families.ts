/**
 * The architectures the engine admits, and their registry: a family is one entry here, its tensor
 * table (./tensors.ts) and the features it has (./features.ts). ./plan.ts reads what every family
 * shares and runs the features in the order listed; it never asks which family it has. Any
 * architecture not listed is refused by name. docs/models.md says how to add one.
 */
import {
  EMBEDDING_SCALE_SQRT_EMBD,
  experts,
  FINAL_SOFTCAP_WHEN_GIVEN,
  GELU_FFN,
  LONGROPE,
  MULTIPLIERS,
  NEXTN,
  QUERY_SCALE_HEAD_DIM,
  queryScaleByKeyLength,
  SLIDING_WINDOW_IGNORED,
  slidingWindow,
  softcaps,
} from './features.js'
import {
  EXPERT_TENSORS,
  FUSED_QKV_GATE_UP,
  LLAMA_TENSORS,
  NEXTN_TENSORS,
  POST_NORMS,
  QK_NORMS,
  QKV_BIASES,
  ROPE_FACTORS,
  without,
} from './tensors.js'
import type {ArchitectureSpec} from './types.js'

const FAMILIES: readonly ArchitectureSpec[] = [
  /**
   * llama (and mistral-style files that say `general.architecture = llama`): RMS norm, rope with
   * adjacent pairs (llama.cpp's LLAMA_ROPE_TYPE_NORM), grouped-query attention, SwiGLU. With
   * `llama.expert_count` > 0 (Mixtral) the FFN is a mixture of experts of width feed_forward_length.
   */
  {
    name: 'llama',
    ropeType: 'norm',
    features: [experts({presence: 'optional', ffKey: 'feed_forward_length'}), NEXTN],
    tensors: [...LLAMA_TENSORS, ...EXPERT_TENSORS, ...NEXTN_TENSORS],
  },
  /** qwen2: llama's tensors plus biases on the Q, K and V projections; rope pairs i with i + n/2 (NEOX). */
  {name: 'qwen2', ropeType: 'neox', features: [NEXTN], tensors: [...LLAMA_TENSORS, ...QKV_BIASES, ...NEXTN_TENSORS]},
  /** qwen3: llama's tensors plus an RMS norm over each query and key head before rope (NEOX). */
  {name: 'qwen3', ropeType: 'neox', features: [NEXTN], tensors: [...LLAMA_TENSORS, ...QK_NORMS, ...NEXTN_TENSORS]},
  /**
   * qwen3moe: qwen3's attention (q/k norms, NEOX) and a mixture of experts in every block, of width
   * expert_feed_forward_length (feed_forward_length is present in real files but unused).
   */
  {
    name: 'qwen3moe',
    ropeType: 'neox',
    features: [experts({presence: 'required', ffKey: 'expert_feed_forward_length'})],
    tensors: [...without(LLAMA_TENSORS, 'ffn_gate', 'ffn_up', 'ffn_down'), ...EXPERT_TENSORS, ...QK_NORMS],
  },
  /** granite: llama's tensors and rope (NORM), with four multipliers from metadata. */
  {name: 'granite', ropeType: 'norm', features: [MULTIPLIERS], tensors: LLAMA_TENSORS},
  /**
   * phi3: fused Q/K/V and gate/up tensors, rope NEOX with longrope scaling, the query scaled by
   * 1/sqrt(head_dim) after rope, and sliding-window keys read but ignored (as llama.cpp does).
   */
  {
    name: 'phi3',
    ropeType: 'neox',
    features: [QUERY_SCALE_HEAD_DIM, LONGROPE, SLIDING_WINDOW_IGNORED],
    tensors: [...without(LLAMA_TENSORS, 'attn_q', 'attn_k', 'attn_v', 'ffn_gate', 'ffn_up'), ...FUSED_QKV_GATE_UP, ...ROPE_FACTORS],
  },
  /**
   * gemma2 (as llama.cpp's graph): post-norms on both sublayers, the embedding times sqrtf(n_embd),
   * GELU gate, the query times 1/sqrt(key_length) (1/sqrt(n_embd/n_head) at the 27B's 46 blocks),
   * soft-capped scores and logits (defaults 50 and 30), sliding windows on alternating blocks (window
   * default 4096), rope NEOX, and the head always tied (no output.weight in its table: llama.cpp never
   * reads one). Norm weights are stored folded (1 + w).
   */
  {
    name: 'gemma2',
    ropeType: 'neox',
    features: [
      GELU_FFN,
      EMBEDDING_SCALE_SQRT_EMBD,
      queryScaleByKeyLength(46),
      softcaps({attn: 50, final: 30}),
      slidingWindow({window: {default: 4096}, pattern: 2, ropeBase: 'model', ropeScale: 'model'}),
    ],
    tensors: [...without(LLAMA_TENSORS, 'output'), ...POST_NORMS],
  },
  /**
   * gemma3: gemma2 without soft-capped scores (the final cap only when given), plus q/k norms; sliding
   * windows only when a window > 0 is given (pattern 6, rope base 10000, scale 1); output.weight optional.
   */
  {
    name: 'gemma3',
    ropeType: 'neox',
    features: [
      GELU_FFN,
      EMBEDDING_SCALE_SQRT_EMBD,
      queryScaleByKeyLength(62),
      FINAL_SOFTCAP_WHEN_GIVEN,
      slidingWindow({window: 'when given', pattern: 6, ropeBase: 10000, ropeScale: 1}),
    ],
    tensors: [...LLAMA_TENSORS, ...POST_NORMS, ...QK_NORMS],
  },
  /**
   * smollm3: llama's tensors and rope (NORM), without rope on every fourth block (llama.cpp's
   * n_no_rope_layer_step, fixed at 4: no metadata key says so).
   */
  {
    name: 'smollm3',
    ropeType: 'norm',
    features: [
      {
        name: 'no rope on every 4th block',
        read: ({base}) => ({nopeLayers: Array.from({length: base.nLayer}, (_, i) => (i + 1) % 4 === 0)}),
      },
    ],
    tensors: LLAMA_TENSORS,
  },
  /**
   * olmo2: no pre-norms; each sublayer's output is RMS-normed (post_attention_norm, post_ffw_norm)
   * before the residual add; Q and K are RMS-normed over the whole projection before rope (not per
   * head); rope NEOX; output.weight required. A sliding window (olmo3) is refused by name.
   */
  {
    name: 'olmo2',
    ropeType: 'neox',
    features: [],
    tensors: [
      ...without(LLAMA_TENSORS, 'attn_norm', 'ffn_norm', 'output'),
      {role: 'output', name: 'output.weight', perLayer: false, shape: (c) => [c.nEmbd, c.nVocab]},
      ...POST_NORMS,
      {
        role: 'attn_q_norm',
        name: 'blk.{L}.attn_q_norm.weight',
        perLayer: true,
        shape: (c) => [c.nHead * c.headDim],
        f32Only: true,
        sublayer: 'attn',
      },
      {
        role: 'attn_k_norm',
        name: 'blk.{L}.attn_k_norm.weight',
        perLayer: true,
        shape: (c) => [c.nHeadKv * c.headDim],
        f32Only: true,
        sublayer: 'attn',
      },
    ],
  },
]

/** The architectures the engine admits, by name; any other is refused by name. */
export const ARCHITECTURES: ReadonlyMap<string, ArchitectureSpec> = new Map(FAMILIES.map((a) => [a.name, a]))
