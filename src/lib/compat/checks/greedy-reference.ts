/**
 * `greedy_reference`: the engine against llama.cpp's recorded outputs (../shared/reference/<name>.json,
 * llama.cpp through node-llama-cpp 3.22.1, one thread, F32 KV cache): every greedy continuation
 * token for token up to the README's margin rule, and the teacher-forced log-probabilities (and the
 * recorded full logit rows, within 4x the tolerance) within the weight type's tolerance.
 */
import {existsSync, readFileSync} from 'node:fs'

import {Model} from '../../engine/index.js'
import {type CheckClass, fail, pass} from '../types.js'
import {
  compareGreedy,
  describeDivergence,
  fmt,
  greedySampling,
  logprobDiffs,
  logprobOf,
  TOLERANCE_PARAMS,
  tolerances,
} from './engine-common.js'

interface Reference {
  readonly greedy: ReadonlyArray<{
    readonly prompt: string
    readonly prompt_ids: number[]
    readonly ids: number[]
    readonly margins: number[]
  }>
  readonly teacher_forced: {
    readonly ids: number[]
    readonly positions: ReadonlyArray<{readonly target: number; readonly logprob: number}>
    readonly full_logits?: Readonly<Record<string, number[]>>
  }
}

function readReference(path: string): Reference {
  const ref = JSON.parse(readFileSync(path, 'utf8')) as Reference
  if (!Array.isArray(ref.greedy) || !Array.isArray(ref.teacher_forced?.ids) || !Array.isArray(ref.teacher_forced.positions))
    throw new Error(`${path} has no greedy[] and teacher_forced sections`)
  return ref
}

export const greedyReference: CheckClass = {
  name: 'greedy_reference',
  summary:
    "greedy continuations token for token (up to the margin rule) and teacher-forced log-probabilities within tolerance, against llama.cpp's recorded outputs",
  params: TOLERANCE_PARAMS,
  async when(row) {
    if (row.reference === undefined) return 'no llama.cpp reference for this model'
    return undefined
  },
  async run(row, params, env) {
    const {tol, meanTol} = tolerances(row, params)
    // A reference the roster names but that is not there is a broken promise, not a missing one.
    if (!existsSync(row.reference!)) return fail(`the roster's reference ${row.reference} does not exist`)
    const ref = readReference(row.reference!)
    const model = await Model.load(row.path, {signal: env.signal})
    try {
      const nVocab = model.config.nVocab
      const nCtx = Math.max(ref.teacher_forced.ids.length, ...ref.greedy.map((g) => g.prompt_ids.length + g.ids.length))
      const ctx = await model.createContext({nCtx, threads: env.threads, kvType: 'f32'})
      try {
        // Greedy: each prompt from an empty cache, as many tokens as llama.cpp generated.
        let matched = 0
        let total = 0
        const excused: string[] = []
        for (const [i, g] of ref.greedy.entries()) {
          const ids = model.tokenizer.encode(g.prompt, {addSpecial: true})
          if (ids.join() !== g.prompt_ids.join())
            return fail(
              `greedy prompt ${i} ${JSON.stringify(g.prompt)}: tokenized as [${ids.join(',')}], llama.cpp [${g.prompt_ids.join(',')}]`,
            )
          const got = (
            await ctx.generate(g.prompt_ids, {maxTokens: g.ids.length, sampling: greedySampling(), pos: 0, signal: env.signal}).result
          ).tokens
          env.signal.throwIfAborted()
          const c = compareGreedy(got, g.ids, g.margins, tol)
          matched += c.matched
          total += c.total
          if (c.divergence && !c.excusedBy)
            return fail(
              `greedy prompt ${i}: first divergence at ${describeDivergence(c)}; every margin up to it is >= ${tol} (tokens matched ${matched}/${total} so far)`,
            )
          if (c.excusedBy)
            excused.push(
              `prompt ${i} diverged at ${describeDivergence(c)} after margin ${fmt(c.excusedBy.margin)} at step ${c.excusedBy.step}`,
            )
        }

        // Teacher-forced: one batch, every position's logits.
        const tf = ref.teacher_forced
        const logits = (await ctx.decode(tf.ids, {pos: 0, logits: 'all', signal: env.signal}))!
        const row = (i: number) => logits.subarray(i * nVocab, (i + 1) * nVocab)
        const d = logprobDiffs(tf.positions.map((p, i) => [logprobOf(row(i), p.target), p.logprob] as const))
        const figures = {maxAbsLogprobDiff: {value: d.max, better: 'lower' as const, tolerance: 1}}
        const lp = `max |Δ logprob| ${fmt(d.max)} (position ${d.at}, bound ${tol}), mean ${fmt(d.mean)} (bound ${meanTol})`
        const greedyText = `tokens matched ${matched}/${total}${excused.length > 0 ? ` (${excused.join('; ')})` : ''}`
        if (!(d.max <= tol) || !(d.mean <= meanTol)) return fail(`${lp}; ${greedyText}`, figures)
        for (const [pos, want] of Object.entries(tf.full_logits ?? {})) {
          const ours = row(Number(pos))
          let worst = 0
          want.forEach((v, i) => {
            const x = Math.abs(v - ours[i]!)
            if (!(x <= worst)) worst = Number.isNaN(x) ? Infinity : x
          })
          if (!(worst <= 4 * tol)) return fail(`position ${pos}: max |Δ logit| ${fmt(worst)} > ${4 * tol}; ${lp}; ${greedyText}`, figures)
        }
        return pass(`${greedyText}; ${lp}`, figures)
      } finally {
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
  },
}
