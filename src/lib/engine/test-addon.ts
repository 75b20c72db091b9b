/**
 * The test addon (native/build/Release/runner_native_test.node, from native/addon-test/): hooks that
 * run one named variant of one kernel on given bytes, the vec_dot microbenchmark, the sampler
 * generator's parts, and a worker that throws. Tests hold every SIMD variant to its scalar reference
 * with them; scripts/bench-kernels.ts times kernels with benchVecDot. The product never loads it.
 * Loaded with the same ABI and function checks as the product addon (./addon.ts requireAddon).
 */
import {join} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {findPackageRoot, type KernelVariant, missingFunctions, requireAddon} from './addon.js'
import {engineError} from './errors.js'
import {type KernelTypeRef, kernelTypeId, traitsOrThrow} from './kernels.js'

/** A type for the hooks: a reference, or 'F16xF16' (the F16 KV cache's dot, not a weight type). */
export type HookTypeRef = KernelTypeRef | 'F16xF16'

/** Everything runner_native_test.node exports (native/addon-test/*.cc). */
export interface TestAddon {
  abiVersion(): number
  kernelVecDot(type: number | string, variant: string, n: number, x: Uint8Array, y: Uint8Array): number
  kernelVecDot2(type: number | string, variant: string, n: number, x: Uint8Array, y: Uint8Array, bx?: number): [number, number]
  kernelVecDotTile(type: number | string, variant: string, n: number, x: Uint8Array, y: Uint8Array, cols?: number): number[]
  kernelVecDotMv(type: number | string, variant: string, n: number, x: Uint8Array, y: Uint8Array): number[]
  kernelVecDotMvn(type: number | string, variant: string, n: number, x: Uint8Array, y: Uint8Array): number[]
  kernelBenchVecDot(
    type: number | string,
    variant: string,
    n: number,
    x: Uint8Array,
    y: Uint8Array,
    iters: number,
    rowsPerCall?: number,
  ): number
  kernelFromFloat(type: number | string, variant: string, x: Float32Array, dstOffset?: number): Uint8Array
  kernelRoundF16(variant: string, a: number, x: Float32Array): Float32Array
  kernelAmxIsas(): string[]
  kernelAmxTile(
    type: number | string,
    isa: string,
    n: number,
    x: Uint8Array,
    y: Uint8Array,
    by?: number,
  ): {values: number[]; faults: number}
  kernelAmxSelfCheck(isa: string): boolean
  samplerTestSplitMix64(seed: bigint, n: number): BigUint64Array
  samplerTestXoshiro256ss(state: readonly [bigint, bigint, bigint, bigint], n: number): BigUint64Array
  samplerTestGenerator(seed: bigint, n: number): BigUint64Array
  /** A worker whose Execute throws `what`, through the product's guard (native/addon/args.h GuardExecute). */
  testWorkerThrow(what: 'bad_alloc' | 'runtime_error' | 'unknown' | 'none'): Promise<void>
}

export const TEST_ADDON_FUNCTIONS = [
  'abiVersion',
  'kernelVecDot',
  'kernelVecDot2',
  'kernelVecDotTile',
  'kernelVecDotMv',
  'kernelVecDotMvn',
  'kernelBenchVecDot',
  'kernelFromFloat',
  'kernelRoundF16',
  'kernelAmxIsas',
  'kernelAmxTile',
  'kernelAmxSelfCheck',
  'samplerTestSplitMix64',
  'samplerTestXoshiro256ss',
  'samplerTestGenerator',
  'testWorkerThrow',
] as const satisfies ReadonlyArray<keyof TestAddon>

const testFunctionsComplete: Exclude<keyof TestAddon, (typeof TEST_ADDON_FUNCTIONS)[number]> extends never ? true : never = true
void testFunctionsComplete

function isTestAddon(module: unknown): module is TestAddon {
  return missingFunctions(module, TEST_ADDON_FUNCTIONS).length === 0
}

/** Where the build puts it (RUNNER_NATIVE_TEST_ADDON points at another build). */
export function testAddonPath(): string {
  return process.env.RUNNER_NATIVE_TEST_ADDON || join(findPackageRoot(), 'native', 'build', 'Release', 'runner_native_test.node')
}

let cached: TestAddon | undefined

/** The test addon, loaded once per process. Throws RunnerError ADDON_NOT_BUILT / ADDON_STALE. */
export function loadTestAddon(): TestAddon {
  cached ??= requireAddon(testAddonPath(), TEST_ADDON_FUNCTIONS, isTestAddon, 'native test addon')
  return cached
}

function hooks(): TestAddon {
  return loadTestAddon()
}

function call<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw engineError(error)
  }
}

/**
 * Activation quantizer of `variant` (default: the one the engine picks). `dstOffset` (0..63) places
 * the result that many bytes into its buffer, to exercise unaligned stores.
 */
export function fromFloat(type: KernelTypeRef, x: Float32Array, variant?: KernelVariant, dstOffset = 0): Uint8Array {
  const t = traitsOrThrow(type)
  const v = variant ?? t.pickedFromFloat
  if (!v) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${t.name} has no activation quantizer`, ExitCode.unsupported)
  return call(() => hooks().kernelFromFloat(t.type, v, x, dstOffset))
}

/** dot(x, y) over n values: x of `type`, y of its vecDotType, with `variant` (default: the picked one). */
export function vecDot(type: HookTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant?: KernelVariant): number {
  if (type === 'F16xF16') return call(() => hooks().kernelVecDot(type, variant ?? 'scalar', n, x, y))
  const t = traitsOrThrow(type)
  const v = variant ?? t.pickedVecDot
  if (!v) throw new RunnerError('KERNEL_UNSUPPORTED_TYPE', `${t.name} has no vec_dot`, ExitCode.unsupported)
  return call(() => hooks().kernelVecDot(t.type, v, n, x, y))
}

/**
 * Two weight rows against one activation row with vec_dot2: x holds row 0 at byte 0 and row 1 at
 * byte `bx` (default: the row size), and nothing after row 1. Each result is bitwise vecDot's.
 */
export function vecDot2(
  type: KernelTypeRef,
  n: number,
  x: Uint8Array,
  y: Uint8Array,
  variant: KernelVariant,
  bx?: number,
): [number, number] {
  return call(() => hooks().kernelVecDot2(kernelTypeId(type), variant, n, x, y, bx))
}

/**
 * The variant's register tile: `x` holds its `rows` weight rows back to back, `y` its `cols` activation
 * rows; result[rows * c + r] is row r against activation c (each bitwise vec_dot's).
 */
/** cols below the tile's width: its vec_dot_tile_few on that many activation rows. */
export function vecDotTile(type: KernelTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant: KernelVariant, cols?: number): number[] {
  return call(() => hooks().kernelVecDotTile(kernelTypeId(type), variant, n, x, y, cols))
}

/** The decode kernels on y packed by the variant's mv_pack: [vec_dot2_mv row 0, row 1, vec_dot_mv row 0]. */
export function vecDotMv(type: KernelTypeRef, n: number, x: Uint8Array, y: Uint8Array, variant: KernelVariant): number[] {
  return call(() => hooks().kernelVecDotMv(kernelTypeId(type), variant, n, x, y))
}

/** The float of the half nearest x[i] * a, through a variant of runner_round_f16. */
export function roundF16(variant: string, a: number, x: Float32Array): Float32Array {
  return call(() => hooks().kernelRoundF16(variant, a, x))
}

/**
 * Nanoseconds per row, timed natively over `iters` rows of `x` (one or more rows of n values) walked
 * in turn against the one row `y`; `rowsPerCall` 2 takes them in pairs through vec_dot2 where the
 * variant has it. For scripts/bench-kernels.ts.
 */
export function benchVecDot(
  type: KernelTypeRef,
  variant: KernelVariant,
  n: number,
  x: Uint8Array,
  y: Uint8Array,
  iters: number,
  rowsPerCall: 1 | 2 = 1,
): number {
  return call(() => hooks().kernelBenchVecDot(kernelTypeId(type), variant, n, x, y, iters, rowsPerCall))
}

/**
 * The AMX tile ISAs the driver can run on in this process (native/src/quant/amx.h): 'emulated' and
 * its deliberately wrong forms 'emulated-unsigned' and 'emulated-saturating' on AVX-512 CPUs, and
 * 'hardware' only where the CPU has AMX-INT8 and the OS granted the tile state.
 */
export function amxIsas(): string[] {
  return call(() => hooks().kernelAmxIsas())
}

/**
 * The AMX driver on `isa`: 16 weight rows of `type` (Q8_0 or Q4_0) back to back in x against 16 Q8_0
 * activation rows `by` bytes apart in y (default: back to back), as the prompt matmuls run it.
 * values[16 * c + r] is row r against token c; faults counts emulated instructions the hardware
 * would have faulted on.
 */
export function amxTile(
  type: KernelTypeRef,
  isa: string,
  n: number,
  x: Uint8Array,
  y: Uint8Array,
  by?: number,
): {values: number[]; faults: number} {
  return call(() => hooks().kernelAmxTile(kernelTypeId(type), isa, n, x, y, by))
}

/** The engine's once-per-process AMX self-check, run on `isa`. */
export function amxSelfCheck(isa: string): boolean {
  return call(() => hooks().kernelAmxSelfCheck(isa))
}
