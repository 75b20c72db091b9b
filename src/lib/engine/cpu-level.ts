import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'
import type {CpuFeatures} from './addon.js'

/** Kernel levels, lowest first; RUNNER_CPU_MAX caps the engine at one (native/src/core/cpu_cap.h). */
export const CPU_LEVELS = ['scalar', 'avx2', 'avx512'] as const
export type CpuLevel = (typeof CPU_LEVELS)[number]

export const CPU_CAP_ENV = 'RUNNER_CPU_MAX'

/** The cap the environment asks for; any value but the documented ones is refused by name. */
export function cpuCap(env: NodeJS.ProcessEnv = process.env): CpuLevel | undefined {
  const v = env[CPU_CAP_ENV]
  if (v === undefined || v === '') return undefined
  if (!(CPU_LEVELS as readonly string[]).includes(v)) {
    throw new RunnerError('BAD_ENV', `${CPU_CAP_ENV}=${quoted(v)} must be one of ${CPU_LEVELS.join(', ')}`, ExitCode.usage)
  }
  return v as CpuLevel
}

/** The kernel level the engine runs at: the best the CPU offers, capped by RUNNER_CPU_MAX. */
export function effectiveCpuLevel(features: CpuFeatures, env: NodeJS.ProcessEnv = process.env): CpuLevel {
  // The same feature sets the kernels' dispatch requires (native/src/quant/type_table.c NEEDS_*).
  const best: CpuLevel =
    features.avx2 && features.avx512f && features.avx512bw && features.avx512vl && features.fma && features.f16c
      ? 'avx512'
      : features.avx2 && features.fma && features.f16c
        ? 'avx2'
        : 'scalar'
  const cap = cpuCap(env)
  if (cap === undefined) return best
  return CPU_LEVELS[Math.min(CPU_LEVELS.indexOf(best), CPU_LEVELS.indexOf(cap))]!
}

/**
 * Whether prompt matmuls use AMX-INT8 tiles (runner.h runner_amx_state, native/src/quant/amx.c): the
 * engine decides once per process, and only a self-check that gives bitwise the VNNI kernels'
 * results turns them on.
 */
export const AMX_STATES = ['absent', 'off', 'not-built', 'permission-denied', 'selfcheck-failed', 'active', 'emulated'] as const
export type AmxState = (typeof AMX_STATES)[number]

/** amxStatus() of the addon: the state and the 16 x 16 tiles computed with AMX so far in this process. */
export interface AmxStatus {
  readonly state: AmxState
  readonly tiles: number
}

export const AMX_ENV = 'RUNNER_AMX'
/** RUNNER_AMX: auto (unset: AMX where it passes the self-check), off, or emulate (tests only: slow). */
export const AMX_MODES = ['auto', 'off', 'emulate'] as const
export type AmxMode = (typeof AMX_MODES)[number]

/** The AMX mode the environment asks for; any value but the documented ones is refused by name. */
export function amxMode(env: NodeJS.ProcessEnv = process.env): AmxMode {
  const v = env[AMX_ENV]
  if (v === undefined || v === '') return 'auto'
  if (!(AMX_MODES as readonly string[]).includes(v)) {
    throw new RunnerError('BAD_ENV', `${AMX_ENV}=${quoted(v)} must be one of ${AMX_MODES.join(', ')}`, ExitCode.usage)
  }
  return v as AmxMode
}

/** How each AMX state reads in stats and bench headers. */
const AMX_DESCRIPTIONS: Readonly<Record<AmxState, string>> = {
  absent: 'absent',
  off: 'present, off (RUNNER_AMX=off)',
  'not-built': 'present, not used (no AMX kernels in this build)',
  'permission-denied': 'present, not used (the OS refused the tile state)',
  'selfcheck-failed': 'present, not used (self-check failed)',
  active: 'active (Q8_0, Q4_0 prompt matmuls)',
  emulated: 'emulated (RUNNER_AMX=emulate, tests only)',
}

/** Which kernels the engine runs on this CPU (native/src/quant/type_table.c, ops/attn_kernels.c). */
export interface KernelSet {
  readonly level: CpuLevel
  /**
   * Integer block dots of the quantized types: VPDPBUSD (AVX-512 VNNI), else the AVX2 kernels
   * (VPMADDUBSW: the AVX-512 block kernels need VNNI, type_table.c NEEDS_AVX512_VNNI), else scalar.
   */
  readonly dots: 'avx512-vnni' | 'avx2' | 'scalar'
  /** The tiled attention's variant (ops/attn_tile_*.c). */
  readonly attention: CpuLevel
  /** The engine's AMX state (amxStatus().state): 'active' means Q8_0 and Q4_0 prompt matmuls run on tiles. */
  readonly amxState: AmxState
  /** The same, as a phrase: "active (Q8_0, Q4_0 prompt matmuls)", "absent", ... */
  readonly amx: string
}

export function kernelSet(features: CpuFeatures, amx: AmxState, env: NodeJS.ProcessEnv = process.env): KernelSet {
  const level = effectiveCpuLevel(features, env)
  return {
    level,
    dots: level === 'avx512' ? (features.avx512_vnni ? 'avx512-vnni' : 'avx2') : level,
    attention: level,
    amxState: amx,
    amx: AMX_DESCRIPTIONS[amx],
  }
}

/** One line for stats and bench headers: "avx512 (dots avx512-vnni, attention avx512, AMX absent)". */
export function describeKernels(k: KernelSet): string {
  return `${k.level} (dots ${k.dots}, attention ${k.attention}, AMX ${k.amx})`
}
