/**
 * `load`: the file is the pinned one (sha256), inspect's checks pass (the loader's verdict), its
 * architecture and weight type are the roster's, the engine loads it and one forward step gives
 * finite logits. Every other check of a row builds on this one.
 */
import {Model} from '../../engine/index.js'
import {dominantType, readGgufModel, summarizeModel} from '../../gguf/index.js'
import {loadVerdict} from '../../model-check/index.js'
import {fileSha256} from '../sha-cache.js'
import {type CheckClass, fail, pass} from '../types.js'

export const load: CheckClass = {
  name: 'load',
  summary:
    "the file's sha256 is the roster's; inspect's checks pass; architecture and weight type are the roster's; the engine loads it and one step gives finite logits",
  params: {},
  async when() {
    return undefined
  },
  async run(row) {
    const sha = await fileSha256(row.path)
    if (sha !== row.sha256) return fail(`sha256 ${sha}, the roster pins ${row.sha256}`)
    const gguf = readGgufModel(row.path)
    const verdict = loadVerdict(gguf)
    if (!verdict.loads) return fail(`inspect's checks refuse it: ${verdict.error.message}`)
    const s = summarizeModel(gguf)
    if (s.architecture !== row.architecture) return fail(`architecture ${String(s.architecture)}, the roster expects ${row.architecture}`)
    const type = dominantType(s)
    if (type !== row.type) return fail(`weight type ${type}, the roster expects ${row.type}`)
    const model = await Model.load(row.path)
    try {
      const ctx = await model.createContext({nCtx: 16, threads: 1})
      try {
        const logits = (await ctx.decode([model.tokenizer.bos ?? 0], {pos: 0}))!
        const bad = logits.findIndex((v) => !Number.isFinite(v))
        if (bad >= 0) return fail(`logit ${bad} of the first step is ${logits[bad]}`)
      } finally {
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
    return pass(
      `sha256 ${sha.slice(0, 16)}…, ${row.architecture} ${type}, ${s.tensorCount} tensors, one step's ${s.vocabSize ?? '?'} logits finite`,
    )
  },
}
