/**
 * MaskBench (JSONSchemaBench's mask-level tests) against the JSON Schema compiler, judged by the
 * IR's Earley recognizer: each schema is compiled, each instance serialized twice (JSON.stringify
 * and Python's json.dumps style) and both spellings must be judged as the file says.
 *
 *   npx tsx scripts/maskbench-ir.ts [dir] [--every N] [--cap CHARS] [--verbose]
 *
 * Prints schemas, compiled, refused (top keywords), passing, validation errors (a valid instance
 * rejected), invalidation errors (an invalid instance accepted: must be 0) and compile p50/p99.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {compileJsonSchema, SchemaRefusal} from '../src/lib/grammar/index.js'
import {recognizes} from '../test/helpers/ir-recognize.js'
import {jsStringify, parseRaw, pyDumps, type RawJson} from '../test/helpers/py-json.js'

const args = process.argv.slice(2)
const flag = (name: string, dflt: number): number => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1]) : dflt
}
const positional = args.filter((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1]!.startsWith('--') && args[i - 1] !== '--verbose'))
const dir = positional[0] ?? '../shared/structured/maskbench'
const every = flag('--every', 1)
const cap = flag('--cap', 4000)
const verbose = args.includes('--verbose')

export interface MaskbenchResult {
  schemas: number
  compiled: number
  refused: Map<string, number>
  crashed: number
  passing: number
  validationErrors: number
  invalidationErrors: number
  skippedDocs: number
  times: number[]
  details: string[]
}

export function runMaskbench(directory: string, step: number, sizeCap: number): MaskbenchResult {
  const files = readdirSync(directory)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .filter((_, i) => i % step === 0)
  const r: MaskbenchResult = {
    schemas: 0,
    compiled: 0,
    refused: new Map(),
    crashed: 0,
    passing: 0,
    validationErrors: 0,
    invalidationErrors: 0,
    skippedDocs: 0,
    times: [],
    details: [],
  }
  for (const f of files) {
    const text = readFileSync(join(directory, f), 'utf8')
    // the schema as JavaScript reads it; the instances with each number's own spelling
    const doc = JSON.parse(text) as {schema: unknown; tests: {valid: boolean; description?: string}[]}
    const raw = parseRaw(text) as {tests: {data: RawJson}[]}
    r.schemas++
    const t0 = performance.now()
    let g
    try {
      g = compileJsonSchema(doc.schema)
    } catch (e) {
      if (e instanceof SchemaRefusal) r.refused.set(e.keyword, (r.refused.get(e.keyword) ?? 0) + 1)
      else {
        r.crashed++
        r.details.push(`CRASH ${f}: ${(e as Error).stack?.split('\n').slice(0, 3).join(' | ')}`)
      }
      if (verbose && e instanceof SchemaRefusal) r.details.push(`refused ${f}: ${e.message}`)
      continue
    }
    const ms = performance.now() - t0
    r.times.push(ms)
    if (ms > 200) r.details.push(`SLOW ${f}: compiled in ${ms.toFixed(0)} ms`)
    r.compiled++
    let valErr = false
    let invalErr = false
    for (const [k, t] of doc.tests.entries()) {
      const data = raw.tests[k]!.data
      for (const text of [jsStringify(data), pyDumps(data)]) {
        if ([...text].length > sizeCap) {
          r.skippedDocs++
          continue
        }
        const got = recognizes(g, text)
        if (got === t.valid) continue
        if (t.valid) valErr = true
        else invalErr = true
        r.details.push(`${t.valid ? 'REJECTED-VALID' : 'ACCEPTED-INVALID'} ${f}: ${t.description ?? ''} ${text.slice(0, 200)}`)
      }
    }
    if (invalErr) r.invalidationErrors++
    else if (valErr) r.validationErrors++
    else r.passing++
  }
  return r
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = runMaskbench(dir, every, cap)
  for (const d of r.details) console.log(d)
  const refused = [...r.refused.values()].reduce((a, b) => a + b, 0)
  console.log(`schemas ${r.schemas}, compiled ${r.compiled}, refused ${refused}, crashed ${r.crashed}`)
  console.log(
    `refusals: ${[...r.refused]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  )
  console.log(
    `passing ${r.passing} (${((100 * r.passing) / r.schemas).toFixed(1)} %), validation errors ${r.validationErrors}, invalidation errors ${r.invalidationErrors}, documents skipped over ${cap} chars ${r.skippedDocs}`,
  )
  console.log(`compile ms p50 ${pct(r.times, 50).toFixed(2)}, p99 ${pct(r.times, 99).toFixed(2)}, max ${pct(r.times, 100).toFixed(2)}`)
}
