/**
 * Named feature readers: what a family adds to the config beyond the dimensions every family has
 * (./plan.ts reads those). A family (./families.ts) lists the features it has; plan.ts runs them in
 * order and never branches on a family's name. Each reads its metadata keys as llama.cpp's
 * load_arch_hparams does (defaults, ranges) and returns config fields.
 */
import {type GgufModelFiles, GgufMetadata, GgufValueType, isGgufArray, valueTypeName} from '../gguf/index.js'
import {ExitCode} from '../errors.js'
import {bad, HPARAM_LIMITS} from './hparams.js'
import type {ModelConfig} from './types.js'

/** What every family's config has before its features run. */
export interface BaseConfig {
  readonly nEmbd: number
  readonly nLayer: number
  readonly nHead: number
  readonly headDim: number
  readonly nFf: number
  readonly ropeFreqBase: number
  readonly ropeFreqScale: number
}

export interface FeatureInput {
  readonly meta: GgufMetadata
  readonly model: GgufModelFiles
  /** The architecture name: every key below is `${arch}.<key>`. */
  readonly arch: string
  readonly base: BaseConfig
}

/** Config fields a feature sets. */
export type ConfigPatch = {-readonly [K in keyof ModelConfig]?: ModelConfig[K]}

export interface ConfigFeature {
  readonly name: string
  /**
   * Metadata keys (after `${arch}.`) that change the math and that this feature implements: a family
   * with no feature reading such a key refuses it when present, naming the families that implement it.
   */
  readonly guards?: ReadonlyArray<{readonly key: string; readonly what: string}>
  /** Guarded keys this feature reads and deliberately ignores (as llama.cpp does for that family). */
  readonly ignores?: readonly string[]
  /** rope.scaling.type values it admits besides none, linear and yarn (./rope-scaling.ts reads the factor for every type, as llama.cpp). */
  readonly ropeScalingTypes?: readonly string[]
  /** The config fields it reads from metadata. */
  readonly read?: (m: FeatureInput) => ConfigPatch
}

const POSITIVE = {min: Number.MIN_VALUE, max: 1e6}

/**
 * granite's multipliers: the embedding is scaled, each sublayer's output is scaled before it joins
 * the residual, attention.scale replaces 1/sqrt(head_dim), and logits are divided by logit_scale.
 */
export const MULTIPLIERS: ConfigFeature = {
  name: 'multipliers',
  read: ({meta, arch: a, base}) => ({
    embeddingScale: meta.floatOr(`${a}.embedding_scale`, 1, POSITIVE),
    residualScale: meta.floatOr(`${a}.residual_scale`, 1, POSITIVE),
    attentionScale: meta.floatOr(`${a}.attention.scale`, 1 / Math.sqrt(base.headDim), POSITIVE),
    logitScale: meta.floatOr(`${a}.logit_scale`, 1, POSITIVE),
  }),
}

/** The gated FFN's activation is GELU (ggml's tanh form through its F16 table), not SiLU. */
export const GELU_FFN: ConfigFeature = {name: 'gelu ffn', read: () => ({ffnAct: 'gelu'})}

/** The token embedding times sqrtf(n_embd), in float (gemma). */
export const EMBEDDING_SCALE_SQRT_EMBD: ConfigFeature = {
  name: 'embedding scale sqrt(n_embd)',
  read: ({base}) => ({embeddingScale: Math.fround(Math.sqrt(base.nEmbd))}),
}

/**
 * The query times f_attention_scale after rope (gemma): 1/sqrt(n_embd / n_head) (integer division)
 * at the 27B block count, else 1/sqrt(key_length); computed in float as llama.cpp does.
 */
export function queryScaleByKeyLength(bigBlockCount: number): ConfigFeature {
  return {
    name: 'query scale 1/sqrt(key_length)',
    read: ({base: c}) => ({
      queryScale: Math.fround(1 / Math.fround(Math.sqrt(c.nLayer === bigBlockCount ? Math.floor(c.nEmbd / c.nHead) : c.headDim))),
    }),
  }
}

/** The query times 1/sqrt(head_dim) after rope, in float (phi3). */
export const QUERY_SCALE_HEAD_DIM: ConfigFeature = {
  name: 'query scale 1/sqrt(head_dim)',
  read: ({base}) => ({queryScale: Math.fround(1 / Math.fround(Math.sqrt(base.headDim)))}),
}

/** Soft-capping of attention scores and final logits, always, with llama.cpp's defaults (gemma2). */
export function softcaps(defaults: {attn: number; final: number}): ConfigFeature {
  const positive = {min: Number.MIN_VALUE, max: 1e9}
  return {
    name: 'soft-caps',
    read: ({meta, arch: a}) => ({
      attnSoftcap: meta.floatOr(`${a}.attn_logit_softcapping`, defaults.attn, positive),
      finalSoftcap: meta.floatOr(`${a}.final_logit_softcapping`, defaults.final, positive),
    }),
  }
}

/** Soft-capping of the final logits only, when the file gives a cap > 0 (gemma3). */
export const FINAL_SOFTCAP_WHEN_GIVEN: ConfigFeature = {
  name: 'final soft-cap when given',
  read: ({meta, arch: a}) => {
    if (!meta.has(`${a}.final_logit_softcapping`)) return {}
    const cap = meta.float(`${a}.final_logit_softcapping`, {min: 0, max: 1e9})
    return cap > 0 ? {finalSoftcap: cap} : {}
  },
}

const SLIDING_WINDOW_KEYS = [
  {key: 'attention.sliding_window', what: 'sliding-window attention'},
  {key: 'attention.sliding_window_pattern', what: 'sliding-window attention'},
] as const

/**
 * Sliding-window attention (gemma2, gemma3): the window (`always` with a default, or only when the
 * file gives one > 0), the layout (`sliding_window_pattern`: a period n, layer i sliding iff
 * i % n < n - 1 (0: every layer), or an array of one bool per block), and the sliding layers' rope
 * base and scale (`rope.freq_base_swa` or a default; 'model' is the model's own).
 */
export function slidingWindow(o: {
  window: {readonly default: number} | 'when given'
  pattern: number
  ropeBase: 'model' | number
  ropeScale: 'model' | number
}): ConfigFeature {
  return {
    name: 'sliding window',
    guards: SLIDING_WINDOW_KEYS,
    read: ({meta, model, arch: a, base: c}) => {
      const windowKey = `${a}.attention.sliding_window`
      const patternKey = `${a}.attention.sliding_window_pattern`
      let window: number
      if (o.window !== 'when given') {
        window = meta.uintOr(windowKey, o.window.default, {min: 0, max: HPARAM_LIMITS.nCtx})
        if (window === 0) bad('ARCH_BAD_HPARAMS', `${windowKey} is 0: every key would be outside the window`)
      } else {
        window = meta.has(windowKey) ? meta.uint(windowKey, {min: 0, max: HPARAM_LIMITS.nCtx}) : 0
        if (window === 0) {
          if (meta.has(patternKey))
            bad('ARCH_BAD_HPARAMS', `${patternKey} is given but ${windowKey} is ${meta.has(windowKey) ? '0' : 'missing'}`)
          return {}
        }
      }
      return {
        nSwa: window,
        swaLayers: swaPattern(meta, model, patternKey, c.nLayer, o.pattern),
        ropeFreqBaseSwa: meta.floatOr(`${a}.rope.freq_base_swa`, o.ropeBase === 'model' ? c.ropeFreqBase : o.ropeBase, {
          min: Number.MIN_VALUE,
          max: 1e12,
        }),
        ropeFreqScaleSwa: o.ropeScale === 'model' ? c.ropeFreqScale : o.ropeScale,
      }
    },
  }
}

function swaPattern(meta: GgufMetadata, model: GgufModelFiles, key: string, nLayer: number, fallback: number): boolean[] {
  const kv = model.metadata.get(key)
  if (kv && isGgufArray(kv.value)) {
    if (kv.value.itemType !== GgufValueType.BOOL)
      bad('ARCH_BAD_HPARAMS', `${key} must be a number or an array of bools, found an array of ${valueTypeName(kv.value.itemType)}`)
    const items = Array.from(kv.value.items as ArrayLike<boolean | number>, (v) => Boolean(v))
    if (items.length !== nLayer) bad('ARCH_BAD_HPARAMS', `${key} has ${items.length} entries for ${nLayer} blocks`)
    return items
  }
  const n = meta.uintOr(key, fallback, {min: 0, max: 1 << 20})
  return Array.from({length: nLayer}, (_, i) => n === 0 || i % n < n - 1)
}

/** Sliding-window keys read but ignored: llama.cpp disables Phi's sliding window. */
export const SLIDING_WINDOW_IGNORED: ConfigFeature = {
  name: 'sliding window ignored',
  ignores: SLIDING_WINDOW_KEYS.map((k) => k.key),
}

/**
 * phi3's longrope as llama.cpp reads it: rope.scaling.type longrope; rope.scaling.factor,
 * attn_factor (cos and sin times it) and original_context_length (the long factors apply past it) are
 * read for every family (./rope-scaling.ts); the factor tensors are used whenever present
 * (./tensors.ts ROPE_FACTORS).
 */
export const LONGROPE: ConfigFeature = {name: 'longrope', ropeScalingTypes: ['longrope']}

/**
 * A mixture of experts (llama.cpp's build_moe_ffn: softmax gating, top k, weights renormalised):
 * 'required' (qwen3moe) or 'optional' (llama: experts when expert_count > 0). The expert width
 * comes from `ffKey` (expert_feed_forward_length, or feed_forward_length itself).
 */
export function experts(o: {
  presence: 'required' | 'optional'
  ffKey: 'expert_feed_forward_length' | 'feed_forward_length'
}): ConfigFeature {
  return {
    name: 'experts',
    read: ({meta, arch: a, base}) => {
      const countKey = `${a}.expert_count`
      const usedKey = `${a}.expert_used_count`
      const nExpert =
        o.presence === 'required'
          ? meta.uint(countKey, {min: 1, max: HPARAM_LIMITS.nExpert})
          : meta.uintOr(countKey, 0, {min: 0, max: HPARAM_LIMITS.nExpert})
      if (nExpert === 0) {
        if (meta.has(usedKey) && meta.uint(usedKey) !== 0)
          bad('ARCH_BAD_HPARAMS', `${usedKey} ${meta.uint(usedKey)} without experts (${countKey} is 0 or missing)`)
        return {}
      }
      const nExpertUsed = meta.uint(usedKey, {min: 1, max: HPARAM_LIMITS.nExpert})
      if (nExpertUsed > nExpert) bad('ARCH_BAD_HPARAMS', `${usedKey} ${nExpertUsed} is more than ${countKey} ${nExpert}`)
      const nFfExp = o.ffKey === 'feed_forward_length' ? base.nFf : meta.uint(`${a}.${o.ffKey}`, {min: 1, max: HPARAM_LIMITS.nFf})
      return {nExpert, nExpertUsed, nFfExp}
    },
  }
}

/**
 * A multi-token-prediction head (llama.cpp's `nextn_predict_layers`): the last N blocks are the
 * head's, kept but not run by the main pass (./tensors.ts NEXTN_TENSORS). One block at most, as
 * llama.cpp's qwen35 runs it; more is refused by name. Families without this feature refuse the key.
 */
export const NEXTN: ConfigFeature = {
  name: 'nextn',
  guards: [{key: 'nextn_predict_layers', what: 'a NextN (MTP) head'}],
  read: ({meta, arch: a, base}) => {
    const key = `${a}.nextn_predict_layers`
    const n = meta.uintOr(key, 0, {min: 0, max: HPARAM_LIMITS.nLayer})
    if (n > 1) bad('ARCH_UNSUPPORTED', `${key} ${n}: only one NextN (MTP) block is supported (as llama.cpp's qwen35)`, ExitCode.unsupported)
    if (n >= base.nLayer) bad('ARCH_BAD_HPARAMS', `${key} ${n} leaves no block of ${a}.block_count ${base.nLayer} for the model itself`)
    return n > 0 ? {nNextn: n} : {}
  },
}
