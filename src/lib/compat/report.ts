/**
 * The compat-matrix report: one JSON document (REPORT_SCHEMA, validated before it is written) with the
 * build, the host, the roster's hash and every row x check result with its evidence and timing; and
 * the markdown ledger of the same for people.
 */
import {execFileSync} from 'node:child_process'
import {cpus, totalmem} from 'node:os'

import {Ajv} from 'ajv'

import {ADDON_ABI_VERSION, amxStatus, cpuFeatures, findPackageRoot, kernelSet, loadAddon} from '../engine/index.js'
import {printable} from '../util/index.js'
import type {Figure, Outcome} from './types.js'

export const REPORT_FORMAT = 'runner.compat-report'
export const REPORT_VERSION = 1

export interface CheckRecord {
  readonly row: string
  readonly check: string
  readonly outcome: Outcome
  readonly evidence: string
  /** The roster's reason when this failure is a known one (it does not fail the run). */
  readonly expectedFailure?: string
  readonly ms: number
  readonly figures?: Readonly<Record<string, Figure>>
}

export interface Build {
  readonly runner: string
  readonly gitCommit: string | null
  readonly abi: number
  readonly cpuFeatures: readonly string[]
  readonly kernels: Readonly<Record<string, string>>
}

export interface Host {
  readonly platform: string
  readonly cpu: string
  readonly cores: number
  readonly memoryBytes: number
  readonly node: string
}

export interface Summary {
  readonly pass: number
  readonly fail: number
  readonly notExecuted: number
  readonly expectedFailures: number
}

export interface Report {
  readonly format: typeof REPORT_FORMAT
  readonly version: typeof REPORT_VERSION
  /** Interrupted (Ctrl+C): the results so far; never a baseline. */
  readonly incomplete: boolean
  readonly started: string
  readonly finished: string
  readonly build: Build
  readonly host: Host
  readonly roster: {readonly path: string; readonly sha256: string; readonly rows: number}
  /** --only / --checks as given (null: all). */
  readonly selection: {readonly rows: readonly string[] | null; readonly checks: readonly string[] | null}
  /** Rows run at once and threads each check had: speeds are comparable only at the same values. */
  readonly run: {readonly jobs: number; readonly threads: number}
  readonly results: readonly CheckRecord[]
  readonly summary: Summary
}

const figure = {
  type: 'object',
  additionalProperties: false,
  required: ['value', 'better', 'tolerance'],
  properties: {
    value: {type: 'number'},
    better: {enum: ['higher', 'lower']},
    tolerance: {type: 'number', minimum: 0},
    unit: {type: 'string'},
    machine: {type: 'boolean'},
  },
}
const strings = {type: 'array', items: {type: 'string'}}
const obj = (properties: Record<string, unknown>, optional: string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  properties,
})

export const REPORT_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  $id: 'https://runner.local/schemas/compat-report-1.json',
  title: 'runner compat-matrix report',
  ...obj({
    format: {const: REPORT_FORMAT},
    version: {const: REPORT_VERSION},
    incomplete: {type: 'boolean'},
    started: {type: 'string'},
    finished: {type: 'string'},
    build: obj({
      runner: {type: 'string'},
      gitCommit: {anyOf: [{type: 'null'}, {type: 'string', pattern: '^[0-9a-f]{40}$'}]},
      abi: {type: 'integer'},
      cpuFeatures: strings,
      kernels: {type: 'object', additionalProperties: {type: 'string'}},
    }),
    host: obj({
      platform: {type: 'string'},
      cpu: {type: 'string'},
      cores: {type: 'integer'},
      memoryBytes: {type: 'integer'},
      node: {type: 'string'},
    }),
    roster: obj({path: {type: 'string'}, sha256: {type: 'string', pattern: '^[0-9a-f]{64}$'}, rows: {type: 'integer', minimum: 1}}),
    selection: obj({rows: {anyOf: [{type: 'null'}, strings]}, checks: {anyOf: [{type: 'null'}, strings]}}),
    run: obj({jobs: {type: 'integer', minimum: 1}, threads: {type: 'integer', minimum: 1}}),
    results: {
      type: 'array',
      items: obj(
        {
          row: {type: 'string'},
          check: {type: 'string'},
          outcome: {enum: ['pass', 'fail', 'not_executed']},
          evidence: {type: 'string'},
          expectedFailure: {type: 'string'},
          ms: {type: 'number', minimum: 0},
          figures: {type: 'object', additionalProperties: figure},
        },
        ['expectedFailure', 'figures'],
      ),
    },
    summary: obj({
      pass: {type: 'integer', minimum: 0},
      fail: {type: 'integer', minimum: 0},
      notExecuted: {type: 'integer', minimum: 0},
      expectedFailures: {type: 'integer', minimum: 0},
    }),
  }),
} as const

// strictNumbers: a NaN or an infinity (which JSON would write as null) is not a number here either.
const validate = new Ajv({allErrors: true, strict: false, strictNumbers: true}).compile<Report>(REPORT_SCHEMA)

/** The schema's complaints about a document ([] when it is a report). */
export function reportSchemaErrors(doc: unknown): string[] {
  if (validate(doc)) return []
  return (validate.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
}

function gitCommit(): string | null {
  try {
    const out = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: findPackageRoot(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
    return /^[0-9a-f]{40}$/.test(out) ? out : null
  } catch {
    return null // not a git checkout (an installed package): the version names the build
  }
}

export function buildInfo(): Build {
  const features = cpuFeatures()
  const kernels = kernelSet(features, amxStatus().state)
  return {
    runner: loadAddon().version(),
    gitCommit: gitCommit(),
    abi: ADDON_ABI_VERSION,
    cpuFeatures: Object.entries(features)
      .filter(([, on]) => on)
      .map(([name]) => name),
    kernels: Object.fromEntries(Object.entries(kernels).map(([k, v]) => [k, String(v)])),
  }
}

export function hostInfo(): Host {
  return {
    platform: `${process.platform}-${process.arch}`,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryBytes: totalmem(),
    node: process.version,
  }
}

export function summarize(results: readonly CheckRecord[]): Summary {
  const count = (o: Outcome, expected: boolean) =>
    results.filter((r) => r.outcome === o && (r.expectedFailure !== undefined) === expected).length
  return {
    pass: count('pass', false),
    fail: count('fail', false),
    notExecuted: results.filter((r) => r.outcome === 'not_executed').length,
    expectedFailures: count('fail', true),
  }
}

const MARK: Record<Outcome, string> = {pass: 'pass', fail: 'FAIL', not_executed: '-'}

/** A table cell: one line, printable (evidence quotes model files and their text), pipes escaped. */
function cell(text: string): string {
  return printable(text.replace(/\r?\n/g, ' '), {max: 2000}).replace(/\|/g, '\\|')
}

/** The ledger: one table of rows x checks, then every failure and every check that did not run, with why. */
export function ledger(r: Report): string {
  const checks = [...new Set(r.results.map((x) => x.check))]
  const rows = [...new Set(r.results.map((x) => x.row))]
  const at = (row: string, check: string) => r.results.find((x) => x.row === row && x.check === check)
  const lines = [
    `# compat-matrix ledger${r.incomplete ? ' (incomplete: interrupted)' : ''}`,
    '',
    `runner ${r.build.runner}${r.build.gitCommit ? ` (${r.build.gitCommit.slice(0, 12)})` : ''}, ABI ${r.build.abi}, kernels ${r.build.kernels.level ?? '?'} · ` +
      `${r.host.cpu}, ${r.host.cores} cores, ${r.host.platform}, node ${r.host.node} · ${r.run.jobs} job(s), ${r.run.threads} thread(s) per check · roster ${r.roster.path} (sha256 ${r.roster.sha256.slice(0, 12)}) · ${r.started}`,
    '',
    `**${r.summary.pass} pass, ${r.summary.fail} fail, ${r.summary.expectedFailures} expected failures, ${r.summary.notExecuted} not executed**`,
    '',
    `| row | ${checks.join(' | ')} |`,
    `|---|${checks.map(() => '---').join('|')}|`,
    ...rows.map((row) => {
      const cells = checks.map((c) => {
        const x = at(row, c)
        if (!x) return ''
        return x.expectedFailure !== undefined ? 'fail (expected)' : MARK[x.outcome]
      })
      return `| ${cell(row)} | ${cells.join(' | ')} |`
    }),
  ]
  const notes = r.results.filter((x) => x.outcome !== 'pass')
  if (notes.length > 0) {
    lines.push('', '| row | check | outcome | evidence |', '|---|---|---|---|')
    for (const x of notes)
      lines.push(
        `| ${cell(x.row)} | ${x.check} | ${x.expectedFailure !== undefined ? `fail (expected: ${cell(x.expectedFailure)})` : x.outcome} | ${cell(x.evidence)} |`,
      )
  }
  return `${lines.join('\n')}\n`
}
