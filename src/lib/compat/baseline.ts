/**
 * The release gate: a report against a baseline report. A regression is a check that passed in the
 * baseline and now fails, or does not run without having been left out on purpose (--only, --checks),
 * or is gone from the roster; or a figure that moved the wrong way beyond its tolerance. An
 * incomplete baseline, or a document that is not a report of this version, is refused.
 */
import {readFileSync} from 'node:fs'

import {ExitCode, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'
import {type CheckRecord, type Report, REPORT_FORMAT, REPORT_VERSION, reportSchemaErrors} from './report.js'

export interface Regression {
  readonly row: string
  readonly check: string
  readonly what: string
}

const refuse = (path: string, why: string) => new RunnerError('BASELINE_INVALID', `baseline ${printable(path)}: ${why}`, ExitCode.usage)

export function loadBaseline(path: string): Report {
  let doc: unknown
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw refuse(path, (error as Error).message)
  }
  const head = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {}
  if (head.format !== REPORT_FORMAT) throw refuse(path, `not a compat-matrix report (format ${JSON.stringify(head.format)})`)
  if (head.version === undefined) throw refuse(path, 'it records no version, so what it promised cannot be known')
  if (head.version !== REPORT_VERSION)
    throw refuse(path, `report version ${JSON.stringify(head.version)}; this runner reads version ${REPORT_VERSION}`)
  const errors = reportSchemaErrors(doc)
  if (errors.length > 0) throw refuse(path, errors.join('; '))
  const report = doc as Report
  if (report.incomplete) throw refuse(path, 'it is an interrupted run (incomplete); a baseline must be a whole run')
  if (report.selection.rows !== null || report.selection.checks !== null)
    throw refuse(
      path,
      'its selection is not the whole roster (it was made with --only or --checks); a baseline must cover every row and check',
    )
  return report
}

function selected(sel: Report['selection'], r: {row: string; check: string}): boolean {
  return (sel.rows === null || sel.rows.includes(r.row)) && (sel.checks === null || sel.checks.includes(r.check))
}

/**
 * A speed measured on another machine, or with other jobs or threads, says nothing about this build.
 * The CPU's model name alone does not tell machines apart (two EPYC generations both read "AMD EPYC"),
 * so the kernel level and the CPU features must agree too.
 */
function sameMachine(a: Report, b: Report): boolean {
  const host = a.host.cpu === b.host.cpu && a.host.cores === b.host.cores && a.host.platform === b.host.platform
  const cpu = a.build.kernels.level === b.build.kernels.level && a.build.cpuFeatures.join() === b.build.cpuFeatures.join()
  return host && cpu && a.run.jobs === b.run.jobs && a.run.threads === b.run.threads
}

function figureRegressions(base: CheckRecord, now: CheckRecord, machineMatches: boolean): string[] {
  const out: string[] = []
  for (const [name, b] of Object.entries(base.figures ?? {})) {
    if (b.machine && !machineMatches) continue
    const n = now.figures?.[name]
    if (!n) {
      out.push(`figure ${name} is no longer reported (baseline ${b.value})`)
      continue
    }
    // The tolerance is the one the roster gives now (a roster that tightens it is held to it at once).
    const tol = n.tolerance
    const worse = b.better === 'higher' ? n.value < b.value * (1 - tol) : b.value === 0 ? n.value > 0 : n.value > b.value * (1 + tol)
    if (worse)
      out.push(
        `${name} ${n.value}${b.unit ? ` ${b.unit}` : ''} against the baseline's ${b.value} (${b.better} is better, tolerance ${Math.round(tol * 100)} %)`,
      )
  }
  return out
}

/** Every regression of `now` against `base` (empty: the gate passes). */
export function compareToBaseline(now: Report, base: Report): Regression[] {
  const out: Regression[] = []
  const key = (r: {row: string; check: string}) => `${r.row}\u0000${r.check}`
  const current = new Map(now.results.map((r) => [key(r), r]))
  const machineMatches = sameMachine(now, base)
  for (const b of base.results) {
    if (b.outcome !== 'pass' || !selected(now.selection, b)) continue
    const n = current.get(key(b))
    if (!n) {
      out.push({row: b.row, check: b.check, what: 'passed in the baseline, not run now (gone from the roster)'})
      continue
    }
    // A failure the roster now lists as expected was acknowledged by whoever ships it: reported, not blocking.
    if (n.outcome === 'fail' && n.expectedFailure === undefined)
      out.push({row: b.row, check: b.check, what: `passed in the baseline, fails now: ${n.evidence}`})
    else if (n.outcome === 'not_executed')
      out.push({row: b.row, check: b.check, what: `passed in the baseline, not executed now: ${n.evidence}`})
    else for (const what of figureRegressions(b, n, machineMatches)) out.push({row: b.row, check: b.check, what})
  }
  return out
}
