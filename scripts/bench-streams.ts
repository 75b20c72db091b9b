/**
 * Many clients at once: aggregate decode throughput of N concurrent streams on one model, ours with
 * the slots' decode steps batched (a DecodeGroup, what `serve -P N` does) and side by side (each
 * slot alone, `serve --no-batch-decode`), against node-llama-cpp's own multi-sequence batching (N
 * LlamaContextSequences of one context, which llama.cpp evaluates in one batch per step).
 *
 *   npm run bench:streams -- --model FILE [--streams 1,2,4,8] [--threads 2] [--tg 64] [--reps 3] [--json]
 *
 * Method: every (engine, N) measurement runs in its own child process (this script with --worker).
 * Each stream gets its own 8-token prompt (evaluated first, not timed: the streams start their
 * decode together), then N streams generate tg greedy tokens each at once; aggregate tok/s =
 * N * tg / the wall time from the first stream's first token to the last stream's last one.
 * Engines alternate rep by rep; the table prints medians (min–max) and ratios of medians.
 */
import {spawn} from 'node:child_process'
import {cpus} from 'node:os'
import {resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

const SCRIPT = fileURLToPath(import.meta.url)
const ROOT = resolve(SCRIPT, '../..')
const RESULT_MARK = 'STREAMS_RESULT '
const PROMPT = 8

type Engine = 'runner-batched' | 'runner-side-by-side' | 'node-llama-cpp'
const ENGINES: readonly Engine[] = ['runner-batched', 'runner-side-by-side', 'node-llama-cpp']

interface WorkerOptions {
  readonly engine: Engine
  readonly model: string
  readonly streams: number
  readonly threads: number
  readonly tg: number
}

interface WorkerResult {
  readonly engine: Engine
  readonly streams: number
  readonly wallMs: number
  readonly tokens: number
  /** Tokens per step of our group (absent for the others). */
  readonly meanBatch?: number
}

/** Stream s's prompt: ids among the first 512 tokens (real tokens in every bench model), distinct per stream. */
function promptOf(s: number): number[] {
  return Array.from({length: PROMPT}, (_, i) => 3 + ((s * 131 + i * 7919 + 13) % 509))
}

async function workerRunner(o: WorkerOptions): Promise<WorkerResult> {
  const {DecodeGroup, Model} = await import('../src/lib/engine/index.js')
  const {resolveSamplingOptions} = await import('../src/lib/sampling/index.js')
  const model = await Model.load(o.model)
  const batched = o.engine === 'runner-batched'
  // Side by side: the threads divided among the slots, as serve does; batched: the prompts on the
  // slots' threads, the steps on the group's.
  const perSlot = batched ? 1 : Math.max(1, Math.floor(o.threads / o.streams))
  const contexts = await Promise.all(
    Array.from({length: o.streams}, () => model.createContext({nCtx: 512, threads: perSlot, kvType: 'f16'})),
  )
  const group = batched ? DecodeGroup.create(model, {threads: o.threads, maxMembers: o.streams}) : undefined
  const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n})
  await contexts[0]!.generate(promptOf(0), {maxTokens: 4, sampling, stopTokens: [], pos: 0}).result // warm-up, not timed
  // Prompts first (not timed), so every stream's decode starts together.
  for (let s = 0; s < o.streams; s++) await contexts[s]!.decode(promptOf(s).slice(0, PROMPT - 1), {pos: 0, logits: 'none'})
  let first = Infinity
  let last = 0
  await Promise.all(
    contexts.map(async (ctx, s) => {
      const stream = ctx.generate([promptOf(s)[PROMPT - 1]!], {
        maxTokens: o.tg + 1,
        sampling,
        stopTokens: [],
        pos: PROMPT - 1,
        ...(group ? {group} : {}),
      })
      let n = 0
      for await (const t of stream) {
        if (t.token < 0) continue
        if (n++ === 0) first = Math.min(first, performance.now())
      }
      last = Math.max(last, performance.now())
    }),
  )
  const stats = group?.stats()
  group?.dispose()
  for (const c of contexts) c.dispose()
  model.dispose()
  return {
    engine: o.engine,
    streams: o.streams,
    wallMs: last - first,
    tokens: o.streams * o.tg,
    ...(stats ? {meanBatch: stats.tokens / stats.steps} : {}),
  }
}

async function workerLlamaCpp(o: WorkerOptions): Promise<WorkerResult> {
  const {getLlama, LlamaLogLevel} = await import('node-llama-cpp')
  const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  const model = await llama.loadModel({modelPath: o.model})
  const ctx = await model.createContext({
    contextSize: 512 * o.streams,
    sequences: o.streams,
    batchSize: 512,
    threads: {ideal: o.threads, min: o.threads},
    flashAttention: false,
  })
  const seqs = Array.from({length: o.streams}, () => ctx.getSequence())
  type Tokens = Parameters<(typeof seqs)[0]['evaluate']>[0]
  for (let s = 0; s < o.streams; s++) await seqs[s]!.evaluateWithoutGeneratingNewTokens(promptOf(s).slice(0, PROMPT - 1) as Tokens)
  let first = Infinity
  let last = 0
  await Promise.all(
    seqs.map(async (seq, s) => {
      let n = 0
      for await (const token of seq.evaluate([promptOf(s)[PROMPT - 1]!] as Tokens, {temperature: 0, yieldEogToken: true})) {
        void token
        if (n === 0) first = Math.min(first, performance.now())
        if (++n === o.tg + 1) break
      }
      last = Math.max(last, performance.now())
    }),
  )
  await ctx.dispose()
  await model.dispose()
  return {engine: o.engine, streams: o.streams, wallMs: last - first, tokens: o.streams * o.tg}
}

function runWorker(o: WorkerOptions): Promise<WorkerResult> {
  const args = ['--import', 'tsx', SCRIPT, '--worker', o.engine, '--model', o.model, '--streams', String(o.streams)]
  args.push('--threads', String(o.threads), '--tg', String(o.tg))
  // Every stream's generation holds a libuv thread for its whole run.
  const env = {...process.env, UV_THREADPOOL_SIZE: String(Math.max(4, o.streams + 2))}
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, {cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe']})
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(RESULT_MARK))
      if (code === 0 && line) resolveRun(JSON.parse(line.slice(RESULT_MARK.length)) as WorkerResult)
      else reject(new Error(`${o.engine} with ${o.streams} streams exited with ${code}:\n${err.trim() || out.trim()}`))
    })
  })
}

const median = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const USAGE = `usage: npm run bench:streams -- --model FILE [--streams 1,2,4,8] [--threads 2] [--tg 64] [--reps 3] [--engines LIST] [--json]

  --streams LIST   concurrent streams, comma-separated (default 1,2,4,8)
  --threads N      threads of each engine (default: the logical CPUs)
  --tg N           tokens each stream generates (default 64)
  --engines LIST   runner-batched, runner-side-by-side, node-llama-cpp (default all)

example: npm run bench:streams -- --model tinyllama-q4_0.gguf --threads 2 --streams 1,2,4,8 --reps 3`

async function main(): Promise<void> {
  const {values} = parseArgs({
    options: {
      model: {type: 'string'},
      streams: {type: 'string', default: '1,2,4,8'},
      threads: {type: 'string', default: String(cpus().length)},
      tg: {type: 'string', default: '64'},
      reps: {type: 'string', default: '3'},
      engines: {type: 'string', default: ENGINES.join(',')},
      worker: {type: 'string'},
      json: {type: 'boolean', default: false},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  })
  if (values.help || !values.model) {
    process.stdout.write(`${USAGE}\n`)
    if (!values.help) process.exitCode = 2
    return
  }
  const int = (name: string, v: string) => {
    const n = Number(v)
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`)
    return n
  }
  const threads = int('threads', values.threads)
  const tg = int('tg', values.tg)
  if (values.worker) {
    const engine = values.worker as Engine
    if (!ENGINES.includes(engine)) throw new Error(`--worker ${engine} must be one of ${ENGINES.join(', ')}`)
    const o = {engine, model: resolve(values.model), streams: int('streams', values.streams), threads, tg}
    const r = engine === 'node-llama-cpp' ? await workerLlamaCpp(o) : await workerRunner(o)
    process.stdout.write(`${RESULT_MARK}${JSON.stringify(r)}\n`)
    return
  }
  const streamsList = values.streams.split(',').map((s) => int('streams', s.trim()))
  const engines = values.engines.split(',').map((e) => e.trim()) as Engine[]
  for (const e of engines) if (!ENGINES.includes(e)) throw new Error(`--engines: ${e} is not one of ${ENGINES.join(', ')}`)
  const reps = int('reps', values.reps)
  const cpu = /^model name\s*:\s*(.+)$/m.exec((await import('node:fs')).readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model
  const rows: Array<{streams: number; tokS: Record<string, number[]>; meanBatch: number[]}> = []
  for (const streams of streamsList) {
    const row = {streams, tokS: Object.fromEntries(engines.map((e) => [e, [] as number[]])), meanBatch: [] as number[]}
    for (let rep = 0; rep < reps; rep++)
      for (const engine of engines) {
        const r = await runWorker({engine, model: resolve(values.model), streams, threads, tg})
        const tokS = (1000 * r.tokens) / r.wallMs
        row.tokS[engine]!.push(tokS)
        if (r.meanBatch !== undefined) row.meanBatch.push(r.meanBatch)
        process.stderr.write(`${engine}, ${streams} streams, rep ${rep + 1}/${reps}: ${tokS.toFixed(1)} tok/s aggregate\n`)
      }
    rows.push(row)
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify({cpu, threads, tg, reps, rows}, null, 2)}\n`)
    return
  }
  const one = rows.find((r) => r.streams === 1)
  const lines = [
    `- cpu: ${cpu} (${cpus().length} logical CPUs), threads ${threads}, tg ${tg} per stream, ${reps} reps, aggregate tok/s median (min–max)`,
    '',
    `| streams | ${engines.join(' | ')} | batched / node-llama-cpp | batched vs its 1 stream | mean tokens per step |`,
    `|---:|${engines.map(() => '---:|').join('')}---:|---:|---:|`,
  ]
  for (const r of rows) {
    const cell = (e: string) => {
      const v = r.tokS[e]!
      return `${median(v).toFixed(1)} (${Math.min(...v).toFixed(1)}–${Math.max(...v).toFixed(1)})`
    }
    const b = median(r.tokS['runner-batched'] ?? [])
    const n = median(r.tokS['node-llama-cpp'] ?? [])
    const b1 = one ? median(one.tokS['runner-batched'] ?? []) : NaN
    lines.push(
      `| ${r.streams} | ${engines.map(cell).join(' | ')} | ${Number.isFinite(b / n) ? `${(b / n).toFixed(2)}x` : '-'} | ${Number.isFinite(b / b1) ? `${(b / b1).toFixed(2)}x` : '-'} | ${r.meanBatch.length ? median(r.meanBatch).toFixed(2) : '-'} |`,
    )
  }
  process.stdout.write(`${lines.join('\n')}\n`)
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:streams: ${(error as Error).message}\n`)
  process.exitCode = 1
})
