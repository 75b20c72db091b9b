/**
 * The sliding-window ring cache (issue #23): sliding-window layers hold a ring of the positions their
 * window can still reach, and the flat cache (--swa-full) is the anchor: every logit bitwise equal
 * (max |Δlogprob| exactly 0) over contexts many times the window (16 on both fixtures), for any
 * batch size, prompt chunking and thread count; truncation below what the ring holds is refused
 * by name and Session falls back to evaluating the prompt again, with the same results.
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {kvCacheSize} from '../../../src/lib/engine/kv-size.js'
import {Model} from '../../../src/lib/engine/model.js'
import {Session} from '../../../src/lib/engine/session.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {bits, greedy, logprobOf} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const N_CTX = 256
/** A fixed token sequence over the fixtures' 512-token vocabulary (no special meaning, no repeats nearby). */
const TOKENS = Array.from({length: N_CTX}, (_, i) => (i * 7919 + 13) % 512)

const evicted = (e: unknown) => e instanceof RunnerError && e.code === 'ENGINE_KV_EVICTED'

for (const c of [
  {file: 'fixtures/gemma2.gguf', kvType: 'f16'},
  {file: 'fixtures/gemma3.gguf', kvType: 'f32'},
  {file: 'fixtures/gemma3.gguf', kvType: 'f16'},
] as const) {
  describe(`SWA ring vs flat cache: ${c.file} (KV ${c.kvType})`, {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
    let model: Model
    let flat: Float32Array
    before(async () => {
      model = await Model.load(sharedPath(c.file))
      flat = await logits({nBatch: N_CTX, threads: 1, swaFull: true})
    })
    after(() => model?.dispose())

    async function logits(o: {nBatch: number; threads: number; swaFull: boolean; chunks?: number[]}): Promise<Float32Array> {
      const ctx = await model.createContext({nCtx: N_CTX, nBatch: o.nBatch, threads: o.threads, kvType: c.kvType, swaFull: o.swaFull})
      try {
        const info = ctx.kvInfo
        if (o.swaFull) assert.equal(info.ringLayers, 0)
        else
          assert.ok(
            info.ringLayers > 0 && info.ringPositions < N_CTX / 2,
            `a ring several times smaller than the context: ${JSON.stringify(info)}`,
          )
        const nVocab = model.config.nVocab
        const out = new Float32Array(N_CTX * nVocab)
        let pos = 0
        for (const n of o.chunks ?? [N_CTX]) {
          out.set((await ctx.decode(TOKENS.slice(pos, pos + n), {pos, logits: 'all'}))!, pos * nVocab)
          pos += n
        }
        return out
      } finally {
        ctx.dispose()
      }
    }

    test('the window is 16 and the context wraps the ring several times', () => {
      assert.equal(model.config.nSwa, 16)
      assert.ok(model.config.swaLayers?.includes(true) && model.config.swaLayers.includes(false))
    })

    for (const o of [
      {nBatch: 1, threads: 1},
      {nBatch: 16, threads: 2},
      {nBatch: 7, threads: 1, chunks: [3, 60, 1, 100, 92]},
      {nBatch: 32, threads: 2, chunks: [50, 7, 100, 99]},
    ]) {
      test(`logits bitwise the flat cache's: batch ${o.nBatch}, ${o.threads} thread(s)${o.chunks ? `, chunks ${o.chunks.join('+')}` : ''}`, async () => {
        const ring = await logits({...o, swaFull: false})
        const nVocab = model.config.nVocab
        let maxDelta = 0
        for (let p = 0; p + 1 < N_CTX; p++) {
          const a = logprobOf(ring.subarray(p * nVocab, (p + 1) * nVocab), TOKENS[p + 1]!)
          const b = logprobOf(flat.subarray(p * nVocab, (p + 1) * nVocab), TOKENS[p + 1]!)
          maxDelta = Math.max(maxDelta, Math.abs(a - b))
        }
        assert.equal(maxDelta, 0)
        assert.ok(bits(ring).equals(bits(flat)))
      })
    }

    test('greedy generation over many wraps: the same tokens and log-probability bits', async () => {
      const run = async (swaFull: boolean) => {
        const ctx = await model.createContext({nCtx: N_CTX, nBatch: 8, threads: 2, kvType: c.kvType, swaFull})
        try {
          const stream = ctx.generate(TOKENS.slice(0, 20), {maxTokens: 200, sampling: {...greedy(), logprobs: true}, stopTokens: []})
          const lps: number[] = []
          for await (const t of stream) if (t.token >= 0) lps.push(t.logprob)
          return {tokens: (await stream.result).tokens, lps: Float32Array.from(lps)}
        } finally {
          ctx.dispose()
        }
      }
      const [ring, full] = [await run(false), await run(true)]
      assert.equal(ring.tokens.length, 200)
      assert.deepEqual(ring.tokens, full.tokens)
      assert.ok(bits(ring.lps).equals(bits(full.lps)))
    })

    test('the native size is what kvCacheSize computes, and the ring is smaller than the flat cache', async () => {
      for (const shape of [
        {nCtx: N_CTX, nBatch: 16, kvType: c.kvType, swaFull: false},
        {nCtx: N_CTX, nBatch: 16, kvType: c.kvType, swaFull: true},
        {nCtx: 100, nBatch: 512, kvType: c.kvType, swaFull: false}, // the batch is capped at the context: no ring
        {nCtx: 1000, nBatch: 64, kvType: 'f32' as const, swaFull: false},
      ]) {
        const ctx = await model.createContext({...shape, threads: 1})
        try {
          assert.deepEqual(ctx.kvInfo, kvCacheSize(model.config, shape), JSON.stringify(shape))
          assert.equal(ctx.kvBytes, ctx.kvInfo.bytes)
        } finally {
          ctx.dispose()
        }
      }
      const ring = kvCacheSize(model.config, {nCtx: 4096, nBatch: 512, kvType: 'f16'})
      const full = kvCacheSize(model.config, {nCtx: 4096, nBatch: 512, kvType: 'f16', swaFull: true})
      assert.equal(ring.flatBytes, full.bytes)
      assert.ok(ring.bytes < full.bytes)
      assert.equal(ring.ringPositions, 544) // ceil((16 - 1 + 512) / 32) blocks of 32
    })

    test('truncate: refused by name where the ring lost the next window, exact where it did not', async () => {
      const ctx = await model.createContext({nCtx: N_CTX, nBatch: 16, threads: 1, kvType: c.kvType})
      try {
        assert.equal(ctx.kvInfo.ringPositions, 32)
        await ctx.decode(TOKENS.slice(0, 200), {logits: 'none'})
        // Positions below 200 - 32 = 168 are overwritten; the query at n_keep needs (n_keep - 16, n_keep).
        assert.equal(ctx.kvMinKeep, 168 + 15)
        assert.throws(() => ctx.kvTruncate(182), evicted)
        assert.throws(() => ctx.kvTruncate(100), evicted)
        await assert.rejects(ctx.decode(TOKENS.slice(100, 110), {pos: 100}), evicted)
        assert.equal(ctx.nPast, 200) // a refusal changes nothing
        ctx.kvTruncate(183)
        const again = (await ctx.decode(TOKENS.slice(183, N_CTX), {pos: 183, logits: 'all'}))!
        const nVocab = model.config.nVocab
        assert.ok(bits(again).equals(bits(flat.subarray(183 * nVocab, N_CTX * nVocab))), 'rewound and re-evaluated: the flat logits')
        ctx.kvTruncate(0)
        assert.equal(ctx.kvMinKeep, 0)
        const first = (await ctx.decode(TOKENS.slice(0, 40), {logits: 'all'}))!
        assert.ok(bits(first).equals(bits(flat.subarray(0, 40 * nVocab))))
      } finally {
        ctx.dispose()
      }
      // The flat cache rewinds anywhere.
      const full = await model.createContext({nCtx: N_CTX, nBatch: 16, threads: 1, kvType: c.kvType, swaFull: true})
      try {
        await full.decode(TOKENS.slice(0, 200), {logits: 'none'})
        assert.equal(full.kvMinKeep, 0)
        full.kvTruncate(100)
      } finally {
        full.dispose()
      }
    })

    test('Session: a prefix the ring cannot keep is evaluated again, with the flat cache’s results', async () => {
      const turn = async (swaFull: boolean) => {
        const ctx = await model.createContext({nCtx: N_CTX, nBatch: 16, threads: 1, kvType: c.kvType, swaFull})
        const session = new Session(ctx)
        try {
          const sampling = {...greedy(), logprobs: true}
          await session.generate(TOKENS.slice(0, 150), {maxTokens: 30, sampling, stopTokens: []}).result
          // Shares 120 tokens with what the cache holds: the ring lost (120 - 16, 120) long ago.
          const second = [...TOKENS.slice(0, 120), ...TOKENS.slice(200, 230)]
          const reusable = session.reusable(second)
          const t = session.generate(second, {maxTokens: 30, sampling, stopTokens: []})
          const lps: number[] = []
          for await (const x of t.stream) if (x.token >= 0) lps.push(x.logprob)
          // Shares all but its last token with what the cache holds: reusable with the ring too.
          const held = session.cached
          const third = [...held, 5]
          return {
            reusable,
            cached: t.cachedTokens,
            tokens: (await t.result).tokens,
            lps: Float32Array.from(lps),
            third: session.reusable(third),
          }
        } finally {
          ctx.dispose()
        }
      }
      const [ring, full] = [await turn(false), await turn(true)]
      assert.equal(full.reusable, 120)
      assert.equal(full.cached, 120)
      assert.equal(ring.reusable, 0)
      assert.equal(ring.cached, 0)
      assert.deepEqual(ring.tokens, full.tokens)
      assert.ok(bits(ring.lps).equals(bits(full.lps)))
      assert.equal(ring.third, full.third)
      assert.ok(ring.third > 0)
    })
  })
}
