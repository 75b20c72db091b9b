// Teacher-forced log-probabilities through runner's inference pass (F32 KV cache, one thread): the
// quantity the LoRA, merge and training tests compare with llama.cpp, PyTorch and each other.
import type {Model} from '../../src/lib/engine/index.js'

/** log p(ids[i + 1] | ids[0..i]) for every i, computed in double from the logits. */
export async function teacherForcedLogprobs(model: Model, ids: readonly number[], nCtx = 256): Promise<number[]> {
  const ctx = await model.createContext({nCtx, threads: 1, kvType: 'f32'})
  try {
    const logits = (await ctx.decode([...ids], {pos: 0, logits: 'all'}))!
    const V = model.config.nVocab
    const out: number[] = []
    for (let i = 0; i + 1 < ids.length; i++) {
      const row = logits.subarray(i * V, (i + 1) * V)
      let mx = -Infinity
      for (const v of row) mx = Math.max(mx, v)
      let s = 0
      for (const v of row) s += Math.exp(v - mx)
      out.push(row[ids[i + 1]!]! - mx - Math.log(s))
    }
    return out
  } finally {
    ctx.dispose()
  }
}
