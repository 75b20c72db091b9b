/**
 * Context shift against llama.cpp run live (node-llama-cpp 3.22.1, CPU, one thread, no flash
 * attention), issue #23: our native loop generates greedily past a full context with a context shift
 * (keep the first tokens, drop half of the rest, re-rope the later keys); llama.cpp evaluates the same
 * steps and, where ours shifted, shifts its own cache with `eraseContextTokenRanges` (llama_memory's
 * seq_rm + seq_add: its K-shift). The greedy tokens must agree through several shifts, token for
 * token, except after a step where llama.cpp's own top-1/top-2 margin is below the tolerance (the
 * rule of shared/reference/README.md). llama.cpp gets a context twice ours, so it never shifts on its
 * own (node-llama-cpp's own strategy erases the beginning instead).
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/model.js'
import {greedy} from '../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const N_CTX = 256
const STEPS = 700 // four shifts at keep 12
const TEXT = 'Once upon a time, there was a little girl named Lily.'

describe('differential: context shift vs llama.cpp, live', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let llama: Llama
  before(async () => {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  })
  after(async () => {
    await llama?.dispose()
  })

  for (const c of [
    {file: 'fixtures/llama.gguf', kv: 'f32', keep: 12, tol: 1e-3},
    {file: 'models/stories260K.gguf', kv: 'f32', keep: 12, tol: 1e-3},
    {file: 'models/stories260K.gguf', kv: 'f32', keep: 1, tol: 1e-3},
    // llama.cpp's F16 K-shift widens, rotates in float and rounds back, as ours does.
    {file: 'fixtures/llama.gguf', kv: 'f16', keep: 30, tol: 0.01},
  ] as const) {
    test(`${c.file}, KV ${c.kv}, keep ${c.keep}: the same greedy tokens through every shift`, async (t) => {
      const path = sharedPath(c.file)
      const ours = await Model.load(path)
      const ctx = await ours.createContext({nCtx: N_CTX, threads: 1, kvType: c.kv})
      const theirsModel = await llama.loadModel({modelPath: path})
      const theirsCtx = await theirsModel.createContext({
        contextSize: 2 * N_CTX,
        batchSize: 256,
        threads: 1,
        flashAttention: false,
        experimentalKvCacheKeyType: c.kv === 'f32' ? 'F32' : 'F16',
        experimentalKvCacheValueType: c.kv === 'f32' ? 'F32' : 'F16',
      })
      try {
        const ids = ours.tokenizer.encode(TEXT, {addSpecial: true})
        const r = await ctx.generate(ids, {maxTokens: STEPS, sampling: greedy(), pos: 0, stopTokens: [], contextShift: {keep: c.keep}})
          .result
        assert.equal(r.tokens.length, STEPS)
        assert.ok(r.shifts.count >= 3, `several shifts: ${JSON.stringify(r.shifts)}`)

        // llama.cpp, step by step: the same shifts at the same steps (where our cache was full).
        const seq = theirsCtx.getSequence()
        type Items = Parameters<typeof seq.controlledEvaluate>[0]
        let next = await seq.controlledEvaluate(
          ids.map((id, i) => (i === ids.length - 1 ? [id, {generateNext: {logits: true}}] : id)) as Items,
        )
        let nPast = ids.length
        let shifts = 0
        let first = -1
        const margins: number[] = []
        for (let step = 0; step < STEPS; step++) {
          const row = [...next[next.length - 1]!.next.logits!.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])
          margins.push(row[0]![1] - row[1]![1])
          if (row[0]![0] !== r.tokens[step]) {
            first = step
            break
          }
          if (nPast >= N_CTX) {
            const discard = Math.floor((nPast - c.keep) / 2)
            await seq.eraseContextTokenRanges([{start: c.keep, end: c.keep + discard}])
            nPast -= discard
            shifts++
          }
          next = await seq.controlledEvaluate([[r.tokens[step]!, {generateNext: {logits: true}}]] as Items)
          nPast++
        }
        assert.equal(seq.nextTokenIndex, nPast, 'llama.cpp shifted its cache (not a re-evaluation)')
        if (first >= 0)
          assert.ok(
            margins.some((m) => m < c.tol),
            `diverged at step ${first} (after ${shifts} shifts) though llama.cpp's margins were >= ${c.tol}`,
          )
        else assert.equal(shifts, r.shifts.count)
        t.diagnostic(
          `${c.file} KV ${c.kv} keep ${c.keep}: ${first < 0 ? STEPS : first}/${STEPS} greedy tokens equal, ${r.shifts.count} shifts (${r.shifts.discarded} positions dropped)`,
        )
      } finally {
        ctx.dispose()
        ours.dispose()
        await theirsCtx.dispose()
        await theirsModel.dispose()
      }
    })
  }
})
