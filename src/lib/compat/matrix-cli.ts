/**
 * `runner compat-matrix` as a library call: load the roster (and the baseline, before anything
 * runs), run the matrix with listr2 progress on stderr, write the report and the ledger, and decide
 * the exit code (docs/compat-matrix.md, "Exit codes"). The command parses flags and prints.
 */
import {Listr, ListrLogger, ProcessOutput} from 'listr2'

import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'
import {printable, writeFileAtomic} from '../util/index.js'
import {compareToBaseline, loadBaseline, type Regression} from './baseline.js'
import {ledger, type Report, reportSchemaErrors} from './report.js'
import {loadRoster} from './roster.js'
import {plan, runMatrix} from './run-matrix.js'

export interface MatrixCliOptions {
  readonly roster: string
  readonly only?: readonly string[]
  readonly checks?: readonly string[]
  readonly jobs: number
  readonly out?: string
  readonly markdown?: string
  readonly baseline?: string
  /** No task list (--json, or stderr is not a terminal and the caller wants quiet). */
  readonly quiet: boolean
  readonly signal: AbortSignal
}

export interface MatrixCliResult {
  readonly report: Report
  readonly regressions: readonly Regression[]
  readonly exitCode: ExitCodeValue
  /** Why the exit code is not 0 (one line), or undefined. */
  readonly verdict?: string
}

export async function compatMatrix(o: MatrixCliOptions): Promise<MatrixCliResult> {
  const roster = loadRoster(o.roster)
  const baseline = o.baseline === undefined ? undefined : loadBaseline(o.baseline)
  let work: ReturnType<typeof plan>
  try {
    work = plan(roster, o)
  } catch (error) {
    throw new RunnerError('COMPAT_BAD_SELECTION', (error as Error).message, ExitCode.usage)
  }
  const total = work.reduce((n, w) => n + w.checks.length, 0)
  let report: Report | undefined
  let done = 0
  const logger = () => new ListrLogger({processOutput: new ProcessOutput(process.stderr, process.stderr)})
  const tasks = new Listr(
    [
      {
        title: `compat-matrix: ${total} checks over ${work.length} rows of ${o.roster}`,
        task: async (_ctx, task) => {
          report = await runMatrix(roster, {
            ...o,
            onStart: (row, check) => (task.output = `${done}/${total} ${row}: ${check}`),
            onResult: (r) => {
              done++
              task.output = `${done}/${total} ${r.row}: ${r.check} ${r.outcome}${r.expectedFailure !== undefined ? ' (expected)' : ''} (${r.ms} ms)`
            },
          })
          task.title = `compat-matrix: ${report.summary.pass} pass, ${report.summary.fail} fail, ${report.summary.expectedFailures} expected, ${report.summary.notExecuted} not executed`
        },
        rendererOptions: {outputBar: 1},
      },
    ],
    {
      renderer: o.quiet ? 'silent' : 'default',
      fallbackRenderer: o.quiet ? 'silent' : 'simple',
      rendererOptions: {logger: logger()},
      fallbackRendererOptions: {logger: logger()},
      exitOnError: true,
      registerSignalListeners: false, // Ctrl+C is the command's: a partial report, exit 130
    },
  )
  await tasks.run()
  const r = report!
  const invalid = reportSchemaErrors(r)
  if (invalid.length > 0) throw new RunnerError('COMPAT_REPORT_INVALID', `the report does not match its schema: ${invalid.join('; ')}`)
  if (o.out) await writeFileAtomic(o.out, `${JSON.stringify(r, null, 2)}\n`)
  if (o.markdown) await writeFileAtomic(o.markdown, ledger(r))
  const regressions = baseline && !r.incomplete ? compareToBaseline(r, baseline) : []
  return {report: r, regressions, ...verdict(r, regressions)}
}

function verdict(r: Report, regressions: readonly Regression[]): {exitCode: ExitCodeValue; verdict?: string} {
  const s = r.summary
  if (r.incomplete)
    return {exitCode: ExitCode.interrupted, verdict: 'interrupted: the report holds the checks that finished and is marked incomplete'}
  if (s.pass + s.fail + s.expectedFailures === 0)
    return {
      exitCode: ExitCode.failure,
      verdict: `nothing executed (${s.notExecuted} checks not executed): a run that proves nothing is refused`,
    }
  if (regressions.length > 0) return {exitCode: ExitCode.failure, verdict: `${regressions.length} regression(s) against the baseline`}
  if (s.fail > 0) return {exitCode: ExitCode.failure, verdict: `${s.fail} check(s) failed`}
  return {exitCode: ExitCode.ok}
}

/** The regressions, one line each, for stderr. */
export function describeRegressions(regressions: readonly Regression[]): string {
  return regressions.map((x) => `regression: ${printable(x.row)} ${x.check}: ${printable(x.what)}`).join('\n')
}
