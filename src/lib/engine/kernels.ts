/**
 * Typed access to the engine's weight-type table and its kernel test hooks
 * (native/addon/kernels_binding.cc over native/src/quant/quant.h).
 *
 * `typeTraits()` is the native side of a fact `src/lib/gguf/types.ts` also states (block size,
 * bytes per block); test/native/quant.test.ts checks that the two agree. The other functions run
 * one kernel on bytes given from JavaScript: tests use them to hold every SIMD variant to its
 * scalar reference, and scripts/make-test-model.ts quantizes weights with `quantizeRef`.
 * They are synchronous; keep each call to a chunk of rows.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {type GgmlTypeInfo, ggmlTypeById, ggmlTypeByName} from '../gguf/types.js'
import {loadAddon} from './addon.js'

/** Kernel variants, slowest first (native `runner_kernel_variant`). */
export const KERNEL_VARIANTS = ['scalar', 'avx2', 'avx512'] as const
export type KernelVariant = (typeof KERNEL_VARIANTS)[number]

/** A prompt-matmul register tile: `rows` weight rows by `cols` activation rows per call. */
export interface KernelTile {
  readonly variant: KernelVariant
  readonly rows: number
  readonly cols: number
}

/** One entry of the engine's type table. */
export interface KernelTypeTraits {
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

/** A type as a ggml id, a name ("q4_0", "Q4_0"), a GgmlTypeInfo or a KernelTypeTraits. */
export type KernelTypeRef = number | string | GgmlTypeInfo | KernelTypeTraits

interface KernelAddon {
  typeTraits(): KernelTypeTraits[]
  kernelVecDot(type: number, variant: KernelVariant, n: number, x: Uint8Array, y: Uint8Array): number
  kernelVecDot2(type: number, variant: KernelVariant, n: number, x: Uint8Array, y: Uint8Array, bx?: number): [number, number]
  kernelVecDotTile(type: number, variant: KernelVariant, n: number, x: Uint8Array, y: Uint8Array): number[]
  kernelBenchVecDot(type: number, variant: KernelVariant, n: number, x: Uint8Array, y: Uint8Array, iters: number, rowsPerCall?: number): number
  kernelFromFloat(type: number, variant: KernelVariant, x: Float32Array, dstOffset?: number): Uint8Array
  kernelQuantizeRef(type: number, x: Float32Array): Uint8Array
  kernelToFloat(type: number, bytes: Uint8Array, n: number): Float32Array
}

const HOOKS = ['typeTraits', 'kernelVecDot', 'kernelVecDot2', 'kernelVecDotTile', 'kernelBenchVecDot', 'kernelFromFloat', 'kernelQuantizeRef', 'kernelToFloat'] as const

let cached: KernelAddon | undefined

function kernels(): KernelAddon {
  if (cached) return cached
  const addon = loadAddon() as unknown as Partial<Record<(typeof HOOKS)[number], unknown>>
  const missing = HOOKS.filter((name) => typeof addon[name] !== 'function')
  if (missing.length > 0) {
    throw new RunnerError(
      'ADDON_STALE',
      `The native engine addon lacks ${missing.join(', ')}: it was built from older sources. Rebuild it with \`npm run build:native\`.`,
      ExitCode.backendUnavailable,
    )
  }
  cached = addon as unknown as KernelAddon
  return cached
}

/** Resolve a type reference to its ggml id, refusing names and ids ggml does not define. */
export function kernelTypeId(type: KernelTypeRef): number {
  if (typeof type === 'object') return 'id' in type ? type.id : type.type
  const info = typeof type === 'number' ? ggmlTypeById(type) : ggmlTypeByName(type)
  if (!info || info.removed) {
    throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${JSON.stringify(type)} is not a ggml type`, ExitCode.unsupported)
  }
  return info.id
}

/** The engine's type table, in type-id order. */
export function typeTraits(): readonly KernelTypeTraits[] {
  return kernels().typeTraits()
}

/** The engine's entry for a type, or undefined when the engine does not implement it. */
export function kernelTraits(type: KernelTypeRef): KernelTypeTraits | undefined {
  const id = kernelTypeId(type)
  return typeTraits().find((t) => t.type === id)
}

function traitsOrThrow(type: KernelTypeRef): KernelTypeTraits {
  const t = kernelTraits(type)
  if (!t) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `the engine does not implement type ${JSON.stringify(type)}`, ExitCode.unsupported)
  return t
}

/** Bytes `n` values of the type take (n must fill whole blocks). */
export function rowBytes(type: KernelTypeRef, n: number): number {
  const t = traitsOrThrow(type)
  if (!Number.isSafeInteger(n) || n < 0 || n % t.blockSize !== 0) {
    throw new RunnerError('KERNEL_BAD_ARGUMENT', `n = ${n} is not a non-negative multiple of ${t.name}'s block size ${t.blockSize}`)
  }
  return (n / t.blockSize) * t.typeSize
}

/** Weight quantizer: llama.cpp's quantize_row_*_ref bytes (F16/BF16: ggml's row conversion). */
export function quantizeRef(type: KernelTypeRef, x: Float32Array): Uint8Array {
  return kernels().kernelQuantizeRef(kernelTypeId(type), x)
}

/**
 * Activation quantizer of `variant` (default: the one the engine picks). `dstOffset` (0..63) places
 * the result that many bytes into its buffer, to exercise unaligned stores.
 */
export function fromFloat(type: KernelTypeRef, x: Float32Array, variant?: KernelVariant, dstOffset = 0): Uint8Array {
  const t = traitsOrThrow(type)
  const v = variant ?? t.pickedFromFloat
  if (!v) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${t.name} has no activation quantizer`, ExitCode.unsupported)
  return kernels().kernelFromFloat(t.type, v, x, dstOffset)
}

/** dot(x, y) over n values: x of `type`, y of its vecDotType, with `variant` (default: the picked one). */
export function vecDot(type: KernelTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant?: KernelVariant): number {
  const t = traitsOrThrow(type)
  const v = variant ?? t.pickedVecDot
  if (!v) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${t.name} has no vec_dot`, ExitCode.unsupported)
  return kernels().kernelVecDot(t.type, v, n, x, y)
}

/**
 * Two weight rows against one activation row with vec_dot2: x holds row 0 at byte 0 and row 1 at
 * byte `bx` (default: the row size), and nothing after row 1. Each result is bitwise vecDot's.
 */
export function vecDot2(type: KernelTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant: KernelVariant, bx?: number): [number, number] {
  return kernels().kernelVecDot2(kernelTypeId(type), variant, n, x, y, bx)
}

/**
 * The variant's register tile: `x` holds its `rows` weight rows back to back, `y` its `cols` activation
 * rows; result[rows * c + r] is row r against activation c (each bitwise vec_dot's).
 */
export function vecDotTile(type: KernelTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant: KernelVariant): number[] {
  return kernels().kernelVecDotTile(kernelTypeId(type), variant, n, x, y)
}

/** Dequantize n values. */
export function toFloat(type: KernelTypeRef, bytes: Uint8Array, n: number): Float32Array {
  return kernels().kernelToFloat(kernelTypeId(type), bytes, n)
}

/**
 * Nanoseconds per row, timed natively over `iters` rows of `x` (one or more rows of n values) walked
 * in turn against the one row `y`; `rowsPerCall` 2 takes them in pairs through vec_dot2 where the
 * variant has it. For scripts/bench-kernels.ts.
 */
export function benchVecDot(type: KernelTypeRef, variant: KernelVariant, n: number, x: Uint8Array, y: Uint8Array, iters: number, rowsPerCall: 1 | 2 = 1): number {
  return kernels().kernelBenchVecDot(kernelTypeId(type), variant, n, x, y, iters, rowsPerCall)
}
