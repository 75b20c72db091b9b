/**
 * `determinism`: the contract of ARCHITECTURE.md (a position's logits depend only on the model, the
 * tokens before it and the build), bitwise: every position's logits of a fixed ~40-token prompt are
 * the same bytes for 1 and 2 threads, for the whole prompt in one batch and in batches of 7, and for
 * the prompt decoded in one call and in three.
 */
import {Model} from '../../engine/index.js'
import {type CheckClass, fail, pass} from '../types.js'

/** 40 tokens with BOS in stories260K's vocabulary (the prompt is cut at 40 tokens in any other). */
export const PROMPT = 'Once upon a time, there was a little dog named Spot. Spot liked to run in the big grass and play with his ball.'
const MAX_TOKENS = 40

interface Variant {
  readonly threads: number
  readonly nBatch?: number
  /** Sizes of the successive decode calls (default: one call). */
  readonly chunks?: readonly number[]
}

/** The next float32 above x (one ulp up), for the test-only perturbation. */
function ulpUp(x: number): number {
  const f = new Float32Array([x])
  const i = new Int32Array(f.buffer)
  if (x === 0) i[0] = 1
  else i[0]! += x > 0 ? 1 : -1
  return f[0]!
}

export const determinism: CheckClass = {
  name: 'determinism',
  summary:
    "every position's logits bitwise equal for 1 vs 2 threads, one batch vs batches of 7, one decode call vs three (ARCHITECTURE.md's contract)",
  params: {},
  async when() {
    return undefined
  },
  async run(row, _params, env) {
    const model = await Model.load(row.path, {signal: env.signal})
    try {
      const prompt = model.tokenizer.encode(PROMPT, {addSpecial: true}).slice(0, MAX_TOKENS)
      const nVocab = model.config.nVocab
      const n = prompt.length
      const logits = async (v: Variant): Promise<Float32Array> => {
        const ctx = await model.createContext({nCtx: Math.max(64, n), nBatch: v.nBatch ?? n, threads: v.threads})
        try {
          const out = new Float32Array(n * nVocab)
          let pos = 0
          for (const size of v.chunks ?? [n]) {
            out.set((await ctx.decode(prompt.slice(pos, pos + size), {pos, logits: 'all', signal: env.signal}))!, pos * nVocab)
            pos += size
          }
          return out
        } finally {
          ctx.dispose()
        }
      }
      const third = Math.max(1, Math.floor(n / 3))
      const base = await logits({threads: 1})
      const variants: Array<[string, Variant]> = [
        ['2 threads', {threads: 2}],
        ['batches of 7', {threads: 1, nBatch: 7}],
        [`3 decode calls (${third}+${third}+${n - 2 * third})`, {threads: 1, chunks: [third, third, n - 2 * third]}],
      ]
      for (const [name, v] of variants) {
        const other = await logits(v)
        // Test-only hook, never set in a real run: it exists to prove this check can fail. With
        // RUNNER_COMPAT_TEST_PERTURB=threads one logit of the 2-thread run moves up by one ulp.
        if (process.env.RUNNER_COMPAT_TEST_PERTURB === 'threads' && v.threads === 2)
          other[other.length >> 1] = ulpUp(other[other.length >> 1]!)
        const a = new Uint32Array(base.buffer, base.byteOffset, base.length)
        const b = new Uint32Array(other.buffer, other.byteOffset, other.length)
        const i = a.findIndex((x, k) => x !== b[k])
        if (i >= 0) {
          const at = `position ${Math.floor(i / nVocab)}, token ${i % nVocab}`
          return fail(`1 thread, one batch, one call vs ${name}: logits differ first at index ${i} (${at}): ${base[i]} vs ${other[i]}`)
        }
      }
      return pass(
        `${n} tokens × ${nVocab} logits bitwise equal: 1 thread, one batch, one call = ${variants.map(([name]) => name).join(' = ')}`,
      )
    } finally {
      model.dispose()
    }
  },
}
