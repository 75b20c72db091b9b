/**
 * The measurement loop of `runner bench`, after llama-bench's (tools/llama-bench/llama-bench.cpp,
 * main): one loaded model; per test a context sized to it, an optional warm-up (the test's prompt
 * and one generated token), the depth evaluated once, then -r timed runs, each from the depth.
 *
 * Token contents are llama-bench's: no text is tokenized; a prompt is BOS (when the model adds one)
 * then random ids over the whole vocabulary, from a generator seeded the same on every run.
 * - pp: one Context.decode of n_prompt tokens (the engine steps through them n_batch at a time),
 *   logits of the last, as llama_decode of llama_batch_get_one.
 * - tg: n_gen forward passes of one token each: the native generation loop (Context.generate, what
 *   `runner run` decodes with) from a one-token prompt, greedy, no stop token, maxTokens n_gen (the
 *   prompt's pass and n_gen - 1 passes of generated tokens; the last token drawn is not evaluated).
 *   Unlike llama-bench's tg (random tokens, no sampling), each step includes the greedy pick, one
 *   argmax over the logits: what a user's generation costs.
 * - pg: pp then tg, timed together.
 * Each run is timed by the wall clock around it (performance.now), as llama-bench times its runs.
 */
import {type Context, Model, verifySignatureBeforeLoad} from '../engine/index.js'
import type {SignaturePolicy} from '../signing/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {readGgufModel} from '../gguf/index.js'
import {resolveSamplingOptions} from '../sampling/index.js'
import {SeededRandom} from '../util/index.js'
import {benchModelInfo, type BenchModelInfo} from './model-info.js'
import {type BenchParams, type BenchTest, contextFor, expandTests, testName} from './tests.js'

export interface BenchResult {
  readonly test: BenchTest
  /** KV positions of the test's context. */
  readonly nCtx: number
  /** When the test started, ISO 8601 to the second (llama-bench's test_time). */
  readonly testTime: string
  /** Wall time of each timed run, in nanoseconds. */
  readonly samplesNs: readonly number[]
}

/** What the loop is doing, for --progress (llama-bench's phases). */
export type BenchPhase = 'start' | 'warmup prompt' | 'warmup generation' | 'depth' | 'prompt' | 'generation'

export interface BenchEvent {
  readonly phase: BenchPhase
  /** 1-based index of the test among `total`. */
  readonly index: number
  readonly total: number
  readonly test: BenchTest
  /** 1-based repetition, for the timed phases. */
  readonly rep?: number
}

export interface BenchOptions {
  readonly modelPath: string
  readonly params: BenchParams
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
  readonly signal?: AbortSignal
  readonly onLoadProgress?: (done: number, total: number) => void
  /** Called once the model's header is read and the tests are checked, before the model loads. */
  readonly onStart?: (model: BenchModelInfo, tests: readonly BenchTest[]) => void
  readonly onEvent?: (event: BenchEvent) => void
  /** Each test's result as soon as it is measured (the writers print it then, as llama-bench does). */
  readonly onResult?: (result: BenchResult) => void
}

/** llama-bench's ids come from std::rand() never seeded: the same on every run; ours too. */
const TOKEN_SEED = 1n

/** The tests' contexts must fit the positions the model was trained on: refused before anything loads. */
function checkContexts(tests: readonly BenchTest[], model: BenchModelInfo): void {
  if (model.nCtxTrain === undefined) return
  const over = tests.find((t) => contextFor(t) > model.nCtxTrain!)
  if (!over) return
  throw new RunnerError(
    'BENCH_CONTEXT',
    `test ${testName(over)} needs ${contextFor(over)} positions (-d ${over.nDepth} + -p ${over.nPrompt} + -n ${over.nGen}), ` +
      `more than the ${model.nCtxTrain} the model was trained on (its context_length); use smaller -d, -p, -n or --pg values`,
    ExitCode.usage,
  )
}

export async function runBench(o: BenchOptions): Promise<BenchResult[]> {
  const tests = expandTests(o.params)
  if (tests.length === 0)
    throw new RunnerError('BENCH_NO_TESTS', 'no tests to run: -p and -n are all 0 and there is no --pg', ExitCode.usage)
  // The signature first: a refused model is neither parsed nor announced on stdout.
  const signed = await verifySignatureBeforeLoad(o.modelPath, o.signature)
  const info = benchModelInfo(o.modelPath, readGgufModel(o.modelPath))
  checkContexts(tests, info)
  o.onStart?.(info, tests)
  const model = await Model.load(o.modelPath, {
    onProgress: o.onLoadProgress,
    signal: o.signal,
    ...(signed ? {verifiedSignature: signed} : {}),
  })
  const results: BenchResult[] = []
  try {
    const rng = new SeededRandom(TOKEN_SEED)
    const {nVocab} = model.config
    const bos = model.tokenizer.addBos ? model.tokenizer.bos : undefined
    const prompt = (n: number) => Array.from({length: n}, (_, i) => (i === 0 && bos !== undefined ? bos : rng.nextU32() % nVocab))
    const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n})
    const signal = o.signal

    /** One prompt pass at `pos`; llama-bench's test_prompt. */
    const pp = (ctx: Context, n: number, pos: number) => ctx.decode(prompt(n), {pos, logits: 'last', signal})
    /** n forward passes of one token each; llama-bench's test_gen. */
    const tg = async (ctx: Context, n: number, pos: number) => {
      const r = await ctx.generate(prompt(1), {maxTokens: n, sampling, stopTokens: [], pos, signal}).result
      // generate ends an abort as a finish reason; decode throws the engine's ENGINE_ABORTED: one error for both.
      if (r.finishReason === 'aborted') throw new RunnerError('ENGINE_ABORTED', 'interrupted', ExitCode.interrupted)
      if (r.tokens.length !== n) throw new RunnerError('BENCH_SHORT', `generated ${r.tokens.length} tokens of ${n} (${r.finishReason})`)
    }

    for (const [i, test] of tests.entries()) {
      const event = (phase: BenchPhase, rep?: number) => o.onEvent?.({phase, index: i + 1, total: tests.length, test, rep})
      event('start')
      const testTime = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
      const nCtx = contextFor(test)
      // Each run rewinds to the depth, which a sliding-window ring may no longer serve (ENGINE_KV_EVICTED):
      // a test with a depth keeps the flat cache.
      const ctx = await model.createContext({
        nCtx,
        nBatch: test.nBatch,
        threads: test.threads,
        kvType: test.kvType,
        swaFull: test.nDepth > 0,
      })
      try {
        if (o.params.warmup) {
          if (test.nPrompt > 0) {
            event('warmup prompt')
            await pp(ctx, test.nPrompt, 0)
          }
          if (test.nGen > 0) {
            event('warmup generation')
            ctx.kvTruncate(0)
            await tg(ctx, 1, 0)
          }
          ctx.kvTruncate(0)
        }
        if (test.nDepth > 0) {
          // Evaluated once; each run starts from it (llama-bench restores a saved state instead).
          event('depth')
          await pp(ctx, test.nDepth, 0)
        }
        const samplesNs: number[] = []
        for (let rep = 1; rep <= o.params.repetitions; rep++) {
          ctx.kvTruncate(test.nDepth)
          const t0 = performance.now()
          if (test.nPrompt > 0) {
            event('prompt', rep)
            await pp(ctx, test.nPrompt, test.nDepth)
          }
          if (test.nGen > 0) {
            event('generation', rep)
            await tg(ctx, test.nGen, test.nDepth + test.nPrompt)
          }
          samplesNs.push(Math.round((performance.now() - t0) * 1e6))
        }
        const result: BenchResult = {test, nCtx, testTime, samplesNs}
        results.push(result)
        o.onResult?.(result)
      } finally {
        ctx.dispose()
      }
    }
  } finally {
    model.dispose()
  }
  return results
}
