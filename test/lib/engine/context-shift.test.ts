/**
 * Context shift in the engine (issue #23; test/differential/context-shift.test.ts holds llama.cpp as
 * the anchor for the tokens): on one block, a shifted cache gives what evaluating the kept tokens at
 * their new positions gives, within the rounding of a second rotation; the generation loop's shifts are
 * bitwise reproducible across threads and batch sizes; Session knows what the cache holds after
 * them; and a context where a shift cannot be exact refuses it by name.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import {DecodeGroup} from '../../../src/lib/engine/decode-group.js'
import {Model} from '../../../src/lib/engine/model.js'
import {Session, withoutShifted} from '../../../src/lib/engine/session.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {bits, greedy, logprobOf} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const TOKENS = Array.from({length: 256}, (_, i) => (i * 7919 + 13) % 512)
const refused = (what: RegExp) => (e: unknown) => e instanceof RunnerError && e.code === 'CONTEXT_SHIFT_UNSUPPORTED' && what.test(e.message)

describe('context shift', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-shift-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  // One block: its keys depend only on each token and its position, so after a shift they must be the
  // keys a fresh evaluation of the kept tokens makes, up to a second rotation's rounding. (With more
  // blocks the kept tokens' keys also saw the dropped ones: a context shift's approximation, llama.cpp's
  // too, which the differential test covers.)
  for (const c of [
    {arch: 'llama', kvType: 'f32', tol: 1e-4},
    {arch: 'qwen2', kvType: 'f32', tol: 1e-4},
    {arch: 'gemma3', kvType: 'f32', tol: 1e-4, swa: {slidingWindow: 64, slidingWindowPattern: [true], ropeBaseSwa: 10000}},
    {arch: 'llama', kvType: 'f16', tol: 0.02},
  ] as const) {
    test(`kvShift then decode, one ${c.arch} block, KV ${c.kvType}: the fresh evaluation's logits within a rotation's rounding`, async (t) => {
      const path = join(dir, `${c.arch}-1.gguf`)
      await makeTestModel(path, {
        arch: c.arch,
        nEmbd: 128,
        nLayer: 1,
        nHead: 4,
        nHeadKv: 2,
        nFf: 256,
        nCtx: 256,
        type: 'f32',
        seed: 2311n,
        tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
        ...('swa' in c ? {...c.swa, ropeFreqBase: 1e6} : {}),
      })
      const model = await Model.load(path)
      const [keep, discard, n] = [10, 90, 200]
      const opts = {nCtx: 256, threads: 1, kvType: c.kvType, swaFull: true}
      const shifted = await model.createContext(opts)
      const fresh = await model.createContext(opts)
      const unshifted = await model.createContext(opts)
      try {
        await shifted.decode(TOKENS.slice(0, n), {logits: 'none'})
        shifted.kvShift(keep, discard)
        assert.equal(shifted.nPast, n - discard)
        const kept = withoutShifted(TOKENS.slice(0, n), {keep, discarded: discard})
        const tail = TOKENS.slice(n, n + 40)
        const a = (await shifted.decode(tail, {logits: 'all'}))!
        const nVocab = model.config.nVocab
        const b = (await fresh.decode([...kept, ...tail], {pos: 0, logits: 'all'}))!.subarray(kept.length * nVocab)
        // The keys moved but not re-roped: what a shift without llama.cpp's K-shift would give.
        await unshifted.decode(TOKENS.slice(0, n), {logits: 'none'})
        const delta = (x: Float32Array, y: Float32Array) => {
          let max = 0
          for (let i = 0; i + 1 < tail.length; i++) {
            const row = (z: Float32Array) => z.subarray(i * nVocab, (i + 1) * nVocab)
            max = Math.max(max, Math.abs(logprobOf(row(x), tail[i + 1]!) - logprobOf(row(y), tail[i + 1]!)))
          }
          return max
        }
        const max = delta(a, b)
        assert.ok(max < c.tol, `max |Δlogprob| ${max}`)
        const far = delta((await unshifted.decode(tail, {pos: n - discard, logits: 'all'}))!, b)
        assert.ok(far > 10 * c.tol, `a cache truncated instead of shifted is far off (${far}), so the test sees the re-rope`)
        t.diagnostic(`max |Δlogprob| vs a fresh evaluation: ${max.toExponential(2)} (keys not re-roped: ${far.toExponential(2)})`)
        assert.throws(
          () => shifted.kvShift(0, 500),
          (e: unknown) => e instanceof RunnerError && e.code === 'ENGINE_INVALID_ARGUMENT',
        )
      } finally {
        shifted.dispose()
        fresh.dispose()
        unshifted.dispose()
        model.dispose()
      }
    })
  }

  for (const c of [
    {file: 'models/stories260K.gguf', kvType: 'f32'},
    {file: 'fixtures/qwen3.gguf', kvType: 'f16'},
    // gemma3 with the flat cache: SWA layers have their own rope base, re-roped with it.
    {file: 'fixtures/gemma3.gguf', kvType: 'f32', swaFull: true},
  ] as const) {
    describe(`${c.file} (KV ${c.kvType})`, () => {
      let model: Model
      before(async () => {
        model = await Model.load(sharedPath(c.file))
      })
      after(() => model?.dispose())
      const opts = {kvType: c.kvType, swaFull: 'swaFull' in c ? c.swaFull : false}

      test('generation through shifts: bitwise the same for 1 and 2 threads and any batch size; Session holds the kept sequence', async () => {
        const run = async (threads: number, nBatch: number) => {
          const ctx = await model.createContext({nCtx: 128, nBatch, threads, ...opts})
          const session = new Session(ctx)
          try {
            const sampling = {...greedy(), logprobs: true}
            const turn = session.generate(TOKENS.slice(0, 40), {maxTokens: 300, sampling, stopTokens: [], contextShift: {keep: 8}})
            const lps: number[] = []
            for await (const t of turn.stream) if (t.token >= 0) lps.push(t.logprob)
            const r = await turn.result
            // The cache holds the sequence without what the shifts dropped: a prompt that extends it reuses it all.
            const all = [...TOKENS.slice(0, 40), ...r.tokens]
            assert.deepEqual(session.cached, withoutShifted(all, r.shifts).slice(0, r.nPast))
            assert.deepEqual(r.pending, withoutShifted(all, r.shifts).slice(r.nPast))
            const next = [...session.cached, ...r.pending, 7]
            assert.equal(session.reusable(next), session.cached.length)
            return {r, lps: Float32Array.from(lps)}
          } finally {
            ctx.dispose()
          }
        }
        const a = await run(1, 512)
        const b = await run(2, 7)
        assert.equal(a.r.tokens.length, 300)
        assert.equal(a.r.finishReason, 'length')
        assert.ok(a.r.shifts.count >= 3)
        assert.equal(a.r.shifts.keep, 8)
        assert.deepEqual(a.r.tokens, b.r.tokens)
        assert.deepEqual(a.r.shifts, b.r.shifts)
        assert.ok(bits(a.lps).equals(bits(b.lps)))
      })
    })
  }

  test('in a decode group (serve --parallel): each member shifts its own cache, with the tokens of generating alone', async () => {
    const model = await Model.load(sharedPath('models/stories260K.gguf'))
    const group = DecodeGroup.create(model, {threads: 2, maxMembers: 4})
    const prompts = [TOKENS.slice(0, 5), TOKENS.slice(30, 33)]
    const options = {maxTokens: 200, sampling: greedy(), contextShift: {keep: 2}, stopTokens: []}
    try {
      const alone = []
      for (const p of prompts) {
        const ctx = await model.createContext({nCtx: 64, threads: 1})
        alone.push((await ctx.generate(p, options).result).tokens)
        ctx.dispose()
      }
      const ctxs = await Promise.all(prompts.map(() => model.createContext({nCtx: 64, threads: 1})))
      const together = await Promise.all(prompts.map((p, i) => ctxs[i]!.generate(p, {...options, group}).result))
      for (const c of ctxs) c.dispose()
      assert.ok(together.every((r) => r.shifts.count >= 3))
      assert.deepEqual(
        together.map((r) => r.tokens),
        alone,
      )
    } finally {
      group.dispose()
      model.dispose()
    }
  })

  test('without a context shift a full context still ends the generation ("context")', async () => {
    const model = await Model.load(sharedPath('models/stories260K.gguf'))
    const ctx = await model.createContext({nCtx: 64, threads: 1})
    try {
      const r = await ctx.generate(TOKENS.slice(0, 10), {maxTokens: 100, sampling: greedy(), stopTokens: []}).result
      assert.equal(r.finishReason, 'context')
      assert.deepEqual(r.shifts, {count: 0, keep: 0, discarded: 0})
    } finally {
      ctx.dispose()
      model.dispose()
    }
  })

  test('refused by name: a sliding-window ring (--swa-full allows it), a rope attention factor, longrope factors', async () => {
    const gemma = await Model.load(sharedPath('fixtures/gemma3.gguf'))
    try {
      const ring = await gemma.createContext({nCtx: 256, nBatch: 16, threads: 1})
      assert.ok(ring.kvInfo.ringLayers > 0)
      assert.match(ring.contextShiftRefusal ?? '', /ring.*--swa-full/)
      await assert.rejects(ring.generate([1, 2, 3], {maxTokens: 5, sampling: greedy(), contextShift: {keep: 1}}).result, refused(/ring/))
      assert.throws(() => ring.assertCanShift('--context-shift'), refused(/^--context-shift: .*sliding-window/))
      ring.dispose()
      const flat = await gemma.createContext({nCtx: 256, nBatch: 16, threads: 1, swaFull: true})
      assert.equal(flat.contextShiftRefusal, undefined)
      flat.dispose()
    } finally {
      gemma.dispose()
    }
    for (const [attnFactor, why] of [
      [1.19, /attention factor.*not a pure rotation/],
      [1, /longrope/],
    ] as const) {
      const path = join(dir, `phi3-${attnFactor}.gguf`)
      await makeTestModel(path, {
        arch: 'phi3',
        nEmbd: 64,
        nLayer: 1,
        nHead: 4,
        nHeadKv: 4,
        nFf: 128,
        nCtx: 1024,
        type: 'f32',
        seed: 23n,
        tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
        longrope: {originalContext: 256, attnFactor},
      })
      const m = await Model.load(path)
      const ctx = await m.createContext({nCtx: 128, threads: 1})
      try {
        assert.match(ctx.contextShiftRefusal ?? '', why)
        assert.throws(
          () => ctx.kvShift(0, 1),
          (e: unknown) => e instanceof RunnerError && e.code === 'ENGINE_UNSUPPORTED',
        )
      } finally {
        ctx.dispose()
        m.dispose()
      }
    }
  })
})
