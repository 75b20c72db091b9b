/**
 * Prefix reuse is exact: a session that keeps the KV rows of an earlier prompt and evaluates only
 * the new suffix produces the same tokens and the same log-probability bits as a fresh context that
 * evaluates the whole prompt (the determinism contract, seen from the cache's side).
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import type {GenerationResult} from '../../../src/lib/engine/context.js'
import {Model} from '../../../src/lib/engine/model.js'
import {commonPrefixLength, Session} from '../../../src/lib/engine/session.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const sampling = resolveSamplingOptions({temperature: 0.8, topK: 40, seed: 7n, logprobs: true})

async function collect(turn: {stream: AsyncIterable<{token: number; logprob: number}>; result: Promise<GenerationResult>}) {
  const logprobs: number[] = []
  for await (const t of turn.stream) if (t.token >= 0) logprobs.push(t.logprob)
  return {result: await turn.result, logprobs: Float64Array.from(logprobs)}
}

test('commonPrefixLength', () => {
  assert.equal(commonPrefixLength([1, 2, 3], [1, 2, 4]), 2)
  assert.equal(commonPrefixLength([], [1]), 0)
  assert.equal(commonPrefixLength([1, 2], [1, 2, 3]), 2)
})

describe('session prefix reuse', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  before(async () => {
    model = await Model.load(sharedPath('models/stories260K.gguf'))
  })
  after(() => model?.dispose())

  async function fresh(prompt: number[]) {
    const ctx = await model.createContext({nCtx: 256, threads: 1})
    try {
      return await collect(new Session(ctx).generate(prompt, {maxTokens: 24, sampling}))
    } finally {
      ctx.dispose()
    }
  }

  test('a second prompt sharing a prefix reuses it and gives the same bits as a fresh context', async () => {
    const tok = model.tokenizer
    const first = tok.encode('Once upon a time there was a little girl named Lily.', {addSpecial: true})
    const second = tok.encode('Once upon a time there was a little girl named Lily. She liked to play', {addSpecial: true})
    const ctx = await model.createContext({nCtx: 256, threads: 2})
    try {
      const session = new Session(ctx)
      const a = session.generate(first, {maxTokens: 24, sampling})
      assert.equal(a.cachedTokens, 0)
      const ra = await collect(a)
      assert.deepEqual(session.cached, [...first, ...ra.result.tokens].slice(0, ra.result.nPast))
      assert.equal(ctx.nPast, session.cached.length)

      const shared = commonPrefixLength(session.cached, second)
      assert.ok(shared >= first.length - 1, 'the prompts share the first sentence')
      const b = session.generate(second, {maxTokens: 24, sampling})
      assert.equal(b.cachedTokens, shared)
      const rb = await collect(b)

      const fb = await fresh(second)
      assert.deepEqual(rb.result.tokens, fb.result.tokens)
      assert.deepEqual(Buffer.from(rb.logprobs.buffer), Buffer.from(fb.logprobs.buffer))
      assert.equal(rb.result.promptTokens, second.length - shared, 'only the new suffix was evaluated')

      // The same prompt again reuses all but its last token, and repeats itself exactly.
      const c = session.generate(second, {maxTokens: 24, sampling})
      assert.equal(c.cachedTokens, second.length - 1)
      const rc = await collect(c)
      assert.deepEqual(rc.result.tokens, fb.result.tokens)

      session.reset()
      assert.equal(ctx.nPast, 0)
      assert.equal(session.reusable(second), 0)
    } finally {
      ctx.dispose()
    }
  })

  test('with penalties, a long cached prefix is reused whole (its tokens reach the sampler as history) and gives the bits of a fresh context', async () => {
    const penalized = resolveSamplingOptions({
      temperature: 0.8,
      topK: 40,
      seed: 7n,
      logprobs: true,
      repeatPenalty: 1.5,
      presencePenalty: 0.5,
      frequencyPenalty: 0.5,
      penaltyLastN: 48,
    })
    const tok = model.tokenizer
    const story = 'Once upon a time there was a little girl named Lily. She loved to play outside in the park with her dog. '
    const first = tok.encode(story.repeat(4), {addSpecial: true})
    const second = tok.encode(`${story.repeat(4)}One day she saw a big red ball.`, {addSpecial: true})
    assert.ok(first.length > 2 * penalized.penaltyLastN, `the cached prefix (${first.length} tokens) is longer than the penalty window`)
    const freshRun = async () => {
      const c = await model.createContext({nCtx: 256, threads: 1})
      try {
        return await collect(new Session(c).generate(second, {maxTokens: 24, sampling: penalized}))
      } finally {
        c.dispose()
      }
    }
    const ctx = await model.createContext({nCtx: 256, threads: 2})
    try {
      const session = new Session(ctx)
      await collect(session.generate(first, {maxTokens: 8, sampling: penalized}))
      const shared = commonPrefixLength(session.cached, second)
      assert.ok(shared >= first.length - 1)
      const b = session.generate(second, {maxTokens: 24, sampling: penalized})
      assert.equal(b.cachedTokens, shared, 'everything the cache shares with the prompt is reused, penalties or not')
      const rb = await collect(b)
      // Before the history was passed, the last penaltyLastN prompt tokens were evaluated again.
      assert.equal(rb.result.promptTokens, second.length - shared)
      assert.ok(
        rb.result.promptTokens < penalized.penaltyLastN,
        `evaluated ${rb.result.promptTokens} tokens, fewer than the ${penalized.penaltyLastN} of the penalty window`,
      )
      const fb = await freshRun()
      assert.deepEqual(rb.result.tokens, fb.result.tokens)
      assert.deepEqual(Buffer.from(rb.logprobs.buffer), Buffer.from(fb.logprobs.buffer))

      // The control: the same continuation without the history is not what a fresh context gives,
      // so the equality above is the history's doing.
      ctx.kvTruncate(shared)
      const bare = await collect({
        stream: ctx.generate(second.slice(shared), {maxTokens: 24, sampling: penalized, pos: shared}),
        get result() {
          return this.stream.result
        },
      })
      assert.notDeepEqual(bare.result.tokens, fb.result.tokens, 'without the history the penalties see another window')
    } finally {
      ctx.dispose()
    }
  })
})
