/**
 * The model's own MTP (NextN) head as a draft source (issue #23) never changes an output: on the
 * llama, qwen2 and qwen3 fixtures with a head of seeded random weights (test/helpers/nextn-model.ts:
 * the main model is bitwise the fixture, whose greedy ids ../shared/reference has from llama.cpp),
 * speculation on vs off gives bitwise the same tokens, log-probabilities, top alternatives, finish
 * and cache, greedy and seeded, a prompt cut into small batches, a second turn on one session, a
 * full context, a stop token inside accepted drafts and a constraint. A
 * head built to agree with the model (a bigram table of the model's own greedy continuation, below)
 * has its drafts accepted; a random one mostly not. A model without a head is refused by name.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {speculationFromFlags} from '../../../src/lib/cli/index.js'
import {Draft, Model, Session} from '../../../src/lib/engine/index.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {generate, type GenerationRequest} from '../../../src/lib/generate/index.js'
import {compileConstraint} from '../../../src/lib/grammar/index.js'
import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {openDrafts} from '../../../src/lib/speculative/index.js'
import {tensorBytes} from '../../helpers/gguf.js'
import {writeNextnModel} from '../../helpers/nextn-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'
import {GREEDY, observable, REPETITIVE, SEEDED} from '../../helpers/speculative.js'

/** One generation on a fresh context of `target`, with an MTP draft of the given settings or none. */
async function run(target: Model, request: Omit<GenerationRequest, 'draft'>, mtp?: {nMax: number}, nBatch = 512, nCtx = 256) {
  const ctx = await target.createContext({nCtx, nBatch, threads: 1})
  const draft = mtp ? await Draft.mtp(ctx, {pMin: 0, nMax: mtp.nMax}) : undefined
  try {
    const session = new Session(ctx)
    const o = await generate(session, {...request, ...(draft ? {draft} : {})}).result
    return {o, seen: observable(o, session.cached)}
  } finally {
    draft?.dispose()
    ctx.dispose()
  }
}

describe('the MTP head as a draft source gives the tokens of plain decoding', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  const models: Model[] = []
  const load = async (path: string) => {
    const m = await Model.load(path)
    models.push(m)
    return m
  }
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-mtp-'))
  })
  after(() => {
    for (const m of models) m.dispose()
    rmSync(dir, {recursive: true, force: true})
  })

  for (const family of ['llama', 'qwen2', 'qwen3']) {
    test(`${family} with a random head: greedy and seeded, bitwise; small batches; two turns`, async () => {
      const path = join(dir, `${family}-nextn.gguf`)
      await writeNextnModel(sharedPath('fixtures', `${family}.gguf`), path)
      const target = await load(path)
      const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
      for (const [label, sampling] of [
        ['greedy', GREEDY],
        ['seeded', SEEDED],
      ] as const) {
        const request = {prompt, maxTokens: 48, sampling, stopTokens: []}
        const plain = await run(target, request)
        for (const nMax of [1, 4]) {
          const spec = await run(target, request, {nMax})
          assert.deepEqual(spec.seen, plain.seen, `${family} ${label} nMax ${nMax}: the outcome of plain decoding`)
          assert.ok(spec.o.draft!.drafted > 0, `${family} ${label}: drafts were verified (${JSON.stringify(spec.o.draft)})`)
        }
        // A prompt cut into batches of 8: the head sees every chunk's rows (and the row between two chunks).
        const small = await run(target, request, {nMax: 3}, 8)
        assert.deepEqual(small.seen, plain.seen, `${family} ${label}: batches of 8`)
        assert.ok(small.o.draft!.drafted > 0)
      }
      // A head's context (Draft.mtp makes one) holds the NextN block's KV cache alone, and cannot decode.
      const main = await target.createContext({nCtx: 256, threads: 1})
      const head = await target.createContext({nCtx: 256, threads: 1, blocks: 'mtp'})
      try {
        assert.equal(head.kvBytes * (target.config.nLayer - 1), main.kvBytes)
        await assert.rejects(head.decode([1], {pos: 0}), /an MTP context runs only the NextN head/)
      } finally {
        head.dispose()
        main.dispose()
      }
      // Two turns on one session: the head's cache follows the sequence across generations.
      const twoTurns = async (withDraft: boolean) => {
        const ctx = await target.createContext({nCtx: 256, threads: 1})
        const draft = withDraft ? await Draft.mtp(ctx, {pMin: 0}) : undefined
        try {
          const s = new Session(ctx)
          const first = await generate(s, {prompt, maxTokens: 20, sampling: GREEDY, stopTokens: [], ...(draft ? {draft} : {})}).result
          const next = [...prompt, ...first.tokenIds, ...target.tokenizer.encode(' Lily said')]
          const second = await generate(s, {prompt: next, maxTokens: 30, sampling: SEEDED, stopTokens: [], ...(draft ? {draft} : {})})
            .result
          // The second turn continues the head's history (the row it kept pairs with the new prompt).
          if (draft) assert.ok(second.draft!.drafted > 0, `second turn drafted (${JSON.stringify(second.draft)})`)
          return [observable(first, []), observable(second, s.cached)]
        } finally {
          draft?.dispose()
          ctx.dispose()
        }
      }
      assert.deepEqual(await twoTurns(true), await twoTurns(false))
    })
  }

  test('a head built to agree with the model has its drafts accepted; a random one mostly not', async () => {
    const fixture = sharedPath('fixtures', 'llama.gguf')
    const plainModel = await load(fixture)
    const prompt = plainModel.tokenizer.encode(REPETITIVE, {addSpecial: true})
    const request = {prompt, maxTokens: 64, sampling: GREEDY, stopTokens: []}
    const plain = await run(plainModel, request)
    // The model's own greedy continuation as a bigram table: after token t comes next[t].
    const seq = [...prompt, ...plain.o.tokenIds]
    const next = new Map<number, number>()
    for (let i = 0; i + 1 < seq.length; i++) next.set(seq[i]!, seq[i + 1]!)
    // The head: eh_proj keeps the token's normed embedding (x = enorm(embed(t)), enorm = 1), the
    // block adds nothing (attn_output and ffn_down zero), norms are 1, and its own head's row v is
    // the sum of the normed embeddings of the tokens t with next[t] = v: the argmax after t is next[t].
    const f = readGgufModel(fixture)
    const embd = f.tensors.find((t) => t.name === 'token_embd.weight')!
    const [E, V] = embd.shape as [number, number]
    const raw = tensorBytes(embd)
    const emb = new Float32Array(raw.buffer, raw.byteOffset, E * V)
    const unit = (t: number) => {
      const row = emb.subarray(t * E, (t + 1) * E)
      const rms = Math.sqrt(row.reduce((a, x) => a + x * x, 0) / E + 1e-5)
      return Array.from(row, (x) => x / rms)
    }
    const data = (name: string, shape: readonly number[]) => {
      const n = shape.reduce((a, b) => a * b, 1)
      if (/attn_output|ffn_down/.test(name)) return new Float32Array(n)
      if (/nextn\.(enorm|hnorm|shared_head_norm)/.test(name)) return new Float32Array(n).fill(1)
      if (name.endsWith('nextn.eh_proj.weight')) {
        const w = new Float32Array(n)
        for (let o = 0; o < E; o++) w[o * 2 * E + o] = 1
        return w
      }
      if (name.endsWith('nextn.shared_head_head.weight')) {
        const w = new Float32Array(n)
        for (const [t, v] of next) unit(t).forEach((x, i) => (w[v * E + i]! += x))
        return w
      }
      return undefined
    }
    const agreeing = join(dir, 'llama-agreeing-head.gguf')
    await writeNextnModel(fixture, agreeing, {data, withOwnHead: true})
    const target = await load(agreeing)
    const good = await run(target, request, {nMax: 4})
    assert.deepEqual(good.seen, plain.seen)
    const {drafted, accepted} = good.o.draft!
    assert.ok(drafted > 0 && accepted / drafted > 0.5, `most drafts accepted: ${accepted}/${drafted}`)
    // The seeded walk still gives the seeded tokens of plain decoding.
    const seeded = {...request, sampling: SEEDED}
    assert.deepEqual((await run(target, seeded, {nMax: 4})).seen, (await run(target, seeded)).seen)

    const random = join(dir, 'llama-random-head.gguf')
    await writeNextnModel(fixture, random)
    const bad = await run(await load(random), request, {nMax: 4})
    assert.deepEqual(bad.seen, plain.seen)
    assert.ok(bad.o.draft!.accepted < accepted, `a random head is accepted less: ${bad.o.draft!.accepted} vs ${accepted}`)
  })

  test('a full context, a stop token inside accepted drafts, a constraint and context shifts: as plain decoding', async () => {
    const path = join(dir, 'llama-nextn-edges.gguf')
    await writeNextnModel(sharedPath('fixtures', 'llama.gguf'), path)
    const target = await load(path)
    const prompt = target.tokenizer.encode(REPETITIVE, {addSpecial: true})
    const full = {prompt, maxTokens: 500, sampling: GREEDY, stopTokens: []}
    const plainFull = await run(target, full, undefined, 512, 64)
    assert.equal(plainFull.o.finishReason, 'context')
    assert.deepEqual((await run(target, full, {nMax: 4}, 512, 64)).seen, plainFull.seen)
    const stopped = {prompt, maxTokens: 100, sampling: GREEDY, stopTokens: [plainFull.o.tokenIds[20]!]}
    const plainStopped = await run(target, stopped)
    assert.equal(plainStopped.o.finishReason, 'eos')
    assert.deepEqual((await run(target, stopped, {nMax: 4})).seen, plainStopped.seen)
    const constraint = compileConstraint({
      kind: 'json-schema',
      text: JSON.stringify({type: 'object', properties: {n: {type: 'integer'}}, required: ['n']}),
    })
    const constrained = {prompt, maxTokens: 40, sampling: SEEDED, constraint}
    assert.deepEqual((await run(target, constrained, {nMax: 4})).seen, (await run(target, constrained)).seen)
    // Context shifts: the head's own cache shifts with the target's; the outcome is plain decoding's.
    const shifted = {prompt, maxTokens: 200, sampling: SEEDED, stopTokens: [], contextShift: {keep: 8}}
    const plainShifted = await run(target, shifted, undefined, 512, 64)
    assert.ok(plainShifted.o.shifts.count >= 3, `shifted ${plainShifted.o.shifts.count} times`)
    const mtpShifted = await run(target, shifted, {nMax: 4}, 512, 64)
    assert.deepEqual(mtpShifted.seen, plainShifted.seen)
    assert.deepEqual(mtpShifted.o.shifts, plainShifted.o.shifts)
  })

  test('a model without a head: refused by name, warned and dropped, or fatal when required', async () => {
    const plain = await load(sharedPath('fixtures', 'llama.gguf'))
    const ctx = await plain.createContext({nCtx: 64, threads: 1})
    try {
      await assert.rejects(
        Draft.mtp(ctx),
        (e: unknown) => e instanceof RunnerError && e.code === 'DRAFT_NO_MTP_HEAD' && /llama model has no MTP head/.test(e.message),
      )
    } finally {
      ctx.dispose()
    }
    const warnings: string[] = []
    const opened = await openDrafts(plain, {source: 'mtp'}, {nCtx: 64, kvType: 'f16', onWarning: (w) => warnings.push(w)})
    assert.equal(opened.drafts.length, 0)
    assert.equal(opened.status.active, false)
    assert.equal(opened.status.source, 'mtp')
    assert.match(warnings.join('\n'), /the model's MTP head is not used: .*no MTP head.*--draft-required makes this an error/)
    await assert.rejects(
      openDrafts(plain, {source: 'mtp', required: true}, {nCtx: 64, kvType: 'f16'}),
      (e: unknown) => e instanceof RunnerError && e.code === 'DRAFT_NO_MTP_HEAD',
    )
    // With a head: opened, reported as source 'mtp' with its settings.
    const path = join(dir, 'llama-nextn-open.gguf')
    await writeNextnModel(sharedPath('fixtures', 'llama.gguf'), path)
    const withHead = await load(path)
    const ok = await openDrafts(withHead, {source: 'mtp', nMax: 2, required: true}, {nCtx: 64, kvType: 'f16', count: 2})
    try {
      assert.equal(ok.drafts.length, 2)
      assert.deepEqual(ok.status, {active: true, source: 'mtp', settings: {source: 'mtp', nMax: 2, pMin: 0.75}})
    } finally {
      ok.dispose()
    }
  })

  test('--draft-mtp: one source, its settings, and settings without a source refused', () => {
    assert.deepEqual(speculationFromFlags({'draft-mtp': true}), {source: 'mtp', required: false})
    assert.deepEqual(
      speculationFromFlags({'draft-mtp': true, 'draft-max': 2, 'draft-p-min': '0.5', 'threads-draft': 1, 'draft-required': true}),
      {
        source: 'mtp',
        required: true,
        nMax: 2,
        pMin: 0.5,
        threads: 1,
      },
    )
    const bad = (re: RegExp) => (e: unknown) => e instanceof RunnerError && e.code === 'BAD_FLAG' && re.test(e.message)
    assert.throws(() => speculationFromFlags({'draft-p-min': '0.5'}), bad(/--draft-p-min needs --draft or --draft-mtp/))
    assert.throws(
      () => speculationFromFlags({'draft-lookup': true, 'threads-draft': 2}),
      bad(/--threads-draft needs --draft or --draft-mtp/),
    )
    assert.throws(
      () => speculationFromFlags({'draft-max': 2}),
      bad(/--draft-max needs a draft source: --draft or --draft-lookup or --draft-mtp/),
    )
  })
})
