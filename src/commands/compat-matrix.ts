import {Flags} from '@oclif/core'

import {RunnerCommand, withInterrupt} from '../lib/cli/index.js'
import {CHECK_CLASSES, compatMatrix, describeRegressions, ledger, REPORT_SCHEMA, rosterSchema} from '../lib/compat/index.js'
import {printableJson} from '../lib/util/index.js'

const list = (s: string | undefined) =>
  s === undefined
    ? undefined
    : s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)

export default class CompatMatrix extends RunnerCommand {
  static override summary = 'The release gate: run check classes over a roster of models and compare with a baseline report.'
  static override description =
    'Reads a roster (JSON or YAML: each row pins a model by path and sha256 and names the checks that apply), runs every ' +
    'row x check on this build and machine, and reports pass / fail (with evidence) / not executed (with the reason). ' +
    `Check classes: ${CHECK_CLASSES.map((c) => c.name).join(', ')}. The report (JSON, --out) and the ledger (markdown, ` +
    '--markdown) name the build, the host and the roster. Exit 0 when every executed check passed (or failed as the roster ' +
    'expects) and, with --baseline, nothing regressed; 1 when a check failed, a baseline check regressed or nothing ' +
    'executed; 2 for a bad roster, selection or baseline; 130 on Ctrl+C (the report so far is written, marked incomplete).'

  static override examples = [
    {
      description: 'The shipped roster, with a ledger',
      command: '<%= config.bin %> compat-matrix --roster compat/roster.yaml --markdown ledger.md',
    },
    {
      description: 'The release gate: fail on any regression from the last release',
      command: '<%= config.bin %> compat-matrix --roster compat/roster.yaml --baseline compat/baseline.json --out report.json',
    },
    {
      description: 'Two rows, two checks, two rows at a time',
      command: '<%= config.bin %> compat-matrix --roster r.yaml --only stories260K,llama --checks load,determinism --jobs 2',
    },
    {
      description: "The roster's and the report's JSON Schemas",
      command: '<%= config.bin %> compat-matrix --roster-schema && <%= config.bin %> compat-matrix --report-schema',
    },
  ]

  static override flags = {
    roster: Flags.string({
      description: 'the roster file (JSON or YAML)',
      helpValue: 'FILE',
      exactlyOne: ['roster', 'roster-schema', 'report-schema'],
    }),
    only: Flags.string({description: 'only these rows (comma-separated ids; default: every row)', helpValue: 'ROW,...'}),
    checks: Flags.string({description: 'only these check classes (comma-separated; default: every class)', helpValue: 'CLASS,...'}),
    jobs: Flags.integer({description: 'rows run at once (threads are shared out between them)', default: 1, min: 1, max: 64}),
    out: Flags.string({description: 'write the JSON report here', helpValue: 'FILE'}),
    markdown: Flags.string({description: 'write the markdown ledger here', helpValue: 'FILE'}),
    baseline: Flags.string({
      description: 'a report to gate against: a pass that now fails or does not run, or a figure beyond its tolerance, exits 1',
      helpValue: 'FILE',
    }),
    json: Flags.boolean({description: 'print the report on stdout (instead of the ledger)'}),
    'roster-schema': Flags.boolean({description: "print the roster's JSON Schema and exit"}),
    'report-schema': Flags.boolean({description: "print the report's JSON Schema and exit"}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(CompatMatrix)
    if (flags['roster-schema']) return this.log(JSON.stringify(rosterSchema(), null, 2))
    if (flags['report-schema']) return this.log(JSON.stringify(REPORT_SCHEMA, null, 2))
    const r = await withInterrupt((signal) =>
      compatMatrix({
        roster: flags.roster!,
        only: list(flags.only),
        checks: list(flags.checks),
        jobs: flags.jobs,
        out: flags.out,
        markdown: flags.markdown,
        baseline: flags.baseline,
        quiet: flags.json,
        signal,
      }),
    )
    this.log(flags.json ? printableJson(r.report, undefined, 2) : ledger(r.report))
    if (r.regressions.length > 0) process.stderr.write(`${describeRegressions(r.regressions)}\n`)
    if (r.verdict) process.stderr.write(`compat-matrix: ${r.verdict}\n`)
    if (r.exitCode !== 0) this.exit(r.exitCode)
  }
}
