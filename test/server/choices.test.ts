// n > 1 on chat and text completions: choice i is exactly the single-choice request with seed + i
// (each choice reproducible alone, whatever the batch it came in), streamed choices assemble to
// the same texts, and usage counts the shared prompt once.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const MODEL = 'stories260K'

describe('n choices', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 256, threadsPerSlot: 1, parallel: 2})
  })
  after(async () => t?.close())
  const messages = [{role: 'user' as const, content: 'Once upon a time'}]

  test('chat: choice i equals the request with seed + i; usage counts the prompt once', async () => {
    const body = {model: MODEL, messages, max_tokens: 24, temperature: 1, seed: 40}
    const r = await t.client.chat.completions.create({...body, n: 3})
    assert.deepEqual(
      r.choices.map((c) => c.index),
      [0, 1, 2],
    )
    const singles = await Promise.all([0, 1, 2].map((i) => t.client.chat.completions.create({...body, seed: 40 + i})))
    assert.deepEqual(
      r.choices.map((c) => c.message.content),
      singles.map((x) => x.choices[0]!.message.content),
    )
    assert.equal(new Set(r.choices.map((c) => c.message.content)).size > 1, true, 'sampled choices differ')
    assert.equal(r.usage?.prompt_tokens, singles[0]!.usage?.prompt_tokens)
    assert.equal(
      r.usage?.completion_tokens,
      singles.reduce((n, x) => n + x.usage!.completion_tokens, 0),
    )
  })

  test('streamed choices assemble to the non-streamed ones; text completions too', async () => {
    const body = {model: MODEL, messages, max_tokens: 16, temperature: 1, seed: 3, n: 2}
    const whole = await t.client.chat.completions.create(body)
    const texts = ['', '']
    const finishes: Array<string | null> = [null, null]
    for await (const chunk of await t.client.chat.completions.create({...body, stream: true, stream_options: {include_usage: true}})) {
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? ''
        if (c.finish_reason) finishes[c.index] = c.finish_reason
      }
      if (chunk.usage) assert.equal(chunk.usage.completion_tokens, whole.usage?.completion_tokens)
    }
    assert.deepEqual(
      texts,
      whole.choices.map((c) => c.message.content),
    )
    assert.deepEqual(
      finishes,
      whole.choices.map((c) => c.finish_reason),
    )
    const text = await t.client.completions.create({
      model: MODEL,
      prompt: 'Once upon a time',
      max_tokens: 12,
      temperature: 1,
      seed: 9,
      n: 2,
    })
    const second = await t.client.completions.create({model: MODEL, prompt: 'Once upon a time', max_tokens: 12, temperature: 1, seed: 10})
    assert.equal(text.choices[1]!.text, second.choices[0]!.text)
  })
})
