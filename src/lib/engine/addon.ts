/**
 * The one typed seam between TypeScript and the native engine: the only file that loads
 * native/build/Release/runner_native.node (built by cmake-js from native/CMakeLists.txt), and the one
 * description of everything it exports (NativeAddon). The loader checks the ABI version and that every
 * declared function is there (ADDON_FUNCTIONS, kept complete by the compiler), so a stale build is
 * refused by name. Everything else reaches native code through the functions of this area
 * (./index.ts); the test hooks are a separate addon (./test-addon.ts).
 */
import {existsSync, readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join, parse} from 'node:path'
import {fileURLToPath} from 'node:url'

import type {NativeModelConfig} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {amxMode, type AmxStatus, cpuCap} from './cpu-level.js'

/**
 * Must equal RUNNER_ABI_VERSION in native/include/runner.h; bump both together when the
 * C API changes, so an addon left over from an older checkout is refused by name.
 */
export const ADDON_ABI_VERSION = 20

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
export type NativeGroupHandle = {readonly __brand: 'NativeGroup'}
export type NativeDraftHandle = {readonly __brand: 'NativeDraft'}
export type NativeTrainerHandle = {readonly __brand: 'NativeTrainer'}

/** runner_model_config as modelLoad reads it: runner.h's field names and C values (src/lib/arch/config-fields.ts). */
export type {NativeModelConfig} from '../arch/index.js'

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
  /** Constrained decoding: masks every draw, advanced by every token (busy for the generation). */
  matcher?: NativeMatcherHandle
  /** Decode group: the generated tokens are evaluated in its steps, beside other members'. */
  group?: NativeGroupHandle
  /** Speculative decoding's draft source (busy for the generation); needs `prefix`. */
  draft?: NativeDraftHandle
  /** With a draft: the tokens at positions [0, pos). */
  prefix?: Int32Array
  /** Context shift: a full context keeps this many positions and drops half of the rest (absent: off). */
  shiftKeep?: number
}

/** runner_draft_params: kind 1 lookup (n-gram sizes), 2 a draft model (pMin), 3 the model's MTP head. */
export interface NativeDraftParams {
  kind: number
  nMax: number
  ngramMin: number
  ngramMax: number
  pMin: number
}

/** runner_kv_info. */
export interface NativeKvInfo {
  readonly bytes: number
  readonly flatBytes: number
  readonly ringLayers: number
  readonly ringPositions: number
}

/** runner_generate_stats; finish is runner_finish_reason. */
export interface NativeGenerateStats {
  nPrompt: number
  nGenerated: number
  finish: number
  eogToken: number
  promptMs: number
  decodeMs: number
  /** Tokens the grammar forced (no draw). */
  nForced: number
  /** Time spent computing grammar masks. */
  maskMs: number
  /** Verify steps that carried drafted tokens, drafted tokens evaluated, and those the target sampled. */
  nDraftSteps: number
  nDrafted: number
  nAccepted: number
  /** Time spent proposing drafts (part of decodeMs). */
  draftMs: number
  /** Context shifts made, and the positions they discarded (after shiftKeep, in total). */
  nShifts: number
  nDiscarded: number
}

/** One entry of the engine's weight-type table (runner.h runner_type_info; native/addon/types_binding.cc). */
export interface NativeTypeTraits {
  /** ggml type id. */
  readonly type: number
  /** ggml's name, e.g. "Q4_0". */
  readonly name: string
  /** Values per block. */
  readonly blockSize: number
  /** Bytes per block. */
  readonly typeSize: number
  /** ggml type id the activations are quantized to before a dot product with this type. */
  readonly vecDotType: number
  /** vec_dot variants this build has and this CPU can run, slowest first. */
  readonly variants: readonly KernelVariant[]
  /** vec_dot2 (two weight rows per call, sharing the activation work) variants this build has and this CPU can run. */
  readonly vecDot2Variants: readonly KernelVariant[]
  /** The register tiles of prompt matmuls (rows weight rows by cols activation rows) this build has and this CPU can run. */
  readonly vecDotTiles: readonly KernelTile[]
  /** Activation quantizer (from_float) variants this build has and this CPU can run. */
  readonly fromFloatVariants: readonly KernelVariant[]
  /** Whether the type has a weight quantizer (llama.cpp's quantize_row_*_ref). */
  readonly hasQuantizeRef: boolean
  /** The vec_dot variant the engine picks on this CPU, or null when the type has none. */
  readonly pickedVecDot: KernelVariant | null
  /** The from_float variant the engine picks on this CPU, or null when the type has none. */
  readonly pickedFromFloat: KernelVariant | null
}

/** Kernel variants, slowest first (runner.h runner_kernel_variant). */
export const KERNEL_VARIANTS = ['scalar', 'avx2', 'avx512'] as const
export type KernelVariant = (typeof KERNEL_VARIANTS)[number]

/** A prompt-matmul register tile: `rows` weight rows by `cols` activation rows per call. */
export interface KernelTile {
  readonly variant: KernelVariant
  readonly rows: number
  readonly cols: number
}

/** A model config field as the engine describes it (runner.h runner_config_field). */
export interface NativeConfigField {
  readonly name: string
  readonly kind: string
  readonly presence: string
  /** offsetof(runner_model_config, name) */
  readonly offset: number
  readonly doc: string
}

/** A value of an enumerated config field (runner.h runner_config_enum_value). */
export interface NativeConfigEnumValue {
  readonly field: string
  readonly name: string
  readonly value: number
  readonly doc: string
}

/** runner_lora_pair_desc: one adapted weight's lora_a / lora_b, by role and block, extents in the adapter file. */
export interface NativeLoraPair {
  readonly role: number
  readonly layer: number
  readonly aType: number
  readonly bType: number
  readonly aNe: readonly [number, number]
  readonly bNe: readonly [number, number]
  readonly aOffset: number
  readonly aSize: number
  readonly bOffset: number
  readonly bSize: number
}

/** Opaque sampler handle (a Node-API External) owned by the addon. */
export type NativeSamplerHandle = {readonly __brand: 'NativeSampler'}
export type NativeGrammarHandle = {readonly __brand: 'NativeGrammar'}
export type NativeTrieHandle = {readonly __brand: 'NativeTrie'}
export type NativeMatcherHandle = {readonly __brand: 'NativeMatcher'}

/** One sampled token as samplerSample returns it. */
export interface NativeSampleResult {
  /** The token, or -1 when every logit was banned or not finite. */
  readonly token: number
  /** log-softmax of the token over the whole vocabulary after bias and penalties; null unless logprobs. */
  readonly logprob: number | null
  /** The most likely tokens and their log-probabilities, best first (ties: lower id first). */
  readonly top: ReadonlyArray<readonly [number, number]>
}

/** Everything runner_native.node exports (native/addon/*.cc), and nothing else. */
export interface NativeAddon {
  /** RUNNER_ABI_VERSION the addon was compiled with. */
  abiVersion(): number
  /** package.json version the engine was built as. */
  version(): string
  cpuFeatures(): CpuFeatures
  /** Whether prompt matmuls use AMX tiles in this process (decided, self-check included, on the first call or context). */
  amxStatus(): AmxStatus
  /** The code name of every runner_status, in value order (runner.h RUNNER_STATUS_LIST). */
  statusCodes(): string[]
  /** Role names in runner_tensor_role order. */
  tensorRoles(): string[]
  /** runner.h RUNNER_MODEL_CONFIG_FIELDS as the engine compiled it. */
  modelConfigFields(): NativeConfigField[]
  /** runner.h RUNNER_MODEL_CONFIG_ENUMS as the engine compiled it. */
  modelConfigEnums(): NativeConfigEnumValue[]
  /** flags: Int32Array [abort, stop]; a raised abort cancels the load between chunks (ENGINE_ABORTED). */
  modelLoad(
    config: NativeModelConfig,
    paths: string[],
    tensors: NativeTensorDesc[],
    onProgress?: (done: number, total: number) => void,
    flags?: Int32Array,
  ): Promise<NativeModelHandle>
  modelFree(model: NativeModelHandle): void
  /** Map an adapter file and attach its LoRA pairs (runner.h runner_model_add_lora); before any context. */
  modelAddLora(model: NativeModelHandle, path: string, pairs: NativeLoraPair[], alpha: number, scale: number): void
  /** A LoRA trainer over the model (runner.h runner_trainer_create). */
  trainerCreate(
    model: NativeModelHandle,
    params: {nCtx: number; rank: number; alpha: number; dropout: number; threads: number; roles: Int32Array; layers: Int32Array},
  ): NativeTrainerHandle
  trainerFree(trainer: NativeTrainerHandle): void
  trainerNParams(trainer: NativeTrainerHandle): number
  /** what: 0 params, 1 gradients, 2 and 3 AdamW's moments (runner_train_vector). */
  trainerGet(trainer: NativeTrainerHandle, what: number): Float64Array
  trainerSet(trainer: NativeTrainerHandle, what: number, values: Float64Array): void
  /** Optimizer steps taken; sets them first when given. */
  trainerSteps(trainer: NativeTrainerHandle, steps?: number): number
  trainerSample(
    trainer: NativeTrainerHandle,
    tokens: Int32Array,
    scored: Uint8Array,
    grad: boolean,
    seed: bigint,
    flags?: Int32Array,
  ): Promise<{loss: number; scored: number}>
  /** kind 0 AdamW, 1 SGD; returns the gradient's global norm before clipping. */
  trainerOptimize(
    trainer: NativeTrainerHandle,
    params: {
      kind: number
      lr: number
      beta1: number
      beta2: number
      eps: number
      weightDecay: number
      gradScale: number
      maxGradNorm: number
    },
  ): number
  contextCreate(
    model: NativeModelHandle,
    /** blocks (runner_context_blocks): 0 the model's own (default), 1 only the NextN block (an MTP draft's); swaFull: no ring. */
    params: {nCtx: number; nBatch: number; threads: number; kvType: number; blocks?: number; swaFull?: number},
  ): Promise<NativeContextHandle>
  contextFree(ctx: NativeContextHandle): void
  /**
   * logitsMode (runner_logits_mode): 0 none, 1 last (n_vocab floats), 2 all (n × n_vocab), 3 embd
   * (n × n_embd: each token's hidden state after the output norm; the LM head is not run).
   * flags: Int32Array [abort, stop], checked by the engine between layers and tokens.
   */
  decode(
    ctx: NativeContextHandle,
    tokens: Int32Array,
    pos: number,
    logitsMode: number,
    logits?: Float32Array,
    flags?: Int32Array,
  ): Promise<void>
  kvTruncate(ctx: NativeContextHandle, nKeep: number): void
  nPast(ctx: NativeContextHandle): number
  /** Bytes of K and V cache over the layers that have attention. */
  kvBytes(ctx: NativeContextHandle): number
  /** runner_kv_info: the cache as allocated, as a flat one would be, and its sliding-window rings. */
  kvInfo(ctx: NativeContextHandle): NativeKvInfo
  /** Context shift: drop [nKeep, nKeep + nDiscard), move the rest down, their keys re-roped (runner_kv_shift). */
  kvShift(ctx: NativeContextHandle, nKeep: number, nDiscard: number): void
  /** Null, or why runner_kv_can_shift refuses a context shift on this context. */
  kvCanShift(ctx: NativeContextHandle): string | null
  /** The smallest nKeep > 0 kvTruncate accepts now (0: any); below it a ring has lost the next token's window. */
  kvMinKeep(ctx: NativeContextHandle): number
  /** A copy of the logits row of the last token the last decode or generate evaluated (null: none yet, or truncated since). */
  contextLogits(ctx: NativeContextHandle): Float32Array | null
  generate(
    ctx: NativeContextHandle,
    params: NativeGenerateParams,
    onToken: (token: number, logprob: number, topIds: Int32Array | null, topLogprobs: Float32Array | null, forced: boolean) => void,
    flags?: Int32Array,
  ): Promise<NativeGenerateStats>
  /** A decode group of one model (runner.h runner_group_create): its pool, most members, wait per step (µs). */
  groupCreate(model: NativeModelHandle, params: {threads: number; maxMembers: number; waitUs: number}): NativeGroupHandle
  groupFree(group: NativeGroupHandle): void
  groupStats(group: NativeGroupHandle): {steps: number; tokens: number}
  /** A draft source (runner_draft_create); a draft model's context is the draft's (busy) until draftFree. */
  draftCreate(params: NativeDraftParams, draftContext: NativeContextHandle | null): NativeDraftHandle
  draftFree(draft: NativeDraftHandle): void
  /** The weight-type table, in type-id order. */
  typeTraits(): NativeTypeTraits[]
  /** Weight quantizer: llama.cpp's quantize_row_*_ref bytes. */
  quantizeRef(type: number, x: Float32Array): Uint8Array
  /** Dequantize n values. */
  toFloat(type: number, bytes: Uint8Array, n: number): Float32Array
  /** w (rows x nIn) += s * b (rows x rank) a (rank x nIn), in place (runner_lora_merge_rows). */
  loraMergeRows(w: Float32Array, nIn: number, a: Float32Array, b: Float32Array, rank: number, alpha: number, scale: number): void
  samplerCreate(params: NativeSamplingParams, nVocab: number): NativeSamplerHandle
  samplerFree(handle: NativeSamplerHandle): void
  samplerAccept(handle: NativeSamplerHandle, token: number): void
  samplerSample(handle: NativeSamplerHandle, logits: Float32Array): NativeSampleResult
  /** A grammar program (src/lib/grammar/program.ts), validated and copied. */
  grammarCreate(program: Int32Array): NativeGrammarHandle
  /** Token i's bytes are bytes[offsets[i], offsets[i + 1]). */
  tokenTrieCreate(bytes: Uint8Array, offsets: Float64Array): NativeTrieHandle
  matcherCreate(grammar: NativeGrammarHandle, trie: NativeTrieHandle | null): NativeMatcherHandle
  matcherReset(matcher: NativeMatcherHandle): void
  matcherIsComplete(matcher: NativeMatcherHandle): boolean
  matcherFillMask(matcher: NativeMatcherHandle, bits: Uint32Array): {allowed: number; only: number}
  matcherAcceptToken(matcher: NativeMatcherHandle, token: number): void
  matcherAcceptBytes(matcher: NativeMatcherHandle, bytes: Uint8Array): number
  matcherFree(matcher: NativeMatcherHandle): void
}

/** Every function NativeAddon declares: the loader checks each is there. */
export const ADDON_FUNCTIONS = [
  'abiVersion',
  'version',
  'cpuFeatures',
  'amxStatus',
  'statusCodes',
  'tensorRoles',
  'modelConfigFields',
  'modelConfigEnums',
  'modelLoad',
  'modelFree',
  'modelAddLora',
  'trainerCreate',
  'trainerFree',
  'trainerNParams',
  'trainerGet',
  'trainerSet',
  'trainerSteps',
  'trainerSample',
  'trainerOptimize',
  'contextCreate',
  'contextFree',
  'decode',
  'kvTruncate',
  'nPast',
  'kvBytes',
  'kvInfo',
  'kvMinKeep',
  'kvShift',
  'kvCanShift',
  'contextLogits',
  'generate',
  'groupCreate',
  'groupFree',
  'groupStats',
  'draftCreate',
  'draftFree',
  'typeTraits',
  'quantizeRef',
  'toFloat',
  'loraMergeRows',
  'samplerCreate',
  'samplerFree',
  'samplerAccept',
  'samplerSample',
  'grammarCreate',
  'tokenTrieCreate',
  'matcherCreate',
  'matcherReset',
  'matcherIsComplete',
  'matcherFillMask',
  'matcherAcceptToken',
  'matcherAcceptBytes',
  'matcherFree',
] as const satisfies ReadonlyArray<keyof NativeAddon>

// The list is complete: a function declared above but missing from ADDON_FUNCTIONS fails to compile.
const addonFunctionsComplete: Exclude<keyof NativeAddon, (typeof ADDON_FUNCTIONS)[number]> extends never ? true : never = true
void addonFunctionsComplete

/** The functions of `names` that `module` lacks. */
export function missingFunctions(module: unknown, names: readonly string[]): string[] {
  return names.filter((name) => typeof module !== 'object' || module === null || typeof Reflect.get(module, name) !== 'function')
}

function isNativeAddon(module: unknown): module is NativeAddon {
  return missingFunctions(module, ADDON_FUNCTIONS).length === 0
}

const ADDON_RELATIVE_PATH = join('native', 'build', 'Release', 'runner_native.node')
const PACKAGE_NAME = 'runner-llm'
/**
 * How to build the addon, naming the folder to build it in: for a global install that is
 * <prefix>/lib/node_modules/runner-llm, not the folder the user stands in, so `--prefix` says where.
 */
function buildHint(root?: string): string {
  const command = root === undefined ? 'npm run build:native' : `npm run build:native --prefix ${quoteArg(root)}`
  return `Build it with \`${command}\` (npm ci and npm install -g build it too); that needs cmake (>= 3.19) and a C/C++ compiler (gcc or clang).`
}

/** A path as a shell argument: as is when it is plain, in single quotes otherwise. */
function quoteArg(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`
}

/** The package root when it can be found, for the build hint; undefined rather than a second error. */
function rootOrUndefined(): string | undefined {
  try {
    return findPackageRoot()
  } catch {
    return undefined
  }
}

const requireNative = createRequire(import.meta.url)

/**
 * The package root: the nearest directory above `start` holding the package.json named
 * "runner-llm" (the npm package; its command is `runner`). Works from the compiled file (dist/src/lib/engine/) and from the source file
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
    `Cannot find the runner package root (a package.json named "${PACKAGE_NAME}") above ${start}, so the native addon cannot be located. ${buildHint()}`,
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
 * Require a native module and check its ABI version and functions; the one way either addon is
 * loaded (this one, and ./test-addon.ts). `what` names it in errors.
 */
export function requireAddon<T>(path: string, names: readonly string[], guard: (m: unknown) => m is T, what: string): T {
  let loaded: unknown
  try {
    loaded = requireNative(path)
  } catch (error) {
    // Node appends a multi-line "Require stack" to a missing-file error; the first part says it all.
    const reason = (error instanceof Error ? error.message : String(error)).split('\nRequire stack:')[0]
    throw new RunnerError(
      'ADDON_NOT_BUILT',
      `The ${what} could not be loaded from ${path}: ${reason}. ${buildHint(rootOrUndefined())}`,
      ExitCode.backendUnavailable,
      {cause: error},
    )
  }

  const abiVersion = typeof loaded === 'object' && loaded !== null ? Reflect.get(loaded, 'abiVersion') : undefined
  const abi: unknown = typeof abiVersion === 'function' ? Reflect.apply(abiVersion, loaded, []) : undefined
  const missing = missingFunctions(loaded, names)
  if (abi !== ADDON_ABI_VERSION || missing.length > 0 || !guard(loaded)) {
    const found = missing.length > 0 ? `lacks ${missing.join(', ')}` : `has ABI version ${String(abi)}`
    throw new RunnerError(
      'ADDON_STALE',
      `The ${what} at ${path} ${found}, but this runner expects ABI version ${ADDON_ABI_VERSION}: it was built from other sources. ${buildHint(rootOrUndefined()).replace('Build it', 'Rebuild it')}`,
      ExitCode.backendUnavailable,
    )
  }
  return loaded
}

/**
 * Load and check the addon at `path`. Internal: loadAddon() is the public way in; tests use
 * this to exercise the failure paths.
 */
export function loadAddonFrom(path: string): NativeAddon {
  return requireAddon(path, ADDON_FUNCTIONS, isNativeAddon, 'native engine addon')
}

let cached: NativeAddon | undefined

/** The addon, loaded once per process. Throws RunnerError ADDON_NOT_BUILT / ADDON_STALE. */
export function loadAddon(): NativeAddon {
  cpuCap() // a mistyped RUNNER_CPU_MAX or RUNNER_AMX is refused here, before the engine could read it
  amxMode()
  cached ??= loadAddonFrom(addonPath())
  return cached
}

/** CPU features usable by this process, as the engine's run-time dispatch sees them. */
export function cpuFeatures(): CpuFeatures {
  return loadAddon().cpuFeatures()
}

/** Whether prompt matmuls use AMX tiles in this process, and how many tiles they have computed with them. */
export function amxStatus(): AmxStatus {
  return loadAddon().amxStatus()
}
