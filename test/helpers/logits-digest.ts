/**
 * Prints the sha256 of every logit a prompt gives, for comparing kernel levels across processes
 * (RUNNER_CPU_MAX is read once per process):
 *   node --import tsx test/helpers/logits-digest.ts <model.gguf> <nCtx> <kvType> <nTokens> <seed>
 * The prompt is nTokens pseudo-random ids of the vocabulary from the seed (promptIds below).
 */
import {createHash} from 'node:crypto'

import {Model} from '../../src/lib/engine/model.js'
import {SeededRandom} from '../../src/lib/util/index.js'

/** nTokens ids in [1, nVocab) from the seed: the same prompt in every process. */
export function promptIds(nVocab: number, nTokens: number, seed: bigint): number[] {
  const rng = new SeededRandom(seed)
  return Array.from({length: nTokens}, () => 1 + Math.floor(rng.uniform() * (nVocab - 1)))
}

export async function logitsDigest(path: string, nCtx: number, kvType: 'f16' | 'f32', nTokens: number, seed: bigint): Promise<string> {
  const model = await Model.load(path)
  try {
    const ctx = await model.createContext({nCtx, nBatch: 512, threads: 2, kvType})
    const out = (await ctx.decode(promptIds(model.config.nVocab, nTokens, seed), {pos: 0, logits: 'all'}))!
    ctx.dispose()
    return createHash('sha256')
      .update(new Uint8Array(out.buffer, out.byteOffset, out.byteLength))
      .digest('hex')
  } finally {
    model.dispose()
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [path, nCtx, kvType, nTokens, seed] = process.argv.slice(2)
  console.log(await logitsDigest(path!, Number(nCtx), kvType as 'f16' | 'f32', Number(nTokens), BigInt(seed!)))
}
