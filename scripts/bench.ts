/**
 * Side-by-side benchmark of our engine and llama.cpp on the same GGUF file and thread count: prompt
 * processing (pp, default 512 tokens in one batch) and decode (tg, default 128 generated tokens,
 * greedy), plus peak, anonymous and file-backed RSS and load time. llama.cpp runs twice: from C with
 * a persistent thread pool (scripts/native-bench/llama_direct.c, linked against the libllama that
 * node-llama-cpp ships: llama.cpp's own speed) and through node-llama-cpp (what a Node user gets).
 * A STREAM-like probe (scripts/native-bench/membw.c) measures the read bandwidth decode is bound by.
 *
 *   npm run bench -- --model FILE [--model FILE2] [--threads 1,2] [--reps 3] [--pp 512] [--tg 128] [--json]
 *   npm run bench -- --suite [--cache-dir DIR]      (TinyLlama-shaped Q4_0, Q8_0, Q4_K, Q6_K, F16; Qwen3-MoE and SmolLM2-135M shapes; stories260K)
 *
 * Method (docs/benchmarks.md):
 * - The parent reads each file once first, so that both engines find it in the page cache.
 * - Every (engine, file, threads) measurement runs in its own child process, so that peak RSS is
 *   that engine's alone and neither engine inherits the other's threads, heap or page faults. The
 *   child is this script with --worker; it loads the model, warms up (a short prompt and a few
 *   tokens, not timed), then times pp and tg once and prints one JSON line.
 * - Engines alternate rep by rep (runner, llama.cpp, runner, llama.cpp, ...), so that drift in the
 *   machine's load lands on both; the parent prints medians with min and max over the reps, and the
 *   ratio of the medians (ours / llama.cpp).
 * - pp: 512 tokens at position 0 of an empty cache, logits of the last one. Ours: Context.decode.
 *   llama.cpp: LlamaContextSequence.evaluateWithoutGeneratingNewTokens (one batch of batchSize 512).
 * - tg: from an empty cache, an 8-token prompt (not timed), then tg + 1 greedy tokens with no stop
 *   token; the time covers evaluating tg generated tokens (and sampling). Ours: the native generate
 *   loop's decodeMs. llama.cpp: the time between the first and the (tg + 1)-th token that
 *   LlamaContextSequence.evaluate yields, i.e. what a node-llama-cpp user sees per token.
 * - Both engines get the same token ids, context size (1024 unless pp + tg needs more), batch size
 *   512, F16 KV cache (both defaults) and thread count (llama.cpp's thread splitter is told min =
 *   ideal = the count, so it cannot hand out fewer). llama.cpp's flash attention is off unless
 *   --flash-attention says otherwise: with it off, llama.cpp computes attention as we do and both
 *   engines generate the same greedy tokens (checked: the tables note where they differ).
 *
 * Progress goes to stderr, results to stdout (a markdown table, or JSON with --json).
 */
import {spawn, spawnSync} from 'node:child_process'
import {closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync} from 'node:fs'
import {cpus, loadavg, tmpdir} from 'node:os'
import {basename, join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {cpuModel} from '../src/lib/bench/index.js'
import {amxStatus, cpuFeatures, describeKernels, kernelSet} from '../src/lib/engine/index.js'
import {readGgufModel} from '../src/lib/gguf/index.js'
import {defaultThreads} from '../src/lib/util/index.js'

const SCRIPT = fileURLToPath(import.meta.url)
const ROOT = resolve(SCRIPT, '../..')
const STORIES = resolve(ROOT, '../shared/models/stories260K.gguf')

/**
 * runner: our engine. llama.cpp-c: the libllama node-llama-cpp ships, driven from C with a persistent
 * thread pool (scripts/native-bench/llama_direct.c): llama.cpp's own speed, the fair bar.
 * llama.cpp: the same library through node-llama-cpp, what a Node user of llama.cpp gets.
 */
type Engine = 'runner' | 'llama.cpp-c' | 'llama.cpp-c-fa' | 'llama.cpp'
const ENGINES: readonly Engine[] = ['runner', 'llama.cpp-c', 'llama.cpp-c-fa', 'llama.cpp']
const REFERENCES = ['llama.cpp-c', 'llama.cpp-c-fa', 'llama.cpp'] as const
type Reference = (typeof REFERENCES)[number]
type FlashAttention = 'off' | 'on' | 'auto'
const FLASH_ATTENTION: Record<FlashAttention, boolean | 'auto'> = {off: false, on: true, auto: 'auto'}
/**
 * The C driver's two settings: flash attention off (llama.cpp's unfused path, whose numerics ours
 * follows) and auto (llama.cpp's default, on for CPU: its fastest). node-llama-cpp gets --flash-attention.
 */
const C_DRIVER_FLASH: Partial<Record<Engine, FlashAttention>> = {'llama.cpp-c': 'off', 'llama.cpp-c-fa': 'auto'}
const ENGINE_LABEL: Record<Engine, string> = {
  runner: 'runner',
  'llama.cpp-c': 'llama.cpp C',
  'llama.cpp-c-fa': 'llama.cpp C, FA auto',
  'llama.cpp': 'llama.cpp node',
}

/** Both engines split prompts into batches of this many tokens (llama.cpp's default ubatch). */
const N_BATCH = 512
const WARM_PROMPT = 8
const WARM_GEN = 4
const TG_PROMPT = 8
/** The worker's result line starts with this, so that a stray log line on stdout cannot be mistaken for it. */
const RESULT_MARK = 'BENCH_RESULT '

/** The standard bench models: TinyLlama-1.1B's shape with random weights (make-test-model.ts). */
interface SuiteShape {
  readonly name: string
  readonly label: string
  readonly arch: 'llama' | 'qwen3moe'
  readonly nEmbd: number
  readonly nLayer: number
  readonly nHead: number
  readonly nHeadKv: number
  readonly nFf: number
  readonly vocab: number
  readonly context: number
  readonly seed: number
  readonly experts?: {readonly count: number; readonly used: number; readonly ff: number}
}
const TINYLLAMA: SuiteShape = {
  name: 'tinyllama',
  label: 'TinyLlama-shape',
  arch: 'llama',
  nEmbd: 2048,
  nLayer: 22,
  nHead: 32,
  nHeadKv: 4,
  nFf: 5632,
  vocab: 32000,
  context: 2048,
  seed: 1,
}
/** A mixture of experts in the shape of the small Qwen3 MoE models: 32 experts, 4 per token, about 0.9 B weights of which a fifth are read per token. */
const QWEN3MOE: SuiteShape = {
  name: 'qwen3moe',
  label: 'Qwen3-MoE-shape',
  arch: 'qwen3moe',
  nEmbd: 1024,
  nLayer: 16,
  nHead: 16,
  nHeadKv: 4,
  nFf: 3072,
  vocab: 32000,
  context: 2048,
  seed: 1,
  experts: {count: 32, used: 4, ff: 512},
}
/** A small model in SmolLM2-135M's shape (30 blocks of width 576): the issue's check that small models do not get slower with threads. */
const SMOLLM2: SuiteShape = {
  name: 'smollm2',
  label: 'SmolLM2-135M-shape',
  arch: 'llama',
  nEmbd: 576,
  nLayer: 30,
  nHead: 9,
  nHeadKv: 3,
  nFf: 1536,
  vocab: 49152,
  context: 2048,
  seed: 1,
}
const SUITE_TYPES = ['q4_0', 'q8_0', 'q4_k', 'q6_k', 'f16'] as const
const SUITE_MOE_TYPES = ['q4_0'] as const
const SUITE_SMALL_TYPES = ['q8_0'] as const

interface WorkerOptions {
  readonly engine: Engine
  readonly model: string
  readonly threads: number
  readonly pp: number
  readonly tg: number
  /** Tokens already in the cache (not timed) before pp and before tg's prompt: llama-bench's -d. */
  readonly depth: number
  readonly nCtx: number
  /** llama.cpp's flash attention (node-llama-cpp's default is 'auto', which turns it on for CPU). */
  readonly flashAttention: FlashAttention
}

interface WorkerResult {
  readonly engine: Engine
  readonly threads: number
  /** Model load and context creation. */
  readonly loadMs: number
  readonly ppTokens: number
  readonly ppMs: number
  readonly tgTokens: number
  readonly tgMs: number
  /** RSS once the engine's code is loaded, before the model: the process's own share of peak RSS. */
  readonly baseRssMiB: number
  /** process.resourceUsage().maxRSS at the end. */
  readonly peakRssMiB: number
  /** Resident anonymous memory (heap, copies, KV cache) and file-backed memory (mapped weights) after tg. */
  readonly anonRssMiB: number
  readonly fileRssMiB: number
  /**
   * CPU time the process got during the timed pp and tg, divided by their wall time: about the
   * thread count when the threads ran (spinning counts), less when they were descheduled or slept.
   */
  readonly coresUsed: number
  /** The first generated tokens, to see that both engines ran the same model. */
  readonly firstTokens: number[]
  /** Engine-specific facts worth printing (llama.cpp: threads it used, flash attention). */
  readonly notes: Record<string, string | number | boolean>
}

// ---------------------------------------------------------------- worker (one measurement) -----

/** Deterministic prompt ids among the first 512 tokens (real tokens in every bench model), skipping 0-2 (unk, bos, eos). */
function promptIds(n: number, nVocab: number): number[] {
  const m = Math.min(nVocab, 512) - 3
  return Array.from({length: n}, (_, i) => 3 + ((i * 7919 + 13) % m))
}

/** The depth's ids, then pp's, and tg's short prompt after the depth (as llama_direct.c builds them). */
function benchIds(o: WorkerOptions, nVocab: number): {depth: number[]; prompt: number[]; tgPrompt: number[]} {
  const ids = promptIds(o.depth + Math.max(o.pp, TG_PROMPT), nVocab)
  return {depth: ids.slice(0, o.depth), prompt: ids.slice(o.depth, o.depth + o.pp), tgPrompt: ids.slice(o.depth, o.depth + TG_PROMPT)}
}

function vocabSize(path: string): number {
  const embd = readGgufModel(path).tensors.find((t) => t.name === 'token_embd.weight')
  if (!embd?.shape[1]) throw new Error(`${path} has no token_embd.weight`)
  return embd.shape[1]
}

const mib = (bytes: number) => bytes / 2 ** 20
const rssMiB = () => mib(process.memoryUsage().rss)
/** maxRSS is in KiB on Linux and macOS. */
const peakRssMiB = () => process.resourceUsage().maxRSS / 1024

/** A field of /proc/self/status (RssAnon, RssFile) in MiB; NaN where there is none. */
function statusMiB(field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))
    return m ? Number(m[1]) / 1024 : NaN
  } catch {
    return NaN
  }
}

/** Starts a meter; calling the result gives the process's CPU seconds (all threads) per wall second since. */
function cpuMeter(): () => number {
  const c0 = process.cpuUsage()
  const w0 = performance.now()
  return () => {
    const c = process.cpuUsage(c0)
    return (c.user + c.system) / 1000 / (performance.now() - w0)
  }
}

async function workerRunner(o: WorkerOptions): Promise<WorkerResult> {
  const {Model, loadAddon} = await import('../src/lib/engine/index.js')
  const {resolveSamplingOptions} = await import('../src/lib/sampling/index.js')
  loadAddon()
  const baseRssMiB = rssMiB()
  const t0 = performance.now()
  const model = await Model.load(o.model)
  const ctx = await model.createContext({nCtx: o.nCtx, nBatch: N_BATCH, threads: o.threads, kvType: 'f16'})
  const loadMs = performance.now() - t0
  const {depth, prompt, tgPrompt} = benchIds(o, vocabSize(o.model))
  const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n})

  await ctx.generate(prompt.slice(0, WARM_PROMPT), {maxTokens: WARM_GEN, sampling, stopTokens: [], pos: 0}).result
  ctx.kvTruncate(0)
  if (o.depth > 0) await ctx.decode(depth, {pos: 0, logits: 'none'})

  const cpu = cpuMeter()
  const t1 = performance.now()
  await ctx.decode(prompt, {pos: o.depth, logits: 'last'})
  const ppMs = performance.now() - t1
  if (ctx.nPast !== o.depth + o.pp) throw new Error(`runner: the cache holds ${ctx.nPast} positions after pp, expected ${o.depth + o.pp}`)
  ctx.kvTruncate(o.depth)

  const r = await ctx.generate(tgPrompt, {maxTokens: o.tg + 1, sampling, stopTokens: [], pos: o.depth}).result
  if (r.tokens.length !== o.tg + 1)
    throw new Error(`runner: generated ${r.tokens.length} tokens, expected ${o.tg + 1} (finish: ${r.finishReason})`)
  const coresUsed = cpu()
  const anonRssMiB = statusMiB('RssAnon')
  const fileRssMiB = statusMiB('RssFile')
  ctx.dispose()
  model.dispose()
  return {
    engine: 'runner',
    anonRssMiB,
    fileRssMiB,
    threads: o.threads,
    loadMs,
    ppTokens: o.pp,
    ppMs,
    tgTokens: o.tg,
    tgMs: r.decodeMs,
    baseRssMiB,
    peakRssMiB: peakRssMiB(),
    coresUsed,
    firstTokens: r.tokens.slice(0, 16),
    notes: {},
  }
}

async function workerLlamaCpp(o: WorkerOptions): Promise<WorkerResult> {
  const {getLlama, LlamaLogLevel} = await import('node-llama-cpp')
  const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  const baseRssMiB = rssMiB()
  const t0 = performance.now()
  const model = await llama.loadModel({modelPath: o.model})
  const ctx = await model.createContext({
    contextSize: o.nCtx,
    batchSize: N_BATCH,
    threads: {ideal: o.threads, min: o.threads},
    flashAttention: FLASH_ATTENTION[o.flashAttention],
  })
  const loadMs = performance.now() - t0
  const seq = ctx.getSequence()
  const {depth, prompt, tgPrompt} = benchIds(o, vocabSize(o.model))
  type Tokens = Parameters<typeof seq.evaluate>[0]

  /** Evaluate `prompt`, then generate until `n` tokens came out; ms between the first and the last. */
  const generate = async (prompt: number[], n: number): Promise<{ms: number; tokens: number[]}> => {
    const tokens: number[] = []
    let first = 0
    // yieldEogToken: an end-of-generation token must not end the run early (ours gets stopTokens: []).
    for await (const token of seq.evaluate(prompt as Parameters<typeof seq.evaluate>[0], {temperature: 0, yieldEogToken: true})) {
      if (tokens.length === 0) first = performance.now()
      tokens.push(token)
      if (tokens.length === n) break
    }
    const ms = performance.now() - first
    if (tokens.length !== n) throw new Error(`llama.cpp: generated ${tokens.length} tokens, expected ${n}`)
    return {ms, tokens}
  }

  await generate(prompt.slice(0, WARM_PROMPT), WARM_GEN)
  await seq.clearHistory()
  if (o.depth > 0) await seq.evaluateWithoutGeneratingNewTokens(depth as Tokens)

  const cpu = cpuMeter()
  const t1 = performance.now()
  await seq.evaluateWithoutGeneratingNewTokens(prompt as Tokens)
  const ppMs = performance.now() - t1
  if (seq.nextTokenIndex !== o.depth + o.pp)
    throw new Error(`llama.cpp: the sequence holds ${seq.nextTokenIndex} tokens after pp, expected ${o.depth + o.pp}`)
  await seq.eraseContextTokenRanges([{start: o.depth, end: seq.nextTokenIndex}])

  const tg = await generate(tgPrompt, o.tg + 1)
  const coresUsed = cpu()
  const notes = {threadsUsed: ctx.currentThreads}
  const anonRssMiB = statusMiB('RssAnon')
  const fileRssMiB = statusMiB('RssFile')
  await ctx.dispose()
  await model.dispose()
  return {
    engine: 'llama.cpp',
    anonRssMiB,
    fileRssMiB,
    threads: o.threads,
    loadMs,
    ppTokens: o.pp,
    ppMs,
    tgTokens: o.tg,
    tgMs: tg.ms,
    baseRssMiB,
    peakRssMiB: peakRssMiB(),
    coresUsed,
    firstTokens: tg.tokens.slice(0, 16),
    notes,
  }
}

async function worker(o: WorkerOptions): Promise<void> {
  if (C_DRIVER_FLASH[o.engine]) throw new Error(`${o.engine} runs as its own C program, not as a worker`)
  const result = o.engine === 'runner' ? await workerRunner(o) : await workerLlamaCpp(o)
  process.stdout.write(`${RESULT_MARK}${JSON.stringify(result)}\n`)
}

// ---------------------------------------------------------------- parent -----------------------

interface BenchModel {
  readonly label: string
  readonly path: string
}

/** Run one worker; resolves with its result, or rejects with its stderr. */
function runWorker(o: WorkerOptions, tools: NativeTools | undefined): Promise<WorkerResult> {
  let command = process.execPath
  let args = [
    '--import',
    'tsx',
    SCRIPT,
    '--worker',
    o.engine,
    '--model',
    o.model,
    '--threads',
    String(o.threads),
    '--pp',
    String(o.pp),
    '--tg',
    String(o.tg),
    '--depth',
    String(o.depth),
  ]
  args.push('--n-ctx', String(o.nCtx), '--flash-attention', o.flashAttention)
  const cFlash = C_DRIVER_FLASH[o.engine]
  if (cFlash) {
    if (!tools) throw new Error('the llama.cpp C driver was not built')
    command = tools.llamaDirect
    args = [o.model, String(o.threads), String(o.pp), String(o.tg), String(o.nCtx), LLAMA_BINS, cFlash, String(o.depth)]
  }
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, {cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe']})
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith(RESULT_MARK))
      if (code === 0 && line) resolveRun({...(JSON.parse(line.slice(RESULT_MARK.length)) as WorkerResult), engine: o.engine})
      else
        reject(
          new Error(
            `${o.engine} worker on ${basename(o.model)} (${o.threads} threads) exited with ${signal ?? code}:\n${err.trim() || out.trim()}`,
          ),
        )
    })
  })
}

/** node-llama-cpp's prebuilt llama.cpp for this platform: libllama, libggml and the CPU backend variants. */
const LLAMA_BINS = join(ROOT, `node_modules/@node-llama-cpp/${process.platform}-${process.arch}/bins/${process.platform}-${process.arch}`)
const NODE_LLAMA_CPP = join(ROOT, 'node_modules/node-llama-cpp/llama')

interface NativeTools {
  readonly llamaDirect: string
  readonly membw: string
}

function run(command: string, args: string[], cwd = ROOT): string {
  const r = spawnSync(command, args, {cwd, encoding: 'utf8', maxBuffer: 64 << 20})
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${r.stderr || r.stdout}`)
  return r.stdout
}

/**
 * Build the C driver of llama.cpp and the bandwidth probe into the cache: llama.cpp's headers come
 * from the source bundle inside node-llama-cpp (the exact release its binaries were built from),
 * the libraries from its prebuilt binaries.
 */
function buildNativeTools(cacheDir: string): NativeTools {
  const dir = join(cacheDir, 'native-bench')
  const headers = join(dir, 'llama-headers')
  mkdirSync(dir, {recursive: true})
  if (!existsSync(join(headers, 'include/llama.h'))) {
    const repo = join(dir, 'llama-src.git')
    rmSync(repo, {recursive: true, force: true})
    run('git', ['init', '-q', '--bare', repo])
    run('git', ['--git-dir', repo, 'fetch', '-q', join(NODE_LLAMA_CPP, 'gitRelease.bundle'), 'HEAD'])
    mkdirSync(headers, {recursive: true})
    const tar = join(dir, 'headers.tar')
    run('git', ['--git-dir', repo, 'archive', '-o', tar, 'FETCH_HEAD', 'include', 'ggml/include'])
    run('tar', ['-xf', tar, '-C', headers])
    rmSync(repo, {recursive: true, force: true})
    rmSync(tar, {force: true})
  }
  const src = join(ROOT, 'scripts/native-bench')
  const llamaDirect = join(dir, 'llama_direct')
  const libs = ['libllama.v0.5.0.so', 'libggml.v0.5.0.so', 'libggml-base.so'].map((l) => join(LLAMA_BINS, l))
  run('cc', [
    '-O2',
    '-std=c11',
    '-Wall',
    '-I',
    join(headers, 'include'),
    '-I',
    join(headers, 'ggml/include'),
    join(src, 'llama_direct.c'),
    '-o',
    llamaDirect,
    ...libs,
    `-Wl,-rpath,${LLAMA_BINS}`,
  ])
  const membw = join(dir, 'membw')
  run('cc', ['-O2', '-Wall', '-pthread', join(src, 'membw.c'), '-o', membw])
  return {llamaDirect, membw}
}

/** Best read bandwidth (GB/s) of `threads` threads over 1 GiB. */
function readBandwidth(tools: NativeTools, threads: number): number {
  return (JSON.parse(run(tools.membw, [String(threads), '1024', '5'])) as {readGBs: number}).readGBs
}

function spawnChecked(args: string[]): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, {cwd: ROOT, env: process.env, stdio: ['ignore', 'inherit', 'inherit']})
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolveRun() : reject(new Error(`${args.join(' ')} exited with ${code}`))))
  })
}

/** True when `path` is a GGUF of the bench shape with 2-D weights of `type`. */
function matchesSuiteModel(path: string, shape: SuiteShape, type: string): boolean {
  try {
    const g = readGgufModel(path)
    const u = (key: string) => g.metadata.get(`${shape.arch}.${key}`)?.value
    const attnQ = g.tensors.find((t) => t.name === 'blk.0.attn_q.weight')
    const embd = g.tensors.find((t) => t.name === 'token_embd.weight')
    return (
      g.metadata.get('general.architecture')?.value === shape.arch &&
      u('embedding_length') === shape.nEmbd &&
      u('block_count') === shape.nLayer &&
      u('attention.head_count') === shape.nHead &&
      u('attention.head_count_kv') === shape.nHeadKv &&
      u('feed_forward_length') === shape.nFf &&
      u('context_length') === shape.context &&
      u('expert_count') === shape.experts?.count &&
      u('expert_used_count') === shape.experts?.used &&
      embd?.shape[1] === shape.vocab &&
      attnQ?.type.name.toLowerCase() === type
    )
  } catch {
    return false
  }
}

/** Build (or reuse from the cache) a bench model of one shape and weight type. */
async function suiteModel(cacheDir: string, s: SuiteShape, type: string): Promise<BenchModel> {
  const x = s.experts ? `-x${s.experts.count}k${s.experts.used}f${s.experts.ff}` : ''
  const name = `${s.name}-shape-e${s.nEmbd}-l${s.nLayer}-h${s.nHead}-kv${s.nHeadKv}-ff${s.nFf}${x}-v${s.vocab}-c${s.context}-s${s.seed}-${type}.gguf`
  const path = join(cacheDir, name)
  const label = `${s.label} ${type.toUpperCase()}`
  if (existsSync(path) && matchesSuiteModel(path, s, type)) {
    process.stderr.write(`reusing ${path}\n`)
    return {label, path}
  }
  mkdirSync(cacheDir, {recursive: true})
  const tmp = `${path}.tmp-${process.pid}`
  process.stderr.write(`writing ${path} (a minute or two)\n`)
  try {
    await spawnChecked([
      '--import',
      'tsx',
      join(ROOT, 'scripts/make-test-model.ts'),
      '--out',
      tmp,
      '--type',
      type,
      '--arch',
      s.arch,
      '--n-embd',
      String(s.nEmbd),
      '--n-layer',
      String(s.nLayer),
      '--n-head',
      String(s.nHead),
      '--n-head-kv',
      String(s.nHeadKv),
      '--n-ff',
      String(s.nFf),
      '--vocab',
      String(s.vocab),
      '--context',
      String(s.context),
      '--seed',
      String(s.seed),
      ...(s.experts
        ? ['--experts', String(s.experts.count), '--experts-used', String(s.experts.used), '--expert-ff', String(s.experts.ff)]
        : []),
    ])
    if (!matchesSuiteModel(tmp, s, type)) throw new Error(`make-test-model.ts wrote ${tmp}, but it is not the ${type} model asked for`)
    renameSync(tmp, path)
  } finally {
    rmSync(tmp, {force: true})
  }
  return {label, path}
}

/**
 * Read the whole file once, so that it sits in the page cache before the first worker maps it:
 * otherwise whichever engine runs first pays for the disk (seconds for a 1 GB file).
 */
function warmPageCache(path: string): void {
  const fd = openSync(path, 'r')
  try {
    const buf = Buffer.allocUnsafe(16 << 20)
    while (readSync(fd, buf, 0, buf.length, null) > 0);
  } finally {
    closeSync(fd)
  }
}

/**
 * Bytes of weights one decoded token reads: every weight tensor once, but one row of token_embd
 * (unless it is also the output) and only the used experts' share of expert tensors.
 */
function weightBytesPerToken(path: string): number {
  const g = readGgufModel(path)
  const arch = String(g.metadata.get('general.architecture')?.value)
  const experts = Number(g.metadata.get(`${arch}.expert_count`)?.value ?? 0)
  const used = Number(g.metadata.get(`${arch}.expert_used_count`)?.value ?? 0)
  const tied = !g.tensors.some((t) => t.name === 'output.weight')
  let bytes = 0
  for (const t of g.tensors) {
    if (t.name === 'token_embd.weight' && !tied) bytes += t.byteSize / (t.shape[1] ?? 1)
    // A mixture of experts reads only the chosen experts' slices of the fused expert tensors.
    else if (experts > 0 && /_exps\.weight$/.test(t.name)) bytes += (t.byteSize * used) / experts
    else bytes += t.byteSize
  }
  return bytes
}

interface Stats {
  median: number
  min: number
  max: number
}

function stats(values: number[]): Stats {
  const v = [...values].sort((a, b) => a - b)
  const n = v.length
  const median = n === 0 ? NaN : n % 2 ? v[(n - 1) / 2]! : (v[n / 2 - 1]! + v[n / 2]!) / 2
  return {median, min: v[0] ?? NaN, max: v[n - 1] ?? NaN}
}

interface EngineSummary {
  runs: WorkerResult[]
  errors: string[]
  ppTokS: Stats
  tgTokS: Stats
  peakRssMiB: Stats
  anonRssMiB: Stats
  fileRssMiB: Stats
  baseRssMiB: Stats
  loadMs: Stats
  coresUsed: Stats
  /** Weight bytes per token × median tg tok/s. */
  tgGBs: number
}

interface CaseSummary {
  model: string
  file: string
  fileMiB: number
  weightMiBPerToken: number
  threads: number
  pp: number
  tg: number
  depth: number
  /** Measured read bandwidth of this many threads (scripts/native-bench/membw.c), GB/s. */
  bandwidthGBs?: number
  engines: Partial<Record<Engine, EngineSummary>>
  /** Ratios of medians, ours / the reference engine (absent unless both ran). */
  ratios: Partial<Record<Reference, {pp: number; tg: number; peakRss: number}>>
  /** Whether our first greedy tokens equal the reference's (a check that both ran the same model). */
  sameFirstTokens: Partial<Record<Reference, boolean>>
}

function summarize(runs: WorkerResult[], errors: string[], weightBytes: number): EngineSummary {
  const tg = stats(runs.map((r) => (1000 * r.tgTokens) / r.tgMs))
  return {
    runs,
    errors,
    ppTokS: stats(runs.map((r) => (1000 * r.ppTokens) / r.ppMs)),
    tgTokS: tg,
    peakRssMiB: stats(runs.map((r) => r.peakRssMiB)),
    anonRssMiB: stats(runs.map((r) => r.anonRssMiB)),
    fileRssMiB: stats(runs.map((r) => r.fileRssMiB)),
    baseRssMiB: stats(runs.map((r) => r.baseRssMiB)),
    loadMs: stats(runs.map((r) => r.loadMs)),
    coresUsed: stats(runs.map((r) => r.coresUsed)),
    tgGBs: (weightBytes * tg.median) / 1e9,
  }
}

function nodeLlamaCppVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules/node-llama-cpp/package.json'), 'utf8')) as {version: string}).version
  } catch {
    return 'unknown'
  }
}

const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-')
const range = (s: Stats, digits = 1) =>
  Number.isFinite(s.median) ? `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})` : '-'

function markdown(header: Record<string, string | number>, cases: CaseSummary[]): string {
  const lines: string[] = []
  for (const [k, v] of Object.entries(header)) lines.push(`- ${k}: ${v}`)
  lines.push(
    '',
    'Speed: tokens per second, median (min–max) over the reps. "C" is llama.cpp driven from C with a persistent thread pool, with flash attention off and at its default (auto: on for CPU); "node" is the same library through node-llama-cpp. Depth: tokens already in the cache (llama-bench -d). Ratios: median ours / median theirs (above 1: we are faster). Every pp case also measures tg at its depth; the tg table shows the first case of each depth (--json has them all).',
    '',
  )
  const cell = (e: EngineSummary | undefined, pick: (e: EngineSummary) => Stats) => (e ? (e.runs.length ? range(pick(e)) : 'failed') : '-')
  const ratio = (c: CaseSummary, ref: Reference, k: 'pp' | 'tg') => (c.ratios[ref] ? `${fmt(c.ratios[ref]![k], 2)}x` : '-')
  const refs = REFERENCES.filter((r) => cases.some((c) => c.engines[r]))
  // A table per measurement and each distinct tg length (tg is measured once per case; pp per length).
  for (const k of ['pp', 'tg'] as const) {
    lines.push(`| model | threads | ${k} | depth | runner | ${refs.map((r) => `${ENGINE_LABEL[r]} | vs ${ENGINE_LABEL[r]}`).join(' | ')} |`)
    lines.push(`|---|---:|---:|---:|---:|${refs.map(() => '---:|---:|').join('')}`)
    const pick = (e: EngineSummary) => (k === 'pp' ? e.ppTokS : e.tgTokS)
    const seen = new Set<string>()
    for (const c of cases) {
      const n = k === 'pp' ? c.pp : c.tg
      const key = `${c.model}/${c.threads}/${n}/${c.depth}`
      if (seen.has(key)) continue // tg at this depth again (each pp case measures it once more): the first case's is shown
      seen.add(key)
      const cols = refs.map((r) => `${cell(c.engines[r], pick)} | ${ratio(c, r, k)}`)
      lines.push(`| ${c.model} | ${c.threads} | ${n} | ${c.depth} | ${cell(c.engines.runner, pick)} | ${cols.join(' | ')} |`)
    }
    lines.push('')
  }
  lines.push(
    'Memory and decode bandwidth: peak RSS of the whole process (median, min–max); anonymous and file-backed RSS after decode (medians: mapped weights are file-backed, copies and caches anonymous); cores used = CPU time / wall time over the timed pp and tg; tg GB/s = weight bytes read per token × median tg tok/s, and its share of the measured read bandwidth of that many threads.',
    '',
  )
  lines.push(
    '| model | threads | pp | depth | engine | peak RSS MiB | anon MiB | file MiB | load ms | cores used | weights/token MiB | tg GB/s | of bandwidth | notes |',
  )
  lines.push('|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const c of cases) {
    for (const engine of ENGINES) {
      const e = c.engines[engine]
      if (!e) continue
      const notes = [
        ...Object.entries(e.runs[0]?.notes ?? {}).map(([k, v]) => `${k}=${v}`),
        ...(e.errors.length ? [`${e.errors.length} failed`] : []),
      ]
      const share = c.bandwidthGBs ? `${fmt((100 * e.tgGBs) / c.bandwidthGBs, 0)} %` : '-'
      lines.push(
        `| ${c.model} | ${c.threads} | ${c.pp} | ${c.depth} | ${ENGINE_LABEL[engine]} | ${range(e.peakRssMiB, 0)} | ${fmt(e.anonRssMiB.median, 0)} | ${fmt(e.fileRssMiB.median, 0)} | ${fmt(e.loadMs.median, 0)} | ${fmt(e.coresUsed.median, 2)} | ${fmt(c.weightMiBPerToken, 1)} | ${fmt(e.tgGBs, 2)} | ${share} | ${notes.join(', ')} |`,
      )
    }
  }
  const differ = cases.flatMap((c) =>
    REFERENCES.filter((r) => c.sameFirstTokens[r] === false).map(
      (r) => `${c.model} vs ${ENGINE_LABEL[r]} (${c.threads} thread${c.threads > 1 ? 's' : ''}, depth ${c.depth})`,
    ),
  )
  if (differ.length) lines.push('', `Note: the first 16 greedy tokens differ on: ${differ.join(', ')}.`)
  return `${lines.join('\n')}\n`
}

const USAGE = `usage: npm run bench -- (--model FILE ... | --suite) [--threads 1,2] [--reps 3] [--pp 512,2048] [--tg 128]
       [--depth 0,4096] [--engines runner,llama.cpp-c] [--flash-attention off|on|auto] [--cache-dir DIR] [--json]
       npm run bench -- --from-json FILE

  --model FILE      a GGUF file to measure (repeatable)
  --suite           the standard bench models: TinyLlama-1.1B-shaped random weights in Q4_0, Q8_0,
                    Q4_K, Q6_K and F16, a Qwen3-MoE-shaped mixture of experts (32 experts, 4 per
                    token) in Q4_0, a SmolLM2-135M-shaped model in Q8_0
                    (written once by make-test-model.ts into --cache-dir, then reused) and
                    ../shared/models/stories260K.gguf
  --threads LIST    thread counts, comma-separated (default: 1 and the physical cores)
  --reps N          measurements per engine, file and thread count, each in a fresh process (default 3)
  --pp LIST         prompt lengths, comma-separated, each processed in batches of 512 (default 512)
  --tg N            tokens generated after a short prompt (default 128)
  --depth LIST      tokens already in the cache before pp and tg (not timed), as llama-bench -d;
                    comma-separated (default 0)
  --engines LIST    runner, llama.cpp-c (llama.cpp from C, persistent thread pool, flash attention
                    off), llama.cpp-c-fa (the same with flash attention auto, llama.cpp's default),
                    llama.cpp (through node-llama-cpp); default all four
  --flash-attention off|on|auto
                    node-llama-cpp's flash attention (default off: our attention's numerics follow
                    llama.cpp's non-fused path, so both then generate the same greedy tokens;
                    node-llama-cpp's own default is auto, i.e. on for CPU)
  --cache-dir DIR   where --suite keeps its models (default: $TMPDIR/runner-bench)
  --json            print the results as JSON instead of markdown tables
  --from-json FILE  print the tables of a saved --json run (measures nothing)

example: npm run bench -- --suite --threads 1,2 --reps 3
         npm run bench -- --model tiny.gguf --threads 2 --pp 512,2048,4096 --depth 0,4096 --engines runner,llama.cpp-c,llama.cpp-c-fa
needs: cc (the C driver and the probe are compiled into --cache-dir on first use)`

function nonNegativeInt(flag: string, v: string): number {
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${flag} must be a non-negative integer, got ${v}`)
  return n
}

function positiveInt(flag: string, v: string): number {
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got ${v}`)
  return n
}

async function main(): Promise<void> {
  const {values} = parseArgs({
    options: {
      model: {type: 'string', multiple: true},
      suite: {type: 'boolean', default: false},
      threads: {type: 'string'},
      reps: {type: 'string', default: '3'},
      pp: {type: 'string', default: '512'},
      tg: {type: 'string', default: '128'},
      depth: {type: 'string', default: '0'},
      engines: {type: 'string', default: ENGINES.join(',')},
      'flash-attention': {type: 'string', default: 'off'},
      'cache-dir': {type: 'string', default: join(tmpdir(), 'runner-bench')},
      json: {type: 'boolean', default: false},
      'from-json': {type: 'string'},
      worker: {type: 'string'},
      'n-ctx': {type: 'string'},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (values['from-json'] !== undefined) {
    const saved = JSON.parse(readFileSync(values['from-json'], 'utf8')) as Record<string, unknown> & {cases: CaseSummary[]}
    const {cases, ...header} = saved
    process.stdout.write(markdown(header as Record<string, string | number>, cases))
    return
  }
  const ppList = values.pp.split(',').map((v) => positiveInt('pp', v.trim()))
  const depthList = values.depth.split(',').map((v) => nonNegativeInt('depth', v.trim()))
  const tg = positiveInt('tg', values.tg)
  const flashAttention = values['flash-attention'] as FlashAttention
  if (!(flashAttention in FLASH_ATTENTION)) throw new Error(`--flash-attention ${flashAttention} must be off, on or auto`)
  // Room for the depth and the pp run, and for the tg run's short prompt and its tokens after the depth.
  const contextFor = (pp: number, depth: number) =>
    values['n-ctx'] ? positiveInt('n-ctx', values['n-ctx']) : Math.max(1024, depth + pp, depth + TG_PROMPT + tg + 1)

  if (values.worker !== undefined) {
    const engine = values.worker as Engine
    if (!ENGINES.includes(engine)) throw new Error(`--worker ${values.worker} must be one of ${ENGINES.join(', ')}`)
    const model = values.model?.[0]
    if (!model || values.model?.length !== 1) throw new Error('--worker needs exactly one --model')
    const [pp, depth] = [ppList[0]!, depthList[0]!]
    const threads = positiveInt('threads', values.threads ?? '1')
    await worker({engine, model, threads, pp, tg, depth, nCtx: contextFor(pp, depth), flashAttention})
    return
  }

  const threads = (values.threads ?? [...new Set([1, defaultThreads()])].join(',')).split(',').map((t) => positiveInt('threads', t.trim()))
  const reps = positiveInt('reps', values.reps)
  const engines = values.engines.split(',').map((e) => e.trim())
  for (const e of engines) if (!ENGINES.includes(e as Engine)) throw new Error(`--engines: ${e} is not one of ${ENGINES.join(', ')}`)
  const models: BenchModel[] = (values.model ?? []).map((p) => ({label: basename(p).replace(/\.gguf$/, ''), path: resolve(p)}))
  if (values.suite) {
    for (const type of SUITE_TYPES) models.push(await suiteModel(values['cache-dir'], TINYLLAMA, type))
    for (const type of SUITE_MOE_TYPES) models.push(await suiteModel(values['cache-dir'], QWEN3MOE, type))
    for (const type of SUITE_SMALL_TYPES) models.push(await suiteModel(values['cache-dir'], SMOLLM2, type))
    models.push({label: 'stories260K', path: STORIES})
  }
  if (models.length === 0) {
    process.stderr.write(`${USAGE}\n`)
    process.exitCode = 2
    return
  }
  for (const m of models) if (!existsSync(m.path)) throw new Error(`${m.path} does not exist`)

  const header: Record<string, string | number> = {
    date: new Date().toISOString(),
    cpu: `${cpuModel()} (${cpus().length} logical CPUs)`,
    node: process.version,
    'node-llama-cpp': nodeLlamaCppVersion(),
    addon: process.env.RUNNER_NATIVE_ADDON ?? 'native/build (default)',
    threads: threads.join(', '),
    'node-llama-cpp flash attention': flashAttention,
    kernels: describeKernels(kernelSet(cpuFeatures(), amxStatus().state)),
    reps,
    pp: ppList.join(', '),
    depth: depthList.join(', '),
    tg,
    'load average (1, 5, 15 min) at start': loadavg()
      .map((l) => l.toFixed(2))
      .join(', '),
  }
  process.stderr.write(`bench: ${header.cpu}, ${header.date}\n`)
  const tools = buildNativeTools(values['cache-dir'])
  const bandwidth = new Map(threads.map((t) => [t, readBandwidth(tools, t)]))
  header['read bandwidth GB/s (threads: GB/s, 1 GiB, best of 5)'] = [...bandwidth].map(([t, b]) => `${t}: ${b.toFixed(1)}`).join(', ')

  const cases: CaseSummary[] = []
  const total = models.length * threads.length * ppList.length * depthList.length * reps * engines.length
  let done = 0
  for (const m of models) {
    const weightBytes = weightBytesPerToken(m.path)
    warmPageCache(m.path)
    for (const [t, pp, depth] of threads.flatMap((t) => ppList.flatMap((pp) => depthList.map((d) => [t, pp, d] as const)))) {
      const nCtx = contextFor(pp, depth)
      const runs = Object.fromEntries(ENGINES.map((e) => [e, [] as WorkerResult[]])) as Record<Engine, WorkerResult[]>
      const errors = Object.fromEntries(ENGINES.map((e) => [e, [] as string[]])) as Record<Engine, string[]>
      for (let rep = 0; rep < reps; rep++) {
        for (const engine of engines as Engine[]) {
          done++
          const prefix = `[${done}/${total}] ${m.label}, ${t} thread${t > 1 ? 's' : ''}, pp ${pp}, depth ${depth}, ${engine}, rep ${rep + 1}/${reps}`
          try {
            const r = await runWorker({engine, model: m.path, threads: t, pp, tg, depth, nCtx, flashAttention}, tools)
            runs[engine].push(r)
            process.stderr.write(
              `${prefix}: pp ${fmt((1000 * r.ppTokens) / r.ppMs)} tok/s, tg ${fmt((1000 * r.tgTokens) / r.tgMs)} tok/s, peak RSS ${fmt(r.peakRssMiB, 0)} MiB, load ${fmt(r.loadMs, 0)} ms\n`,
            )
          } catch (error) {
            const message = (error as Error).message
            errors[engine].push(message)
            process.stderr.write(`${prefix}: FAILED\n${message}\n`)
          }
        }
      }
      const c: CaseSummary = {
        model: m.label,
        file: m.path,
        fileMiB: mib(statSync(m.path).size),
        weightMiBPerToken: mib(weightBytes),
        threads: t,
        pp,
        tg,
        depth,
        bandwidthGBs: bandwidth.get(t),
        engines: {},
        ratios: {},
        sameFirstTokens: {},
      }
      for (const engine of engines as Engine[]) c.engines[engine] = summarize(runs[engine], errors[engine], weightBytes)
      const o = c.engines.runner
      for (const ref of REFERENCES) {
        const l = c.engines[ref]
        if (!o?.runs.length || !l?.runs.length) continue
        c.ratios[ref] = {
          pp: o.ppTokS.median / l.ppTokS.median,
          tg: o.tgTokS.median / l.tgTokS.median,
          peakRss: o.peakRssMiB.median / l.peakRssMiB.median,
        }
        c.sameFirstTokens[ref] = JSON.stringify(o.runs[0]!.firstTokens) === JSON.stringify(l.runs[0]!.firstTokens)
      }
      cases.push(c)
    }
  }

  header['load average (1, 5, 15 min) at end'] = loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')
  if (values.json) process.stdout.write(`${JSON.stringify({...header, cases}, null, 2)}\n`)
  else process.stdout.write(markdown(header, cases))
  if (cases.some((c) => Object.values(c.engines).some((e) => e.errors.length > 0))) process.exitCode = 1
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${(error as Error).message}\n`)
  process.exitCode = 1
})
