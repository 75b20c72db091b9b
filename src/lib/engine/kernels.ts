/**
 * The engine's weight-type table and row conversion (runner.h, "weight types").
 *
 * `typeTraits()` is the native side of a fact `src/lib/gguf/types.ts` also states (block size,
 * bytes per block); test/native/quant.test.ts checks that the two agree. `quantizeRef` writes
 * weights as llama.cpp does (the quantizer and scripts/make-test-model.ts use it), `toFloat`
 * dequantizes. They are synchronous; keep each call to a chunk of rows. The kernels' test hooks
 * (one variant of one kernel on given bytes) are in ./test-addon.ts.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {type GgmlTypeInfo, ggmlTypeById, ggmlTypeByName} from '../gguf/index.js'
import {preview} from '../util/index.js'
import {loadAddon, type NativeTypeTraits} from './addon.js'
import {engineError} from './errors.js'

export {KERNEL_VARIANTS, type KernelTile, type KernelVariant} from './addon.js'

/** One entry of the engine's type table. */
export type KernelTypeTraits = NativeTypeTraits

/** A type as a ggml id, a name ("q4_0", "Q4_0"), a GgmlTypeInfo or a KernelTypeTraits. */
export type KernelTypeRef = number | string | GgmlTypeInfo | KernelTypeTraits

/** Resolve a type reference to its ggml id, refusing names and ids ggml does not define. */
export function kernelTypeId(type: KernelTypeRef): number {
  if (typeof type === 'object') return 'id' in type ? type.id : type.type
  const info = typeof type === 'number' ? ggmlTypeById(type) : ggmlTypeByName(type)
  if (!info || info.removed) {
    throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${preview(type)} is not a ggml type`, ExitCode.unsupported)
  }
  return info.id
}

let table: readonly KernelTypeTraits[] | undefined

/** The engine's type table, in type-id order. */
export function typeTraits(): readonly KernelTypeTraits[] {
  table ??= loadAddon().typeTraits()
  return table
}

/** The engine's entry for a type, or undefined when the engine does not implement it. */
export function kernelTraits(type: KernelTypeRef): KernelTypeTraits | undefined {
  const id = kernelTypeId(type)
  return typeTraits().find((t) => t.type === id)
}

/** The engine's entry for a type, or KERNEL_UNSUPPORTED_TYPE naming it. */
export function traitsOrThrow(type: KernelTypeRef): KernelTypeTraits {
  const t = kernelTraits(type)
  if (!t) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `the engine does not implement type ${preview(type)}`, ExitCode.unsupported)
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
  const id = kernelTypeId(type)
  try {
    return loadAddon().quantizeRef(id, x)
  } catch (error) {
    throw engineError(error)
  }
}

/** Dequantize n values. */
export function toFloat(type: KernelTypeRef, bytes: Uint8Array, n: number): Float32Array {
  const id = kernelTypeId(type)
  try {
    return loadAddon().toFloat(id, bytes, n)
  } catch (error) {
    throw engineError(error)
  }
}

/**
 * Merge a LoRA pair into rows of its weight, in place: w (rows x nIn, F32) += s * b a, with b the
 * same rows of lora_b (rows x rank) and a all of lora_a (rank x nIn); s = scale * alpha / rank (alpha
 * 0: scale), as the forward pass applies it. The sum is taken in double and rounded once per value.
 */
export function loraMergeRows(
  w: Float32Array,
  nIn: number,
  a: Float32Array,
  b: Float32Array,
  rank: number,
  alpha: number,
  scale: number,
): void {
  try {
    loadAddon().loraMergeRows(w, nIn, a, b, rank, alpha, scale)
  } catch (error) {
    throw engineError(error)
  }
}
