/**
 * The compat-matrix's vocabulary: a roster row (one pinned model and the checks that apply to it), a
 * check class (a name, what it needs, how it runs) and a check's result. Each check class is a module
 * of ./checks/ listed in ./checks/index.ts; the orchestrator (./run-matrix.ts) knows nothing of any
 * one of them.
 */

export type Outcome = 'pass' | 'fail' | 'not_executed'

/** Per-check parameters from the roster (each class documents its own keys and defaults). */
export type CheckParams = Readonly<Record<string, unknown>>

export interface RosterRow {
  readonly id: string
  /** Absolute path of the model file (the roster's path resolved against the roster's folder). */
  readonly path: string
  /** The path as the roster wrote it (reports show this, so they do not depend on where the roster sits). */
  readonly rosterPath: string
  readonly sha256: string
  readonly url?: string
  /** Expected general.architecture and weight type (inspect's summary: e.g. "Q4_0", "F32", "mixed"). */
  readonly architecture: string
  readonly type: string
  /** The check classes that apply, with their parameters ({} when none). */
  readonly checks: Readonly<Record<string, CheckParams>>
  /** Known failures: check name -> reason. Reported, but they do not fail the run. */
  readonly expectedFailures: Readonly<Record<string, string>>
  /** llama.cpp's reference outputs for this model (../shared/reference/<name>.json), absolute, when the row has them. */
  readonly reference?: string
}

/** What a check returns: the outcome and the evidence (first differing token, the figure and its bound, why it did not run). */
export interface CheckOutput {
  readonly outcome: Outcome
  readonly evidence: string
  /** Named figures (tokens/s, max |Δ logprob|...), compared against a baseline within their tolerance. */
  readonly figures?: Readonly<Record<string, Figure>>
}

export interface Figure {
  readonly value: number
  /** 'higher' (speed) or 'lower' (an error) is better; the baseline gate fails a move the wrong way beyond the tolerance. */
  readonly better: 'higher' | 'lower'
  /** Allowed relative move against the baseline (0.2: 20 %). */
  readonly tolerance: number
  readonly unit?: string
  /** The figure depends on the machine (a speed): compared only against a baseline from the same CPU model and core count. */
  readonly machine?: boolean
}

/** What every check may use: a scratch folder of its own and the run's abort signal. */
export interface CheckEnv {
  readonly tmpDir: string
  readonly signal: AbortSignal
  /** Threads a check may use (the matrix runs --jobs rows at once). */
  readonly threads: number
}

/** A parameter a check takes in the roster (the roster's schema refuses any other key by name). */
export interface ParamSpec {
  readonly type: 'number' | 'integer' | 'string' | 'boolean'
  readonly description: string
  /** The smallest value the roster may give (the schema refuses less, naming the parameter). */
  readonly minimum?: number
}

export interface CheckClass {
  readonly name: string
  /** One line for docs and --help: what the check proves and against what. */
  readonly summary: string
  /** Its roster parameters (defaults in the description). */
  readonly params: Readonly<Record<string, ParamSpec>>
  /** Why it cannot run for this row on this machine (a missing dependency, no reference, no GPU...), or undefined. */
  when(row: RosterRow, params: CheckParams, env: CheckEnv): Promise<string | undefined>
  run(row: RosterRow, params: CheckParams, env: CheckEnv): Promise<CheckOutput>
}

export const pass = (evidence: string, figures?: CheckOutput['figures']): CheckOutput => ({
  outcome: 'pass',
  evidence,
  ...(figures ? {figures} : {}),
})
export const fail = (evidence: string, figures?: CheckOutput['figures']): CheckOutput => ({
  outcome: 'fail',
  evidence,
  ...(figures ? {figures} : {}),
})

/** A number parameter of a check, with its default; refuses a wrong type by name. */
export function numberParam(params: CheckParams, key: string, fallback: number): number {
  const v = params[key]
  if (v === undefined) return fallback
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`parameter ${key} must be a number, got ${JSON.stringify(v)}`)
  return v
}

export function stringParam(params: CheckParams, key: string, fallback: string): string {
  const v = params[key]
  if (v === undefined) return fallback
  if (typeof v !== 'string') throw new TypeError(`parameter ${key} must be a string, got ${JSON.stringify(v)}`)
  return v
}
