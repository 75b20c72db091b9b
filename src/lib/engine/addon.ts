/**
 * The one typed seam between TypeScript and the native engine: the only file that loads
 * native/build/Release/runner_native.node (built by cmake-js from native/CMakeLists.txt).
 * Everything else reaches native code through the functions exported here.
 */
import {existsSync, readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join, parse} from 'node:path'
import {fileURLToPath} from 'node:url'

import {ExitCode, RunnerError} from '../errors.js'
import {cpuCap} from './cpu-level.js'

/**
 * Must equal RUNNER_ABI_VERSION in native/include/runner.h; bump both together when the
 * C API changes, so an addon left over from an older checkout is refused by name.
 */
export const ADDON_ABI_VERSION = 8

/** Names the engine's feature table (native/src/core/cpu_features.c) exports, in its order. */
export const CPU_FEATURE_NAMES = [
  'sse4_2',
  'avx2',
  'fma',
  'f16c',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_vnni',
  'avx_vnni',
  'amx',
  'amx_int8',
  'amx_bf16',
  'neon',
] as const

export type CpuFeatureName = (typeof CPU_FEATURE_NAMES)[number]

/**
 * Instruction-set features usable by this process, detected at run time (on x86: cpuid and
 * the OS-enabled register state). `amx` is AMX-TILE; on Linux the first tile instruction
 * still needs the process to request permission, which detection does not do.
 */
export type CpuFeatures = Readonly<Record<CpuFeatureName, boolean>>

/** Opaque engine handles (Napi::External); only the functions below accept them. */
export type NativeModelHandle = {readonly __brand: 'NativeModel'}
export type NativeContextHandle = {readonly __brand: 'NativeContext'}

/** runner_model_config, field for field. */
export interface NativeModelConfig {
  nVocab: number
  nEmbd: number
  nLayer: number
  nHead: number
  nHeadKv: number
  headDim: number
  nFf: number
  nCtxTrain: number
  nRot: number
  /** 0 norm (adjacent pairs), 2 neox (i with i + n/2). */
  ropeType: number
  ropeFreqBase: number
  ropeFreqScale: number
  normEps: number
  /** Per block: 1 where the attention sublayer was removed (omitted: none). */
  attnRemoved?: Uint8Array
  /** Per block: 1 where the FFN sublayer was removed (omitted: none). */
  ffnRemoved?: Uint8Array
  /** Multipliers (granite); 0 or absent: not set. */
  embeddingScale?: number
  residualScale?: number
  attentionScale?: number
  logitScale?: number
  /** Gated FFN activation: 0 SiLU, 1 GELU (ggml's tanh form through its F16 table). Absent: 0. */
  ffnAct?: number
  /** Multiplies the query after rope (gemma); the scores are then not scaled again. */
  queryScale?: number
  /** Soft-capping of attention scores and of the final logits (gemma2); 0 or absent: none. */
  attnSoftcap?: number
  finalSoftcap?: number
  /** Sliding window: flagged layers attend to the last nSwa positions, with their own rope base/scale. */
  nSwa?: number
  swaLayers?: Uint8Array
  ropeFreqBaseSwa?: number
  ropeFreqScaleSwa?: number
  /** Mixture of experts: experts per layer, chosen per token, an expert's FFN width. */
  nExpert?: number
  nExpertUsed?: number
  nFfExp?: number
  /** phi3 longrope: cos and sin times this; long factors when the context (padded to 256) exceeds nCtxOrig. */
  ropeAttnFactor?: number
  nCtxOrig?: number
}

/** runner_tensor_desc: role id, layer (-1 model-wide), ggml type id, ne (ggml order), file index, byte range. */
export interface NativeTensorDesc {
  role: number
  layer: number
  type: number
  ne: number[]
  file: number
  offset: number
  size: number
  /** Expert index of one expert's tensor in the split layout (ffn_*_exps roles); absent: -1. */
  expert?: number
}

/**
 * The sampler parameter object the addon reads (native/addon/sampler_binding.cc ReadSamplerParams),
 * shared by samplerCreate and generate.
 */
export interface NativeSamplingParams {
  temperature: number
  topK: number
  topP: number
  minP: number
  repeatPenalty: number
  presencePenalty: number
  frequencyPenalty: number
  penaltyLastN: number
  seed: bigint
  nTopLogprobs: number
  /** Compute the chosen token's log-probability (costs one exp per vocabulary entry). */
  logprobs?: boolean
  logitBias?: ReadonlyMap<number, number> | ReadonlyArray<readonly [number, number]>
  exemptTokens?: readonly number[]
}

export interface NativeGenerateParams {
  prompt: Int32Array
  pos: number
  history?: Int32Array
  maxTokens: number
  eogTokens: Int32Array
  sampling: NativeSamplingParams
}

/** runner_generate_stats; finish is runner_finish_reason. */
export interface NativeGenerateStats {
  nPrompt: number
  nGenerated: number
  finish: number
  eogToken: number
  promptMs: number
  decodeMs: number
}

/** What runner_native.node exports (native/addon/*.cc). */
export interface NativeAddon {
  /** RUNNER_ABI_VERSION the addon was compiled with. */
  abiVersion(): number
  /** package.json version the engine was built as. */
  version(): string
  cpuFeatures(): CpuFeatures
  /** Role names in runner_tensor_role order. */
  tensorRoles(): string[]
  modelLoad(
    config: NativeModelConfig,
    paths: string[],
    tensors: NativeTensorDesc[],
    onProgress?: (done: number, total: number) => void,
  ): Promise<NativeModelHandle>
  modelFree(model: NativeModelHandle): void
  contextCreate(model: NativeModelHandle, params: {nCtx: number; nBatch: number; threads: number; kvType: number}): Promise<NativeContextHandle>
  contextFree(ctx: NativeContextHandle): void
  /** flags: Int32Array [abort, stop], checked by the engine between layers and tokens. */
  decode(ctx: NativeContextHandle, tokens: Int32Array, pos: number, logitsMode: number, logits?: Float32Array, flags?: Int32Array): Promise<void>
  kvTruncate(ctx: NativeContextHandle, nKeep: number): void
  nPast(ctx: NativeContextHandle): number
  /** Bytes of K and V cache over the layers that have attention. */
  kvBytes(ctx: NativeContextHandle): number
  generate(
    ctx: NativeContextHandle,
    params: NativeGenerateParams,
    onToken: (token: number, logprob: number, topIds: Int32Array | null, topLogprobs: Float32Array | null) => void,
    flags?: Int32Array,
  ): Promise<NativeGenerateStats>
}

const ADDON_RELATIVE_PATH = join('native', 'build', 'Release', 'runner_native.node')
const PACKAGE_NAME = 'runner'
const BUILD_HINT =
  'Build it with `npm run build:native` (npm ci also builds it); that needs cmake (>= 3.19) and a C/C++ compiler (gcc or clang).'

const requireNative = createRequire(import.meta.url)

/**
 * The package root: the nearest directory above `start` holding the package.json named
 * "runner". Works from the compiled file (dist/src/lib/engine/) and from the source file
 * run by tsx (src/lib/engine/).
 */
export function findPackageRoot(start: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = start
  for (;;) {
    const candidate = join(dir, 'package.json')
    if (existsSync(candidate) && packageNameOf(candidate) === PACKAGE_NAME) return dir
    if (dir === parse(dir).root) break
    dir = dirname(dir)
  }

  throw new RunnerError(
    'ADDON_NOT_BUILT',
    `Cannot find the runner package root (a package.json named "${PACKAGE_NAME}") above ${start}, so the native addon cannot be located. ${BUILD_HINT}`,
    ExitCode.backendUnavailable,
  )
}

function packageNameOf(packageJsonPath: string): unknown {
  try {
    const parsed: unknown = JSON.parse(readFileSync(packageJsonPath, 'utf8'))
    return typeof parsed === 'object' && parsed !== null ? (parsed as {name?: unknown}).name : undefined
  } catch {
    return undefined // unreadable or not JSON: not ours, keep walking up
  }
}

/** Where the build puts the addon: <package root>/native/build/Release/runner_native.node. */
export function addonPath(): string {
  // RUNNER_NATIVE_ADDON points at another build of the addon (a developer's second build folder,
  // so that two builds can run side by side); the default is the one npm ci builds.
  return process.env.RUNNER_NATIVE_ADDON || join(findPackageRoot(), ADDON_RELATIVE_PATH)
}

/**
 * Load and check the addon at `path`. Internal: loadAddon() is the public way in; tests use
 * this to exercise the failure paths.
 */
export function loadAddonFrom(path: string): NativeAddon {
  let loaded: unknown
  try {
    loaded = requireNative(path)
  } catch (error) {
    // Node appends a multi-line "Require stack" to a missing-file error; the first part says it all.
    const reason = (error instanceof Error ? error.message : String(error)).split('\nRequire stack:')[0]
    throw new RunnerError(
      'ADDON_NOT_BUILT',
      `The native engine addon could not be loaded from ${path}: ${reason}. ${BUILD_HINT}`,
      ExitCode.backendUnavailable,
      {cause: error},
    )
  }

  const addon = loaded as Partial<Record<keyof NativeAddon, unknown>> | null
  const abi = typeof addon?.abiVersion === 'function' ? (addon.abiVersion as () => unknown)() : undefined
  const missing = (['abiVersion', 'version', 'cpuFeatures'] as const).filter((name) => typeof addon?.[name] !== 'function')
  if (abi !== ADDON_ABI_VERSION || missing.length > 0) {
    const found = missing.length > 0 ? `lacks ${missing.join(', ')}` : `has ABI version ${String(abi)}`
    throw new RunnerError(
      'ADDON_STALE',
      `The native engine addon at ${path} ${found}, but this runner expects ABI version ${ADDON_ABI_VERSION}: it was built from other sources. Rebuild it with \`npm run build:native\`.`,
      ExitCode.backendUnavailable,
    )
  }

  return loaded as NativeAddon
}

let cached: NativeAddon | undefined

/** The addon, loaded once per process. Throws RunnerError ADDON_NOT_BUILT / ADDON_STALE. */
export function loadAddon(): NativeAddon {
  cpuCap() // a mistyped RUNNER_CPU_MAX is refused here, before the engine could read it
  cached ??= loadAddonFrom(addonPath())
  return cached
}

/** CPU features usable by this process, as the engine's run-time dispatch sees them. */
export function cpuFeatures(): CpuFeatures {
  return loadAddon().cpuFeatures()
}
