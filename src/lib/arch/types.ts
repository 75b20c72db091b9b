import type {GgmlTypeInfo} from '../gguf/index.js'
import type {NativeBackedConfig} from './config-fields.js'
import type {ConfigFeature} from './features.js'
import type {RopeScaling} from './rope-scaling.js'
import type {TensorRole} from './roles.js'

/**
 * The transformer's shape and numerics, everything the engine needs and nothing it must parse: one
 * camelCase key per field of runner.h's RUNNER_MODEL_CONFIG_FIELDS (NativeBackedConfig: nVocab,
 * nEmbd, ..., ropeType 'norm' | 'neox', attnRemoved per block, optional multipliers, soft-caps,
 * sliding window nSwa / swaLayers, experts, longrope; docs there), plus what only TypeScript uses.
 */
export type ModelConfig = NativeBackedConfig & {
  readonly architecture: string
  /** The head is token_embd (no output.weight, or a family that never reads one). */
  readonly tiedEmbeddings: boolean
  /** The rope's scaling as declared, overridden and in effect (./rope-scaling.ts); the engine gets its fields. */
  readonly ropeScaling: RopeScaling
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
  /** The sublayer a per-block tensor belongs to; removing the sublayer drops it, unless it is its pre-norm. */
  readonly sublayer?: 'attn' | 'ffn'
  /** The sublayer's input norm: the one tensor a removed sublayer may keep (llama.cpp's deci files do). */
  readonly preNorm?: boolean
  /**
   * The sublayer's output norm. A removed sublayer may still carry it (files from runner 0.1's
   * remove-sublayer kept it); it changes nothing, since a removed sublayer adds nothing.
   */
  readonly postNorm?: boolean
  /** The blocks a per-block tensor is in, when not every block (the NextN head's: its one block). */
  readonly layers?: (c: ModelConfig) => readonly number[]
  /** Only under configs for which this holds (dense FFN vs experts). */
  readonly when?: (c: ModelConfig) => boolean
  /**
   * Fused expert tensors ([.., .., n_expert]): the legacy layout's name of one expert's 2-D tensor,
   * `{E}` standing for the expert. Either layout binds to the same role.
   */
  readonly split?: string
}

/** An architecture is data: its rope ordering, the features it has and its tensor table (./families.ts). */
export interface ArchitectureSpec {
  readonly name: string
  readonly ropeType: 'norm' | 'neox'
  /** What the family adds to the shared config, read in this order (./features.ts). */
  readonly features: readonly ConfigFeature[]
  readonly tensors: readonly TensorSpec[]
}
