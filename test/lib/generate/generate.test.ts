/**
 * The generation loop (src/lib/generate) on ../shared/models/stories260K.gguf. The anchor is
 * llama.cpp's greedy continuation of "Once upon a time" in ../shared/reference/stories260K.json
 * (greedy[0]: its prompt ids, its first 48 token ids and their text): every finish reason is checked
 * as a cut of that one sequence (the first n ids, the text before String.prototype.indexOf of a stop
 * string, the ids before the first "."), never against values computed by the loop itself.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import type {Context} from '../../../src/lib/engine/context.js'
import {Model} from '../../../src/lib/engine/model.js'
import {Session} from '../../../src/lib/engine/session.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {fitPrompt, generate, type GenerationEvent, type GenerationRequest} from '../../../src/lib/generate/index.js'
import {DEFAULT_CONTEXT_CAP, defaultContextSize} from '../../../src/lib/engine/index.js'
import {greedy} from '../../helpers/engine.js'
import {makeSlowModel} from '../../helpers/slow-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

interface ReferenceGreedy {
  prompt: string
  prompt_ids: number[]
  ids: number[]
  text: string
}

/** The token "." of stories260K (run.test.ts's eos variant uses the same id). */
const FULL_STOP = 426

test('fitPrompt: the prompt and the reserve must fit; a prompt that fills the context leaves no room', () => {
  assert.deepEqual(fitPrompt(10, 16, 6), {fits: true, promptAlone: false, needed: 16, promptTokens: 10, reserve: 6, nCtx: 16})
  assert.equal(fitPrompt(10, 16, 7).fits, false)
  assert.equal(fitPrompt(10, 16, 7).promptAlone, false, 'the reserve, not the prompt, is too long')
  assert.equal(fitPrompt(16, 16, 0).fits, true, 'the engine takes a prompt that fills the context')
  assert.equal(fitPrompt(16, 16, 0).promptAlone, true)
  assert.equal(fitPrompt(15, 16, 1).fits, true)
})

test('the default context is the training context, at most 4096', () => {
  assert.equal(DEFAULT_CONTEXT_CAP, 4096)
  assert.equal(defaultContextSize(256), 256)
  assert.equal(defaultContextSize(131072), 4096)
})

describe("generate() on stories260K against llama.cpp's greedy continuation", {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  let reference: ReferenceGreedy
  const contexts: Context[] = []
  before(async () => {
    reference = (JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {greedy: ReferenceGreedy[]}).greedy[0]!
    model = await Model.load(sharedPath('models', 'stories260K.gguf'))
    assert.deepEqual(model.tokenizer.encode(reference.prompt, {addSpecial: true}), reference.prompt_ids, "our tokenization is llama.cpp's")
  })
  after(() => {
    for (const c of contexts) c.dispose()
    model?.dispose()
  })

  /** A fresh session with llama.cpp's reference settings (F32 KV cache, one thread). */
  async function session(nCtx = 256, nBatch = 512): Promise<Session> {
    const ctx = await model.createContext({nCtx, nBatch, threads: 1, kvType: 'f32'})
    contexts.push(ctx)
    return new Session(ctx)
  }

  function request(extra: Partial<GenerationRequest> = {}): GenerationRequest {
    return {prompt: reference.prompt_ids, maxTokens: 48, sampling: greedy(), ...extra}
  }

  async function drain(events: AsyncIterable<GenerationEvent>): Promise<GenerationEvent[]> {
    const out: GenerationEvent[] = []
    for await (const e of events) out.push(e)
    return out
  }

  test("length: 48 tokens are llama.cpp's 48 greedy ids and text; the events add up to the outcome", async () => {
    const g = generate(await session(), request())
    const events = await drain(g.events)
    const o = await g.result
    assert.deepEqual(o.tokenIds, reference.ids)
    assert.equal(o.text, reference.text)
    assert.equal(o.finishReason, 'length')
    assert.equal(o.stopString, undefined)
    assert.equal(events.map((e) => e.text).join(''), o.text)
    assert.deepEqual(
      events.filter((e) => e.token >= 0).map((e) => e.token),
      reference.ids,
      'one event per sampled token, in order',
    )
    assert.deepEqual(
      events.flatMap((e) => e.tokens).map((r) => r.token),
      reference.ids,
    )
    assert.deepEqual(o.usage, {
      promptTokens: reference.prompt_ids.length,
      cachedTokens: 0,
      evaluatedTokens: reference.prompt_ids.length,
      completionTokens: 48,
      forcedTokens: 0,
    })
    assert.ok(o.timings.promptMs >= 0 && o.timings.decodeMs > 0)
    // Offsets: each token's text starts where the text of the tokens before it ends.
    o.tokens.forEach((r, i) => assert.equal(r.offset, model.tokenizer.decode(reference.ids.slice(0, i)).length, `offset of token ${i}`))
  })

  test('eos: with "." as the end-of-generation token, the ids before llama.cpp\'s first "."', async () => {
    const cut = reference.ids.indexOf(FULL_STOP)
    assert.ok(cut > 0, 'the reference continuation has a full stop')
    const o = await generate(await session(), request({stopTokens: [FULL_STOP]})).result
    assert.equal(o.finishReason, 'eos')
    assert.deepEqual(o.tokenIds, reference.ids.slice(0, cut))
    assert.equal(o.usage.completionTokens, cut)
  })

  test('context: a context that holds the prompt and 5 more positions ends "context" after llama.cpp\'s first 6 ids', async () => {
    const n = reference.prompt_ids.length
    const o = await generate(await session(n + 5), request()).result
    assert.equal(o.finishReason, 'context')
    // The last token is reported before it would be evaluated, so one more than the free positions.
    assert.deepEqual(o.tokenIds, reference.ids.slice(0, 6))
  })

  test('a prompt that does not fit is refused at once (CONTEXT_FULL), before the engine runs', async () => {
    const s = await session(4)
    assert.throws(
      () => generate(s, request()),
      (e: unknown) => e instanceof RunnerError && e.code === 'CONTEXT_FULL' && /5 tokens/.test(e.message),
    )
    assert.equal(s.context.nPast, 0)
  })

  test("stop strings across token boundaries: the text before indexOf of the stop in llama.cpp's text, never a partial stop in the events", async () => {
    const pieces = reference.ids.map((id) => model.tokenizer.piece(id))
    // Stops that begin inside one token's text and end inside the next one's.
    const stops: string[] = []
    for (let k = 3; k < pieces.length - 1 && stops.length < 6; k += 5) {
      const a = pieces[k]!
      const b = pieces[k + 1]!
      if (a.length >= 2 && b.length >= 2) stops.push(a.slice(-2) + b.slice(0, 2))
    }
    assert.ok(stops.length >= 3, `found stops spanning token boundaries: ${JSON.stringify(stops)}`)
    for (const stop of stops) {
      const cut = reference.text.indexOf(stop)
      assert.ok(cut >= 0)
      const g = generate(await session(), request({stop: ['never-in-this-text', stop]}))
      const events = await drain(g.events)
      const o = await g.result
      assert.equal(o.finishReason, 'stop-string', stop)
      assert.equal(o.stopString, stop)
      assert.equal(o.text, reference.text.slice(0, cut), `text before ${JSON.stringify(stop)}`)
      let released = ''
      for (const e of events) {
        released += e.text
        // Never a character of the stop string, not even while it was only a possible match.
        assert.ok(reference.text.slice(0, cut).startsWith(released), `released ${JSON.stringify(released)} is final`)
      }
      assert.equal(released, o.text)
      // The answer's tokens: through the one whose text completes the stop string (OpenAI counts it).
      let end = 0
      let count = 0
      while (end < cut + stop.length) end += pieces[count++]!.length
      assert.deepEqual(o.tokenIds, reference.ids.slice(0, count))
      assert.equal(o.usage.completionTokens, count)
      // Reports stop before the token that starts inside the stop string.
      for (const r of o.tokens) assert.ok(r.offset < cut, `token at ${r.offset} starts before the stop at ${cut}`)
    }
  })

  test('a stop string held back at the end of the budget is released as plain text', async () => {
    const text8 = model.tokenizer.decode(reference.ids.slice(0, 8))
    // The last two characters of the 8-token text begin this stop; it never completes within 8 tokens.
    const stop = `${text8.slice(-2)}#`
    const g = generate(await session(), request({maxTokens: 8, stop: [stop]}))
    const events = await drain(g.events)
    const o = await g.result
    assert.equal(o.finishReason, 'length')
    assert.equal(o.text, text8)
    assert.equal(events.at(-1)!.token, -1, 'the held text comes last, on a text-only event')
    assert.equal(events.at(-1)!.text, text8.slice(-2))
  })

  test('usage with prefix reuse: the second request reuses the shared prefix and evaluates only the rest, with the same tokens', async () => {
    const s = await session()
    const first = await generate(s, request({maxTokens: 4})).result
    assert.deepEqual(first.tokenIds, reference.ids.slice(0, 4))
    // The prompt plus llama.cpp's first 10 tokens: the cache holds the prompt and 3 generated tokens.
    const longer = [...reference.prompt_ids, ...reference.ids.slice(0, 10)]
    const g = generate(s, {...request({maxTokens: 12}), prompt: longer})
    const held = reference.prompt_ids.length + 3
    assert.equal(g.cachedTokens, held)
    const o = await g.result
    assert.deepEqual(o.usage, {
      promptTokens: longer.length,
      cachedTokens: held,
      evaluatedTokens: longer.length - held,
      completionTokens: 12,
      forcedTokens: 0,
    })
    assert.deepEqual(o.tokenIds, reference.ids.slice(10, 22), "the continuation is llama.cpp's")
    // maxReuse caps the reuse (a scheduler's choice).
    const capped = await generate(s, {...request({maxTokens: 2}), prompt: longer, maxReuse: 2}).result
    assert.equal(capped.usage.cachedTokens, 2)
    assert.equal(capped.usage.evaluatedTokens, longer.length - 2)
    assert.deepEqual(capped.tokenIds, reference.ids.slice(10, 12))
  })

  test('aborted before the first token: no tokens, finish "aborted", the session holds no generated token', async () => {
    const s = await session()
    const abort = new AbortController()
    abort.abort()
    const g = generate(s, request({signal: abort.signal}))
    const events = await drain(g.events)
    const o = await g.result
    assert.equal(o.finishReason, 'aborted')
    assert.deepEqual(o.tokenIds, [])
    assert.equal(o.text, '')
    assert.deepEqual(events, [])
    assert.ok(s.cached.length < reference.prompt_ids.length, `the prompt was not finished (${s.cached.length} cached)`)
  })

  test('an engine refusal arrives through the result and the events (one at a time per context)', async () => {
    const s = await session()
    const bad = generate(s, request({maxTokens: -1}))
    await assert.rejects(bad.result, (e: unknown) => e instanceof RunnerError && e.code === 'GENERATE_BAD_OPTION')
    await assert.rejects(drain(bad.events), (e: unknown) => e instanceof RunnerError && e.code === 'GENERATE_BAD_OPTION')
  })
})

/**
 * Cases that race the engine (abort or stop from the event reader) need a model slow enough that the
 * reader always acts first: a random-weight llama from our writer (about a millisecond per token).
 * The anchor is the same model's uninterrupted run: an interrupted one is a prefix of it.
 */
describe('generate() interrupted, on a slow random-weight model', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-generate-'))
  let model: Model
  let ctx: Context
  let whole: readonly number[]
  const prompt = [1, 403, 407, 261, 378]
  before(async () => {
    const path = join(dir, 'slow.gguf')
    await makeSlowModel(path)
    model = await Model.load(path)
    ctx = await model.createContext({nCtx: 2048, nBatch: 1, threads: 1})
    whole = (await generate(new Session(ctx), {prompt, maxTokens: 64, sampling: greedy(), stopTokens: []}).result).tokenIds
    assert.equal(whole.length, 64)
  })
  after(() => {
    ctx?.dispose()
    model?.dispose()
    rmSync(dir, {recursive: true, force: true})
  })
  const long = () => ({prompt, maxTokens: 2000, sampling: greedy(), stopTokens: []})

  test("aborted after the first token: the tokens so far are the uninterrupted run's first ones", async () => {
    const abort = new AbortController()
    const g = generate(new Session(ctx), {...long(), signal: abort.signal})
    let seen = 0
    for await (const e of g.events) if (e.token >= 0 && ++seen === 3) abort.abort()
    const o = await g.result
    assert.equal(o.finishReason, 'aborted')
    assert.ok(o.tokenIds.length >= 3 && o.tokenIds.length < 64, `${o.tokenIds.length} tokens`)
    assert.deepEqual(o.tokenIds, whole.slice(0, o.tokenIds.length))
    assert.equal(o.usage.completionTokens, o.tokenIds.length)
  })

  test('leaving the events early stops the generation ("stopped"); events.stop() does the same', async () => {
    const g = generate(new Session(ctx), long())
    for await (const e of g.events) if (e.token >= 0) break
    const o = await g.result
    assert.equal(o.finishReason, 'stopped')
    assert.ok(o.tokenIds.length >= 1 && o.tokenIds.length < 64)
    assert.deepEqual(o.tokenIds, whole.slice(0, o.tokenIds.length))
    const h = generate(new Session(ctx), long())
    h.events.stop()
    assert.equal((await h.result).finishReason, 'stopped')
  })

  test('aborted during the prompt: a long prompt read one token per step stops part-way, and the session knows how far it got', async () => {
    const s = new Session(ctx)
    const longPrompt = [1, ...Array.from({length: 1500}, (_, i) => 300 + (i % 200))]
    const abort = new AbortController()
    const g = generate(s, {...long(), prompt: longPrompt, signal: abort.signal})
    setTimeout(() => abort.abort(), 20)
    const o = await g.result
    assert.equal(o.finishReason, 'aborted')
    assert.deepEqual(o.tokenIds, [])
    assert.equal(s.cached.length, ctx.nPast)
    assert.ok(
      s.cached.length > 0 && s.cached.length < longPrompt.length,
      `stopped inside the prompt (${s.cached.length} of ${longPrompt.length})`,
    )
    assert.deepEqual(s.cached, longPrompt.slice(0, s.cached.length))
  })
})
