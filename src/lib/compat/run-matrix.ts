/**
 * The matrix: every selected row x check, rows `jobs` at a time, a row's checks in the registry's
 * order (load first: when it fails, the row's other checks do not run and say so). Each check runs in
 * a scratch folder of its own; a check that throws is a failure with the error as its evidence. An
 * abort (Ctrl+C) stops scheduling, lets the running checks see the signal, and returns what finished,
 * marked incomplete.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {availableParallelism, tmpdir} from 'node:os'
import {join} from 'node:path'
import {existsSync} from 'node:fs'

import {printable} from '../util/index.js'
import {CHECK_CLASSES} from './checks/index.js'
import {buildInfo, type CheckRecord, hostInfo, type Report, REPORT_FORMAT, REPORT_VERSION, summarize} from './report.js'
import type {Roster} from './roster.js'
import {fileSha256} from './sha-cache.js'
import type {CheckEnv, CheckOutput, RosterRow} from './types.js'

export interface MatrixOptions {
  readonly only?: readonly string[]
  readonly checks?: readonly string[]
  readonly jobs?: number
  readonly signal?: AbortSignal
  /** Called as each check starts and ends (the CLI's progress). */
  readonly onStart?: (row: string, check: string) => void
  readonly onResult?: (r: CheckRecord) => void
}

/** The (row, check) pairs a run covers, in order; refuses a name in --only / --checks the roster does not have. */
export function plan(roster: Roster, o: MatrixOptions): Array<{row: RosterRow; checks: string[]}> {
  const unknownRows = (o.only ?? []).filter((id) => !roster.rows.some((r) => r.id === id))
  if (unknownRows.length > 0)
    throw new TypeError(`--only names rows the roster does not have: ${unknownRows.map((x) => printable(x)).join(', ')}`)
  const unknownChecks = (o.checks ?? []).filter((c) => !CHECK_CLASSES.some((k) => k.name === c))
  if (unknownChecks.length > 0)
    throw new TypeError(
      `--checks names no check class: ${unknownChecks.map((x) => printable(x)).join(', ')} (known: ${CHECK_CLASSES.map((c) => c.name).join(', ')})`,
    )
  return roster.rows
    .filter((r) => !o.only || o.only.includes(r.id))
    .map((row) => ({row, checks: CHECK_CLASSES.map((c) => c.name).filter((c) => c in row.checks && (!o.checks || o.checks.includes(c)))}))
    .filter((p) => p.checks.length > 0)
}

function notExecuted(evidence: string): CheckOutput {
  return {outcome: 'not_executed', evidence}
}

/**
 * Why none of a row's checks but `load` may run: the file is not there, or is not the one the roster
 * pins (checked here once per row, whichever checks were selected, so --checks cannot skip the pin).
 */
async function rowBlocker(row: RosterRow): Promise<string | undefined> {
  if (!existsSync(row.path))
    return `the model file ${row.rosterPath} is not there${row.url ? ` (the roster says it comes from ${row.url}; compat-matrix does not download)` : ''}`
  try {
    const sha = await fileSha256(row.path)
    return sha === row.sha256 ? undefined : `sha256 ${sha}, the roster pins ${row.sha256}`
  } catch (error) {
    return `the model file cannot be read: ${(error as Error).message}`
  }
}

async function runOne(
  row: RosterRow,
  name: string,
  env: CheckEnv,
  blocked: string | undefined,
  loadFailed: string | undefined,
): Promise<CheckOutput> {
  const cls = CHECK_CLASSES.find((c) => c.name === name)!
  const params = row.checks[name] ?? {}
  // A broken pin is load's failure; every other check of the row does not run (and says why).
  if (blocked !== undefined) return name === 'load' && existsSync(row.path) ? {outcome: 'fail', evidence: blocked} : notExecuted(blocked)
  if (loadFailed !== undefined && name !== 'load') return notExecuted(`the row's load check failed: ${loadFailed}`)
  const why = await cls.when(row, params, env)
  if (why !== undefined) return notExecuted(why)
  return cls.run(row, params, env)
}

/** JSON has no NaN or infinity: a figure that is not finite is left out, and the evidence says so. */
function finiteFigures(out: CheckOutput): CheckOutput {
  if (!out.figures) return out
  const bad = Object.entries(out.figures).filter(([, f]) => !Number.isFinite(f.value))
  if (bad.length === 0) return out
  const figures = Object.fromEntries(Object.entries(out.figures).filter(([, f]) => Number.isFinite(f.value)))
  return {...out, evidence: `${out.evidence} (figure ${bad.map(([k, f]) => `${k} = ${f.value}`).join(', ')} not finite: left out)`, figures}
}

/** One check in a scratch folder of its own; undefined when the interrupt cut it short (its outcome says nothing). */
async function runInDir(
  row: RosterRow,
  check: string,
  signal: AbortSignal,
  threads: number,
  blocked: string | undefined,
  loadFailed: string | undefined,
) {
  let dir: string | undefined
  let out: CheckOutput
  try {
    dir = await mkdtemp(join(tmpdir(), `runner-compat-${check}-`))
    out = await runOne(row, check, {tmpDir: dir, signal, threads}, blocked, loadFailed)
  } catch (error) {
    out = {outcome: 'fail', evidence: `the check threw: ${error instanceof Error ? error.message : String(error)}`}
  }
  const cutShort = signal.aborted && out.outcome !== 'pass'
  if (dir) await rm(dir, {recursive: true, force: true}).catch(() => {}) // a scratch folder left behind is not a result
  return cutShort ? undefined : finiteFigures(out)
}

function recordOf(row: RosterRow, check: string, out: CheckOutput, ms: number): CheckRecord {
  const expected = out.outcome === 'fail' ? row.expectedFailures[check] : undefined
  const stale = out.outcome === 'pass' ? row.expectedFailures[check] : undefined
  return {
    row: row.id,
    check,
    outcome: out.outcome,
    evidence:
      stale === undefined ? out.evidence : `${out.evidence} [listed as an expected failure (${stale}), but it passes: remove the entry]`,
    ...(expected !== undefined ? {expectedFailure: expected} : {}),
    ms: Math.round(ms),
    ...(out.figures ? {figures: out.figures} : {}),
  }
}

export async function runMatrix(roster: Roster, o: MatrixOptions = {}): Promise<Report> {
  const started = new Date()
  const work = plan(roster, o)
  const jobs = Math.max(1, Math.min(o.jobs ?? 1, work.length || 1))
  const threads = Math.max(1, Math.floor(availableParallelism() / jobs))
  const signal = o.signal ?? new AbortController().signal
  const results: CheckRecord[] = []
  let next = 0
  const worker = async () => {
    while (!signal.aborted && next < work.length) {
      const {row, checks} = work[next++]!
      const blocked = await rowBlocker(row)
      let loadFailed: string | undefined
      for (const check of checks) {
        if (signal.aborted) return
        o.onStart?.(row.id, check)
        const t0 = performance.now()
        const out = await runInDir(row, check, signal, threads, blocked, loadFailed)
        if (!out) return
        if (check === 'load' && out.outcome === 'fail') loadFailed = out.evidence
        const record = recordOf(row, check, out, performance.now() - t0)
        results.push(record)
        o.onResult?.(record)
      }
    }
  }
  await Promise.all(Array.from({length: jobs}, worker))
  // Results in plan order, whatever order the jobs finished in.
  const order = new Map(work.flatMap((w, i) => w.checks.map((c, j) => [`${w.row.id}\u0000${c}`, i * 1000 + j] as const)))
  results.sort((a, b) => order.get(`${a.row}\u0000${a.check}`)! - order.get(`${b.row}\u0000${b.check}`)!)
  return {
    format: REPORT_FORMAT,
    version: REPORT_VERSION,
    incomplete: signal.aborted,
    started: started.toISOString(),
    finished: new Date().toISOString(),
    build: buildInfo(),
    host: hostInfo(),
    roster: {path: roster.path, sha256: roster.sha256, rows: roster.rows.length},
    selection: {rows: o.only ? [...o.only] : null, checks: o.checks ? [...o.checks] : null},
    run: {jobs, threads},
    results,
    summary: summarize(results),
  }
}
