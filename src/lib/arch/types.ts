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
}

/** An architecture is data: its metadata prefix, rope ordering and tensor table. */
export interface ArchitectureSpec {
  readonly name: string
  readonly ropeType: 'norm' | 'neox'
  /** Reads granite's embedding, residual, attention and logit multipliers from metadata. */
  readonly multipliers?: boolean
  readonly tensors: readonly TensorSpec[]
}
