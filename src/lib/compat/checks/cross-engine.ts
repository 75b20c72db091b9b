/**
 * `cross_engine`: the engine against llama.cpp run live (node-llama-cpp 3.22.1, a devDependency:
 * CPU, one thread, F32 KV cache, flash attention off), on the same file and the same prompt: the
 * same tokenization, teacher-forced log-probabilities within the weight type's tolerance, and greedy
 * tokens equal step for step until a step where llama.cpp's own top-1/top-2 margin is below the
 * tolerance (the margin rule of ../shared/reference/README.md). As test/helpers/llama-cpp.ts does.
 */
import {join} from 'node:path'

import type {Llama} from 'node-llama-cpp'

import {Model} from '../../engine/index.js'
import {type CheckClass, fail, numberParam, pass, stringParam} from '../types.js'
import {
  compareGreedy,
  describeDivergence,
  flipWeight,
  fmt,
  logprobDiffs,
  logprobOf,
  greedySampling,
  TOLERANCE_PARAMS,
  tolerances,
} from './engine-common.js'

/** 97 tokens with BOS in stories260K's vocabulary: well past three 16-token sliding windows. */
export const DEFAULT_PROMPT =
  'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park with her friends. ' +
  'One day, the ball rolled under a big tree, and Lily could not reach it. Her brother Tom came to help, and together they got it back.'
const DEFAULT_TOKENS = 24

type NodeLlamaCpp = typeof import('node-llama-cpp')
let started: Promise<{llama: Llama; lib: NodeLlamaCpp} | {reason: string}> | undefined

/** node-llama-cpp and its llama.cpp, started once per process (a Llama left undisposed does not keep Node alive). */
function llamaCpp(): Promise<{llama: Llama; lib: NodeLlamaCpp} | {reason: string}> {
  started ??= (async () => {
    let lib: NodeLlamaCpp
    try {
      lib = await import('node-llama-cpp')
    } catch {
      return {reason: 'node-llama-cpp is not installed'}
    }
    try {
      const llama = await lib.getLlama({
        gpu: false,
        build: 'never',
        skipDownload: true,
        progressLogs: false,
        logLevel: lib.LlamaLogLevel.error,
        logger: () => {},
      })
      return {llama, lib}
    } catch (error) {
      return {reason: `node-llama-cpp cannot start llama.cpp here: ${(error as Error).message}`}
    }
  })()
  return started
}

export const crossEngine: CheckClass = {
  name: 'cross_engine',
  summary:
    'same tokens, teacher-forced log-probabilities within tolerance and greedy tokens under the margin rule, against llama.cpp run live through node-llama-cpp',
  params: {
    prompt: {
      type: 'string',
      description:
        "the text both engines evaluate and continue (default: a fixed children's-story prompt, 97 tokens with stories260K's vocabulary)",
    },
    tokens: {type: 'integer', minimum: 1, description: `greedy tokens to compare (default ${DEFAULT_TOKENS})`},
    ...TOLERANCE_PARAMS,
  },
  async when() {
    const l = await llamaCpp()
    return 'reason' in l ? l.reason : undefined
  },
  async run(row, params, env) {
    const {tol, meanTol} = tolerances(row, params, {live: true})
    const prompt = stringParam(params, 'prompt', DEFAULT_PROMPT)
    const steps = numberParam(params, 'tokens', DEFAULT_TOKENS)
    if (!Number.isInteger(steps) || steps < 1) throw new TypeError(`parameter tokens must be a positive integer, got ${steps}`)
    const l = await llamaCpp()
    if ('reason' in l) return {outcome: 'not_executed', evidence: l.reason}

    // Test-only hook, never set in a real run: it exists to prove this check can fail. With
    // RUNNER_COMPAT_TEST_PERTURB=cross_engine our engine evaluates a copy of the model with one weight
    // changed (the largest |w| of output.weight set to 1e4), as a broken build would, while llama.cpp
    // evaluates the file itself.
    let ourPath = row.path
    if (process.env.RUNNER_COMPAT_TEST_PERTURB === 'cross_engine') {
      ourPath = join(env.tmpDir, 'cross-engine-perturbed.gguf')
      flipWeight(row.path, ourPath)
    }

    const ours = await Model.load(ourPath, {signal: env.signal})
    try {
      const ids = ours.tokenizer.encode(prompt, {addSpecial: true})
      const plain = ours.tokenizer.encode(prompt, {addSpecial: false})
      if (ids.length < 2) return fail(`the prompt is ${ids.length} token(s): nothing to score`)
      const nVocab = ours.config.nVocab
      const nCtx = Math.max(ids.length + steps, Math.min(256, ours.config.nCtxTrain))
      const theirsModel = await l.llama.loadModel({modelPath: row.path})
      try {
        const theirsCtx = await theirsModel.createContext({
          contextSize: nCtx,
          batchSize: nCtx,
          threads: 1,
          flashAttention: false,
          experimentalKvCacheKeyType: 'F32',
          experimentalKvCacheValueType: 'F32',
        })
        const ctx = await ours.createContext({nCtx, threads: env.threads, kvType: 'f32'})
        try {
          const theirIds = [...theirsModel.tokenize(prompt)]
          if (theirIds.join() !== plain.join()) {
            let i = 0
            while (plain[i] === theirIds[i]) i++
            return fail(
              `tokenization differs at token ${i}: ours ${plain[i] ?? 'end'}, llama.cpp ${theirIds[i] ?? 'end'} (${plain.length} vs ${theirIds.length} tokens)`,
            )
          }
          const seq = theirsCtx.getSequence()
          type Input = Parameters<typeof seq.controlledEvaluate>[0]

          // Teacher-forced: every position of the prompt, one batch each.
          const out = await seq.controlledEvaluate(ids.map((id) => [id, {generateNext: {logits: true}}]) as Input)
          env.signal.throwIfAborted()
          const logits = (await ctx.decode(ids, {pos: 0, logits: 'all', signal: env.signal}))!
          const theirRow = (i: number) => {
            const r = new Float32Array(nVocab).fill(-Infinity)
            for (const [t, v] of out[i]!.next.logits!) r[t] = v
            return r
          }
          const pairs = ids
            .slice(1)
            .map((target, i) => [logprobOf(logits.subarray(i * nVocab, (i + 1) * nVocab), target), logprobOf(theirRow(i), target)] as const)
          const d = logprobDiffs(pairs)

          // Greedy: llama.cpp step by step with its logits (for the margins), ours through generate.
          await seq.clearHistory()
          const theirTokens: number[] = []
          const margins: number[] = []
          let next = await seq.controlledEvaluate(
            ids.map((id, i) => (i === ids.length - 1 ? [id, {generateNext: {logits: true}}] : id)) as Input,
          )
          for (let step = 0; step < steps; step++) {
            env.signal.throwIfAborted()
            const r = [...next[next.length - 1]!.next.logits!.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])
            theirTokens.push(r[0]![0])
            margins.push(r[0]![1] - (r[1]?.[1] ?? -Infinity))
            if (step + 1 < steps) next = await seq.controlledEvaluate([[r[0]![0], {generateNext: {logits: true}}]] as Input)
          }
          const mine = (
            await ctx.generate(ids, {maxTokens: steps, sampling: greedySampling(), pos: 0, stopTokens: [], signal: env.signal}).result
          ).tokens
          env.signal.throwIfAborted()
          const c = compareGreedy(mine, theirTokens, margins, tol)

          // llama.cpp picks its CPU backend variant (and so its summation order) per machine: compared only against the same machine.
          const figures = {maxAbsLogprobDiff: {value: d.max, better: 'lower' as const, tolerance: 1, machine: true}}
          const lp = `max |Δ logprob| ${fmt(d.max)} (position ${d.at}, bound ${tol}), mean ${fmt(d.mean)} (bound ${meanTol}) over ${pairs.length} targets`
          const excuse = c.excusedBy
            ? ` (diverged at ${describeDivergence(c)}, after llama.cpp's margin ${fmt(c.excusedBy.margin)} at step ${c.excusedBy.step})`
            : ''
          const greedy = `greedy tokens matched ${c.matched}/${c.total}${excuse}`
          if (c.divergence && !c.excusedBy)
            return fail(`greedy: first divergence at ${describeDivergence(c)}; llama.cpp's margins up to it are >= ${tol}; ${lp}`, figures)
          if (!(d.max <= tol) || !(d.mean <= meanTol)) return fail(`${lp}; ${greedy}`, figures)
          return pass(`${ids.length}-token prompt: ${greedy}; ${lp}`, figures)
        } finally {
          ctx.dispose()
          await theirsCtx.dispose()
        }
      } finally {
        await theirsModel.dispose()
      }
    } finally {
      ours.dispose()
    }
  },
}
