/**
 * Rope scaling (issue #23): what a file declares under `<arch>.rope.scaling.*`, read as llama.cpp's
 * load_hparams reads it for every family, and the overrides of llama.cpp's --rope-* / --yarn-* flags,
 * resolved into the engine's rope fields as llama_context's constructor resolves its cparams. The
 * native side does the arithmetic of the angles (ops/rope.c); this module decides which numbers it gets.
 */
import {ExitCode, RunnerError} from '../errors.js'
import type {GgufMetadata} from '../gguf/index.js'
import {quoted} from '../util/index.js'
import {bad, HPARAM_LIMITS} from './hparams.js'

/** The scaling types every family admits (llama.cpp's names); a family's features may add more (phi3's longrope). */
export const ROPE_SCALING_TYPES = ['none', 'linear', 'yarn'] as const
export type RopeScalingType = (typeof ROPE_SCALING_TYPES)[number]

/** What the file declares (llama.cpp's hparams): the values before any override. */
export interface DeclaredRope {
  /** rope.scaling.type; llama.cpp's default when the key is absent is linear (with factor 1 unless given). */
  readonly type: string
  readonly freqBase: number
  /** 1 / rope.scaling.factor (or the older rope.scale_linear), in float; 1 when neither is given or either is 0. */
  readonly freqScale: number
  /** rope.scaling.original_context_length, else the training context. */
  readonly nCtxOrig: number
  /** rope.scaling.attn_factor (default 1): cos and sin times it, whatever the type. */
  readonly attnFactor: number
}

/**
 * llama.cpp's rope flags as options (the library's loadModel `rope`, the CLI's flags): each replaces
 * what the file declares. `freqScale` is --rope-freq-scale, or 1 / --rope-scale.
 */
export interface RopeOverrides {
  readonly scaling?: RopeScalingType
  readonly freqBase?: number
  readonly freqScale?: number
  readonly yarnOrigCtx?: number
  readonly yarnExtFactor?: number
  readonly yarnAttnFactor?: number
  readonly yarnBetaFast?: number
  readonly yarnBetaSlow?: number
}

/** The rope as a model runs it: the file's declaration, what was overridden, and what follows. */
export interface RopeScaling {
  readonly declared: DeclaredRope
  readonly overrides: RopeOverrides
  /** The type in effect. */
  readonly type: string
  /** Positions the scaling covers: original context × factor when scaled, never below the training context. */
  readonly nCtxCovered: number
}

/** The engine's rope fields (runner.h) that scaling decides. */
export interface RopeFields {
  readonly ropeFreqBase: number
  readonly ropeFreqScale: number
  readonly ropeAttnFactor: number
  readonly nCtxOrig: number
  readonly ropeExtFactor: number
  readonly ropeBetaFast: number
  readonly ropeBetaSlow: number
}

/** llama.cpp's YaRN defaults (llama_hparams): the ramp between the pairs turning 32 and 1 times in the original context. */
export const YARN_DEFAULTS = {betaFast: 32, betaSlow: 1} as const

/**
 * Keys llama.cpp reads only for other families (grok, mistral3, deepseek2, hunyuan): it ignores them
 * for every family this engine has, yet each would change the angles, so a file carrying one is
 * refused instead of run differently from what its writer meant.
 */
const UNREAD_KEYS: ReadonlyArray<{key: string; what: string}> = [
  {key: 'rope.scaling.yarn_ext_factor', what: "YaRN's extrapolation mix"},
  {key: 'rope.scaling.yarn_attn_factor', what: "YaRN's attention factor"},
  {key: 'rope.scaling.yarn_beta_fast', what: "YaRN's beta_fast"},
  {key: 'rope.scaling.yarn_beta_slow', what: "YaRN's beta_slow"},
  {key: 'rope.scaling.yarn_log_multiplier', what: "YaRN's log multiplier (mscale_all_dim)"},
  {key: 'rope.scaling.alpha', what: 'NTK-aware alpha scaling'},
]

const FACTOR_RANGE = {min: 0, max: 1e6}

/** The file's rope declaration, as llama.cpp's load_hparams reads it; `extraTypes` are the family's features' types. */
export function readDeclaredRope(meta: GgufMetadata, a: string, nCtxTrain: number, extraTypes: readonly string[]): DeclaredRope {
  for (const {key, what} of UNREAD_KEYS) {
    if (meta.has(`${a}.${key}`))
      bad(
        'ARCH_UNSUPPORTED',
        `${a}.${key}: ${what} is not read for ${a} (llama.cpp ignores it for this family), and running without it would not be what the file means`,
        ExitCode.unsupported,
      )
  }
  const type = meta.stringOr(`${a}.rope.scaling.type`, 'linear')
  const admitted = [...ROPE_SCALING_TYPES, ...extraTypes]
  if (!admitted.includes(type))
    bad('ARCH_UNSUPPORTED', `${a}.rope.scaling.type ${quoted(type)} is not supported (${admitted.join(', ')})`, ExitCode.unsupported)
  // The factor's older name is read only when the newer is absent; 0 means none (llama.cpp).
  const factor = meta.has(`${a}.rope.scaling.factor`)
    ? meta.float(`${a}.rope.scaling.factor`, FACTOR_RANGE)
    : meta.floatOr(`${a}.rope.scale_linear`, 0, FACTOR_RANGE)
  return {
    type,
    freqBase: meta.floatOr(`${a}.rope.freq_base`, 10000, {min: Number.MIN_VALUE, max: 1e12}),
    freqScale: factor === 0 ? 1 : Math.fround(1 / Math.fround(factor)),
    nCtxOrig: meta.uintOr(`${a}.rope.scaling.original_context_length`, nCtxTrain, {min: 1, max: HPARAM_LIMITS.nCtx}),
    attnFactor: meta.floatOr(`${a}.rope.scaling.attn_factor`, 1, {min: Number.MIN_VALUE, max: 1e6}),
  }
}

/** Each override's name in refusals: the CLI's flag and the library's option, so either reader finds theirs. */
export const ROPE_OPTION_NAMES: Readonly<Record<keyof RopeOverrides, string>> = {
  scaling: '--rope-scaling (rope.scaling)',
  freqBase: '--rope-freq-base (rope.freqBase)',
  freqScale: '--rope-freq-scale or 1 / --rope-scale (rope.freqScale)',
  yarnOrigCtx: '--yarn-orig-ctx (rope.yarnOrigCtx)',
  yarnExtFactor: '--yarn-ext-factor (rope.yarnExtFactor)',
  yarnAttnFactor: '--yarn-attn-factor (rope.yarnAttnFactor)',
  yarnBetaFast: '--yarn-beta-fast (rope.yarnBetaFast)',
  yarnBetaSlow: '--yarn-beta-slow (rope.yarnBetaSlow)',
}

/** Each override's range, as a table: [key, lowest allowed, whether the lowest is excluded, integer]. */
const RANGES: ReadonlyArray<readonly [Exclude<keyof RopeOverrides, 'scaling'>, number, 'open' | 'closed', 'integer' | 'real']> = [
  ['freqBase', 0, 'open', 'real'],
  ['freqScale', 0, 'open', 'real'],
  ['yarnOrigCtx', 1, 'closed', 'integer'],
  ['yarnExtFactor', 0, 'closed', 'real'],
  ['yarnAttnFactor', 0, 'open', 'real'],
  ['yarnBetaFast', 0, 'open', 'real'],
  ['yarnBetaSlow', 0, 'open', 'real'],
]

const refuse = (message: string): never => {
  throw new RunnerError('ROPE_BAD_OPTION', message, ExitCode.usage)
}

/** Refuses a bad override by its name (ROPE_BAD_OPTION, exit 2). */
export function checkRopeOverrides(o: RopeOverrides): void {
  const names = ROPE_OPTION_NAMES
  if (o.scaling !== undefined && !(ROPE_SCALING_TYPES as readonly string[]).includes(o.scaling))
    refuse(`${names.scaling} ${quoted(String(o.scaling))}: must be one of ${ROPE_SCALING_TYPES.join(', ')}`)
  for (const [key, min, bound, kind] of RANGES) {
    const v = o[key]
    if (v === undefined) continue
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      (bound === 'open' ? v > min : v >= min) &&
      (kind === 'real' || (Number.isInteger(v) && v <= HPARAM_LIMITS.nCtx))
    if (!ok)
      refuse(
        `${names[key]} ${String(v)}: must be ${kind === 'integer' ? `an integer in [${min}, ${HPARAM_LIMITS.nCtx}]` : `a finite number ${bound === 'open' ? '>' : '>='} ${min}`}`,
      )
  }
}

/** logf as float arithmetic: the double log rounded to float (glibc's logf is within an ulp of it). */
const logf = (x: number) => Math.fround(Math.log(x))
const f = Math.fround

/**
 * The engine's rope fields for a declaration and overrides, as llama_context resolves cparams: the
 * type none never scales; the extrapolation mix defaults to 1 for YaRN and 0 otherwise; with a mix,
 * the attention factor is llama.cpp's get_mscale(factor) divided by the 1 + 0.1 ln(factor) that ggml
 * multiplies back inside the op (so --yarn-attn-factor cannot apply and is refused there); then times
 * the file's rope.scaling.attn_factor. Float steps are rounded as the C code rounds them.
 */
export function resolveRope(declared: DeclaredRope, o: RopeOverrides, nCtxTrain: number): {fields: RopeFields; scaling: RopeScaling} {
  const names = ROPE_OPTION_NAMES
  checkRopeOverrides(o)
  const type = o.scaling ?? declared.type
  if (type === 'none' && o.freqScale !== undefined)
    refuse(
      `${names.freqScale} ${o.freqScale}: the rope scaling type is none (${o.scaling ? names.scaling : 'as the file declares'}), which never scales (llama.cpp sets the scale to 1); give ${names.scaling} linear or yarn too`,
    )
  const freqScale = type === 'none' ? 1 : f(o.freqScale ?? declared.freqScale)
  const extFactor = o.yarnExtFactor ?? (type === 'yarn' ? 1 : 0)
  for (const key of ['yarnBetaFast', 'yarnBetaSlow'] as const) {
    if (extFactor === 0 && o[key] !== undefined)
      refuse(`${names[key]} ${o[key]}: it places YaRN's ramp, which is off (the type is ${type} and the extrapolation mix is 0)`)
  }
  let attn = o.yarnAttnFactor ?? 1
  if (extFactor !== 0) {
    if (o.yarnAttnFactor !== undefined)
      refuse(
        `${names.yarnAttnFactor} ${o.yarnAttnFactor}: with YaRN's extrapolation mix on, llama.cpp replaces the attention factor by its own (1 + 0.1 ln factor), so the value would be ignored`,
      )
    const factor = f(1 / freqScale)
    const mscale = factor <= 1 ? 1 : f(f(f(0.1) * logf(factor)) + 1)
    attn = f(mscale * f(1 / f(1 + f(f(0.1) * logf(factor)))))
  }
  const nCtxOrig = o.yarnOrigCtx ?? declared.nCtxOrig
  const fields: RopeFields = {
    ropeFreqBase: o.freqBase ?? declared.freqBase,
    ropeFreqScale: freqScale,
    ropeAttnFactor: f(attn * declared.attnFactor),
    nCtxOrig,
    ropeExtFactor: extFactor,
    ropeBetaFast: extFactor !== 0 ? (o.yarnBetaFast ?? YARN_DEFAULTS.betaFast) : 0,
    ropeBetaSlow: extFactor !== 0 ? (o.yarnBetaSlow ?? YARN_DEFAULTS.betaSlow) : 0,
  }
  const nCtxCovered = freqScale < 1 ? Math.max(nCtxTrain, Math.round(nCtxOrig / freqScale)) : nCtxTrain
  return {fields, scaling: {declared, overrides: o, type, nCtxCovered}}
}
