/**
 * Speculative decoding's speed, beside llama.cpp's (node-llama-cpp 3.22.1 token predictors) on the
 * same files, threads and tokens: decode tokens per second without a draft, with prompt lookup and
 * with a draft model, the speed-up over each engine's own plain decoding, and the acceptance
 * (drafted tokens the model took). Greedy, no stop token, the same prompt ids for both engines.
 *
 *   npx tsx scripts/bench-speculative.ts [--threads 1] [--reps 5] [--tokens 128] [--cache-dir DIR] [--json]
 *
 * Targets (all with stories260K's 512-token vocabulary, so stories260K can draft for every one):
 * - stories260K itself (a real model, 1 MB: compute-bound, everything in cache);
 * - the llama fixture (random weights, 2.6 MB);
 * - a SmolLM2-135M-shaped llama in Q8_0 (random weights, ~130 MB: the weights do not fit the cache,
 *   so a step's cost is reading them and a verify of k tokens costs little more than one);
 * - stories260K with 60 blocks appended whose output projections are zero: the same logits as
 *   stories260K at ~13x its cost, so a stories260K draft is always right (the upper bound of the
 *   mechanism, not a model anyone runs).
 * Prompts: "repeat" (a passage twice, cut in its second copy: lookup finds continuations) and
 * "fresh" ("Once upon a time"). Each measurement runs in its own child process; engines alternate
 * rep by rep; medians are printed with their ratio. The CPU is named in the table: ratios from one
 * CPU kind say nothing of another.
 */
import {spawn} from 'node:child_process'
import {existsSync, mkdirSync, renameSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {cpuModel} from '../src/lib/bench/index.js'
import {Draft, Model, Session} from '../src/lib/engine/index.js'
import {generate} from '../src/lib/generate/index.js'
import {type GgufWriteTensor, readGgufModel, writeGguf} from '../src/lib/gguf/index.js'
import {resolveSamplingOptions} from '../src/lib/sampling/index.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const STORIES = resolve(ROOT, '../shared/models/stories260K.gguf')
const FIXTURE = resolve(ROOT, '../shared/fixtures/llama.gguf')
const PASSAGE =
  'Once upon a time, there was a little girl named Lily. She liked to play with her ball in the park. One day, she saw a big dog.'
const PROMPTS = {repeat: `${PASSAGE} ${PASSAGE.slice(0, 60)}`, fresh: 'Once upon a time'}
type PromptName = keyof typeof PROMPTS
const MODES = ['plain', 'lookup', 'draft'] as const
type Mode = (typeof MODES)[number]
const ENGINES = ['runner', 'llama.cpp'] as const
type Engine = (typeof ENGINES)[number]

interface Job {
  engine: Engine
  model: string
  mode: Mode
  prompt: PromptName
  threads: number
  tokens: number
}
interface Sample {
  tokensPerSecond: number
  drafted: number
  accepted: number
  firstTokens: number[]
}

/** Our decode: the native loop's decodeMs for `tokens` generated tokens after the prompt. */
async function runOurs(j: Job): Promise<Sample> {
  const model = await Model.load(j.model)
  const draftModel = j.mode === 'draft' ? await Model.load(STORIES) : undefined
  const ctx = await model.createContext({nCtx: 1024, threads: j.threads})
  const draft =
    j.mode === 'lookup'
      ? Draft.lookup()
      : draftModel
        ? Draft.fromContext(await draftModel.createContext({nCtx: 1024, threads: j.threads}), model.tokenizer, STORIES)
        : undefined
  const prompt = model.tokenizer.encode(PROMPTS[j.prompt], {addSpecial: true})
  const sampling = resolveSamplingOptions({temperature: 0})
  const once = async (n: number) => {
    const session = new Session(ctx)
    const o = await generate(session, {prompt, maxTokens: n, sampling, stopTokens: [], ...(draft ? {draft} : {})}).result
    session.reset()
    return o
  }
  await once(8) // warm-up
  const o = await once(j.tokens)
  draft?.dispose()
  ctx.dispose()
  model.dispose()
  draftModel?.dispose()
  return {
    tokensPerSecond: (1000 * o.tokenIds.length) / o.timings.decodeMs,
    drafted: o.draft?.drafted ?? 0,
    accepted: o.draft?.accepted ?? 0,
    firstTokens: o.tokenIds.slice(0, 12),
  }
}

/** llama.cpp's: node-llama-cpp's sequence with InputLookupTokenPredictor or DraftSequenceTokenPredictor, time from the first token to the last. */
async function runLlamaCpp(j: Job): Promise<Sample> {
  const {getLlama, LlamaLogLevel, InputLookupTokenPredictor, DraftSequenceTokenPredictor} = await import('node-llama-cpp')
  const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  const model = await llama.loadModel({modelPath: j.model})
  const ctx = await model.createContext({
    contextSize: 1024,
    batchSize: 512,
    threads: {ideal: j.threads, min: j.threads},
    flashAttention: false,
  })
  const draftModel = j.mode === 'draft' ? await llama.loadModel({modelPath: STORIES}) : undefined
  const draftCtx = draftModel ? await draftModel.createContext({contextSize: 1024, threads: {ideal: j.threads, min: j.threads}}) : undefined
  // The same settings as ours: lookup n-grams 2..4 and up to 10 drafted tokens; a draft model's 16 (llama.cpp's default).
  const predictor =
    j.mode === 'lookup'
      ? new InputLookupTokenPredictor({patternLength: {min: 2, max: 4}, predictionLength: {max: 10}})
      : draftCtx
        ? new DraftSequenceTokenPredictor(draftCtx.getSequence(), {maxTokens: 16})
        : undefined
  const seq = ctx.getSequence(predictor ? {tokenPredictor: predictor} : {})
  const prompt = model.tokenize(PROMPTS[j.prompt])
  const ids = [...(model.tokens.bos !== null ? [model.tokens.bos] : []), ...prompt]
  type Tokens = Parameters<typeof seq.evaluate>[0]
  const once = async (n: number) => {
    const tokens: number[] = []
    let first = 0
    // What LlamaCompletion does: the lookup predictor searches the input it is given.
    if (predictor instanceof InputLookupTokenPredictor) predictor.updateInputTokens(ids as Tokens)
    for await (const t of seq.evaluate(ids as Tokens, {temperature: 0, yieldEogToken: true})) {
      if (tokens.length === 0) first = performance.now()
      tokens.push(t)
      if (tokens.length === n + 1) break
    }
    const ms = performance.now() - first
    await seq.clearHistory()
    return {ms, tokens}
  }
  await once(8)
  const before = seq.tokenPredictions
  const r = await once(j.tokens)
  const after = seq.tokenPredictions
  const drafted = after.validated + after.refuted - (before.validated + before.refuted)
  await ctx.dispose()
  await draftCtx?.dispose()
  await model.dispose()
  await draftModel?.dispose()
  return {
    tokensPerSecond: (1000 * j.tokens) / r.ms,
    drafted,
    accepted: after.validated - before.validated,
    firstTokens: r.tokens.slice(0, 12),
  }
}

/** stories260K with `extra` blocks appended whose attn_output and ffn_down are zero: the same logits, more work per token. */
async function paddedStories(cacheDir: string, extra: number): Promise<string> {
  const path = join(cacheDir, `stories260K-plus-${extra}-zero-blocks.gguf`)
  if (existsSync(path)) return path
  const src = readGgufModel(STORIES)
  const nLayer = 5
  const last = src.tensors.filter((t) => t.name.startsWith(`blk.${nLayer - 1}.`))
  const tensors: GgufWriteTensor[] = src.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    shape: t.shape,
    data: {file: t.file, offset: t.offset},
  }))
  for (let b = nLayer; b < nLayer + extra; b++)
    for (const t of last) {
      const name = t.name.replace(`blk.${nLayer - 1}.`, `blk.${b}.`)
      const zero = /attn_output|ffn_down/.test(name)
      tensors.push({name, type: t.type, shape: t.shape, data: zero ? new Uint8Array(t.byteSize) : {file: t.file, offset: t.offset}})
    }
  const kvs = src.kvs.map((kv) => (kv.key === 'llama.block_count' ? {...kv, value: nLayer + extra} : kv))
  mkdirSync(cacheDir, {recursive: true})
  const tmp = `${path}.tmp-${process.pid}`
  await writeGguf(tmp, {kvs, tensors})
  renameSync(tmp, path)
  return path
}

/** A SmolLM2-135M-shaped llama in Q8_0 with stories260K's vocabulary (make-test-model.ts), written once. */
async function smolShape(cacheDir: string): Promise<string> {
  const path = join(cacheDir, 'smollm2-shape-e576-l30-h9-kv3-ff1536-v512-s1-q8_0.gguf')
  if (existsSync(path)) return path
  mkdirSync(cacheDir, {recursive: true})
  const tmp = `${path}.tmp-${process.pid}`
  const args = ['--out', tmp, '--type', 'q8_0', '--n-embd', '576', '--n-layer', '30', '--n-head', '9', '--n-head-kv', '3', '--n-ff', '1536']
  await child(['--import', 'tsx', join(ROOT, 'scripts/make-test-model.ts'), ...args, '--context', '2048', '--seed', '1'])
  renameSync(tmp, path)
  return path
}

function child(args: string[]): Promise<string> {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, args, {cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    p.stdout.on('data', (d: Buffer) => (out += d.toString()))
    p.on('close', (code) => (code === 0 ? res(out) : rej(new Error(`${args.join(' ')} exited ${code}`))))
  })
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

async function main(): Promise<void> {
  const {values} = parseArgs({
    options: {
      worker: {type: 'string'},
      threads: {type: 'string', default: '1'},
      reps: {type: 'string', default: '5'},
      tokens: {type: 'string', default: '128'},
      'cache-dir': {type: 'string', default: join(tmpdir(), 'runner-bench')},
      json: {type: 'boolean', default: false},
    },
  })
  if (values.worker) {
    const job = JSON.parse(values.worker) as Job
    process.stdout.write(`${JSON.stringify(job.engine === 'runner' ? await runOurs(job) : await runLlamaCpp(job))}\n`)
    return
  }
  const threads = Number(values.threads)
  const reps = Number(values.reps)
  const tokens = Number(values.tokens)
  const cache = values['cache-dir']
  const models: Array<[string, string]> = [
    ['stories260K (F32, 1 MB)', STORIES],
    ['llama fixture (F32, 2.6 MB)', FIXTURE],
    ['SmolLM2-135M shape (Q8_0, random)', await smolShape(cache)],
    ['stories260K + 60 zero blocks (F32)', await paddedStories(cache, 60)],
  ]
  const rows: Array<Record<string, string | number>> = []
  for (const [label, model] of models)
    for (const prompt of Object.keys(PROMPTS) as PromptName[]) {
      const samples = new Map<string, Sample[]>()
      for (let r = 0; r < reps; r++)
        for (const mode of MODES)
          for (const engine of ENGINES) {
            const job: Job = {engine, model, mode, prompt, threads, tokens}
            const out = await child(['--import', 'tsx', fileURLToPath(import.meta.url), '--worker', JSON.stringify(job)])
            const key = `${engine}/${mode}`
            samples.set(key, [...(samples.get(key) ?? []), JSON.parse(out.trim().split('\n').pop()!) as Sample])
          }
      const rate = (e: Engine, m: Mode) => median(samples.get(`${e}/${m}`)!.map((s) => s.tokensPerSecond))
      const acc = (e: Engine, m: Mode) => {
        const s = samples.get(`${e}/${m}`)![0]!
        return s.drafted > 0 ? `${((100 * s.accepted) / s.drafted).toFixed(0)}% of ${s.drafted}` : 'none drafted'
      }
      for (const mode of MODES.slice(1))
        rows.push({
          model: label,
          prompt,
          draft: mode === 'lookup' ? 'lookup' : 'stories260K',
          'runner plain t/s': Math.round(rate('runner', 'plain')),
          'runner spec t/s': Math.round(rate('runner', mode)),
          'runner speed-up': (rate('runner', mode) / rate('runner', 'plain')).toFixed(2),
          'runner acceptance': acc('runner', mode),
          'llama.cpp plain t/s': Math.round(rate('llama.cpp', 'plain')),
          'llama.cpp spec t/s': Math.round(rate('llama.cpp', mode)),
          'llama.cpp speed-up': (rate('llama.cpp', mode) / rate('llama.cpp', 'plain')).toFixed(2),
          'llama.cpp acceptance': acc('llama.cpp', mode),
        })
      process.stderr.write(`done: ${label} ${prompt}\n`)
    }
  const header = {cpu: cpuModel(), threads, tokens, reps, greedy: true}
  if (values.json) {
    process.stdout.write(`${JSON.stringify({header, rows})}\n`)
    return
  }
  const cols = Object.keys(rows[0]!)
  process.stdout.write(
    `${Object.entries(header)
      .map(([k, v]) => `${k}: ${v}`)
      .join(' · ')}\n\n`,
  )
  process.stdout.write(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|\n`)
  for (const r of rows) process.stdout.write(`| ${cols.map((c) => r[c]).join(' | ')} |\n`)
}

await main()
