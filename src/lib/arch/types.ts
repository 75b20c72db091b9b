import type {GgmlTypeInfo} from '../gguf/index.js'
import type {TensorRole} from './roles.js'

/** The transformer's shape and numerics, everything the engine needs and nothing it must parse. */
export interface ModelConfig {
  readonly architecture: string
  readonly nVocab: number
  readonly nEmbd: number
  readonly nLayer: number
  readonly nHead: number
  readonly nHeadKv: number
  readonly headDim: number
  readonly nFf: number
  readonly nCtxTrain: number
  /** Rope dimensions (≤ headDim). */
  readonly nRot: number
  readonly ropeType: 'norm' | 'neox'
  readonly ropeFreqBase: number
  /** 1 / linear scaling factor. */
  readonly ropeFreqScale: number
  readonly normEps: number
  readonly tiedEmbeddings: boolean
  /** Per block: the attention sublayer was removed (head_count 0 there). */
  readonly attnRemoved: readonly boolean[]
  /** Per block: the FFN sublayer was removed (feed_forward_length 0 there). */
  readonly ffnRemoved: readonly boolean[]
  /** granite's multipliers (absent elsewhere). */
  readonly embeddingScale?: number
  readonly residualScale?: number
  readonly attentionScale?: number
  readonly logitScale?: number
  /** The gated FFN's activation (absent: silu). gelu is ggml's tanh form through its F16 table. */
  readonly ffnAct?: 'silu' | 'gelu'
  /** gemma: the query is multiplied by this after rope (instead of scaling the scores). */
  readonly queryScale?: number
  /** gemma2: soft-capping of attention scores and of the final logits. */
  readonly attnSoftcap?: number
  readonly finalSoftcap?: number
  /** Sliding-window attention: the window, and per block whether it applies there. */
  readonly slidingWindow?: number
  readonly swaLayers?: readonly boolean[]
  /** Rope base and scale on sliding-window blocks. */
  readonly ropeFreqBaseSwa?: number
  readonly ropeFreqScaleSwa?: number
  /** Mixture of experts: experts per block, chosen per token (softmax, top k, renormalised), expert FFN width. */
  readonly nExpert?: number
  readonly nExpertUsed?: number
  readonly nFfExp?: number
  /** phi3 longrope: cos and sin are multiplied by this; the long factors apply past nCtxOrig. */
  readonly ropeAttnFactor?: number
  readonly nCtxOrig?: number
}

/** One weight bound to its role, with where its bytes are. */
export interface TensorBinding {
  readonly name: string
  readonly role: TensorRole
  /** Block index, or -1 for model-wide tensors. */
  readonly layer: number
  readonly type: GgmlTypeInfo
  /** ggml order: shape[0] = ne0. */
  readonly shape: readonly number[]
  /** Index into ModelPlan.files. */
  readonly file: number
  readonly offset: number
  readonly byteSize: number
  /** Expert index of one expert's tensor in the legacy split layout (absent: not split). */
  readonly expert?: number
}

export interface ModelPlan {
  readonly config: ModelConfig
  readonly files: readonly string[]
  readonly tensors: readonly TensorBinding[]
}

/** Expected shape of a role's tensor under a config (ggml order). */
export type ShapeRule = (c: ModelConfig) => readonly number[]

export interface TensorSpec {
  readonly role: TensorRole
  /** Tensor name; `{L}` stands for the block index. */
  readonly name: string
  readonly perLayer: boolean
  readonly shape: ShapeRule
  /** Absent is allowed (output.weight: the head is tied to token_embd). */
  readonly optional?: boolean
  /** 1-D weights the engine reads as F32 only. */
  readonly f32Only?: boolean
  /** The sublayer a per-block tensor belongs to; removing the sublayer drops it (its norm may stay). */
  readonly sublayer?: 'attn' | 'ffn'
  /** Only under configs for which this holds (dense FFN vs experts). */
  readonly when?: (c: ModelConfig) => boolean
  /**
   * Fused expert tensors ([.., .., n_expert]): the legacy layout's name of one expert's 2-D tensor,
   * `{E}` standing for the expert. Either layout binds to the same role.
   */
  readonly split?: string
}

/** An architecture is data: its metadata prefix, rope ordering and tensor table. */
export interface ArchitectureSpec {
  readonly name: string
  readonly ropeType: 'norm' | 'neox'
  /** Reads granite's embedding, residual, attention and logit multipliers from metadata. */
  readonly multipliers?: boolean
  /**
   * gemma2 / gemma3 numerics (as llama.cpp's graphs): the embedding times sqrtf(n_embd), GELU gate,
   * the query scaled by 1/sqrt(key_length) (1/sqrt(n_embd/n_head) at the 27B block count), soft-caps
   * (gemma2: always, defaults 50 and 30; gemma3: final only, when given) and sliding windows
   * (gemma2: always, window default 4096, pattern 2; gemma3: only when a window > 0 is given, pattern 6).
   */
  readonly gemma?: 2 | 3
  /**
   * Mixture of experts: 'required' (qwen3moe) or 'optional' (llama: experts when expert_count > 0).
   * The expert width comes from `ffKey` (expert_feed_forward_length or feed_forward_length).
   */
  /**
   * phi3 as llama.cpp reads it: longrope scaling (rope_factors_long/short, rope.scaling.attn_factor,
   * rope.scaling.original_context_length), the query scaled by 1/sqrt(head_dim) after rope, and
   * sliding-window keys read but ignored (llama.cpp disables Phi's sliding window).
   */
  readonly phi3?: boolean
  readonly moe?: {readonly presence: 'required' | 'optional'; readonly ffKey: 'expert_feed_forward_length' | 'feed_forward_length'}
  readonly tensors: readonly TensorSpec[]
}
