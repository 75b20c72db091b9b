/**
 * The output formats of `runner bench`, as a table of writers: llama-bench's md, csv, json and jsonl
 * (tools/llama-bench/README.md, "Output formats"). Each writes its header before the first test,
 * a row as each test ends (a long run shows its results as they come, as llama-bench's do) and a
 * footer at the end, also after a Ctrl+C, so that what was measured is still a whole document.
 * Strings from the model file and the command line go out escaped: printable() on the table,
 * printableJson in JSON, printable() and CSV quoting in CSV.
 */
import {printable, printableJson} from '../util/index.js'
import type {BenchResult} from './measure.js'
import type {BenchModelInfo} from './model-info.js'
import {benchRecord, type BenchHost, type BenchRecord, RECORD_FIELDS, SAMPLE_FIELDS} from './record.js'
import {sampleStats} from './stats.js'
import {type BenchParams, testName} from './tests.js'

export interface WriterContext {
  readonly host: BenchHost
  readonly model: BenchModelInfo
  readonly params: BenchParams
}

export interface BenchWriter {
  header(c: WriterContext): string
  /** `index`: 0 for the first result (JSON puts a comma before the others). */
  row(c: WriterContext, r: BenchResult, index: number): string
  footer(c: WriterContext): string
}

export const OUTPUT_FORMATS = ['md', 'csv', 'json', 'jsonl'] as const
export type OutputFormat = (typeof OUTPUT_FORMATS)[number]

/** The md table's defaults: a column for a parameter shows only when it is not at its default (llama-bench's rule). */
export const MD_DEFAULTS = {nBatch: 512, kvType: 'f16'} as const

interface MdColumn {
  readonly name: string
  /** llama-bench's widths: negative = left-aligned (strings), positive = right-aligned. */
  readonly width: number
  readonly value: (c: WriterContext, r: BenchResult) => string
  /** Shown only when this says so (default: always). */
  readonly shown?: (p: BenchParams) => boolean
}

const nonDefault = <T>(list: readonly T[], def: T) => list.length > 1 || list[0] !== def

const MD_COLUMNS: readonly MdColumn[] = [
  {name: 'model', width: -30, value: (c) => printable(c.model.type)},
  {name: 'size', width: 10, value: (c) => size(c.model.sizeBytes)},
  {name: 'params', width: 10, value: (c) => params(c.model.nParams)},
  {name: 'backend', width: -10, value: () => 'CPU'},
  // llama-bench shows threads on a CPU backend always.
  {name: 'threads', width: 7, value: (_, r) => String(r.test.threads)},
  {name: 'n_batch', width: 7, value: (_, r) => String(r.test.nBatch), shown: (p) => nonDefault(p.nBatch, MD_DEFAULTS.nBatch)},
  {name: 'type_k', width: 6, value: (_, r) => r.test.kvType, shown: (p) => nonDefault(p.kvType, MD_DEFAULTS.kvType)},
  {name: 'type_v', width: 6, value: (_, r) => r.test.kvType, shown: (p) => nonDefault(p.kvType, MD_DEFAULTS.kvType)},
  {name: 'test', width: 15, value: (_, r) => testName(r.test)},
  {
    name: 't/s',
    width: 20,
    value: (_, r) => {
      const s = sampleStats(r.samplesNs, r.test.nPrompt + r.test.nGen)
      return `${s.avgTs.toFixed(2)} ± ${s.stddevTs.toFixed(2)}`
    },
  },
]

function size(bytes: number): string {
  return bytes < 2 ** 30 ? `${(bytes / 2 ** 20).toFixed(2)} MiB` : `${(bytes / 2 ** 30).toFixed(2)} GiB`
}

function params(n: number): string {
  return n < 1e9 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e9).toFixed(2)} B`
}

const pad = (text: string, width: number) => (width < 0 ? text.padEnd(-width) : text.padStart(width))
const mdColumns = (p: BenchParams) => MD_COLUMNS.filter((col) => col.shown?.(p) ?? true)
const mdLine = (cells: readonly string[]) => `| ${cells.join(' | ')} |\n`

const markdown: BenchWriter = {
  header: (c) => {
    const cols = mdColumns(c.params)
    return (
      mdLine(cols.map((col) => pad(col.name, col.width))) +
      mdLine(cols.map((col) => `${'-'.repeat(Math.abs(col.width) - 1)}${col.width > 0 ? ':' : '-'}`))
    )
  },
  row: (c, r) => mdLine(mdColumns(c.params).map((col) => pad(col.value(c, r), col.width))),
  footer: (c) => `\nbuild: runner ${c.host.runnerVersion} (kernels: ${c.host.kernels})\n`,
}

const CSV_FIELDS = RECORD_FIELDS.filter((f) => !SAMPLE_FIELDS.has(f))

/**
 * Every value quoted, as llama-bench's csv writes them, a quote inside doubled (RFC 4180); fractions
 * with 6 decimals, as its std::to_string writes avg_ts and stddev_ts.
 */
const csvCell = (v: BenchRecord[string]) =>
  `"${printable(typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(6) : String(v), {max: 1000}).replaceAll('"', '""')}"`

const csv: BenchWriter = {
  header: () => `${CSV_FIELDS.join(',')}\n`,
  row: (c, r) => {
    const record = benchRecord(c.host, c.model, r)
    return `${CSV_FIELDS.map((f) => csvCell(record[f]!)).join(',')}\n`
  },
  footer: () => '',
}

const indent = (text: string) => text.replaceAll('\n', '\n  ')

const json: BenchWriter = {
  header: () => '[\n',
  row: (c, r, index) => `${index > 0 ? ',\n' : ''}  ${indent(printableJson(benchRecord(c.host, c.model, r), undefined, 2))}`,
  footer: () => '\n]\n',
}

const jsonl: BenchWriter = {
  header: () => '',
  row: (c, r) => `${printableJson(benchRecord(c.host, c.model, r))}\n`,
  footer: () => '',
}

export const BENCH_WRITERS: Readonly<Record<OutputFormat, BenchWriter>> = {md: markdown, csv, json, jsonl}
