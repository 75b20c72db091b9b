// Work bounded by the request's own limits before it is done (issue #18, items 2, 3 and 8's 1 MB
// stop). Before this slice 130,000 tiny messages were all tokenized before the context check
// refused them (three such requests blocked /health for 11 s), a 1 MB stop string was accepted,
// and a hostile template held the event loop for good. Each case below failed then: the counts came
// back as context_length_exceeded (after the tokenizing) or 200, and /health answered only after
// the big request (or never). The refusals use OpenAI's own codes (array_above_max_length,
// string_above_max_length) and Anthropic's error shape.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {postRaw, startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const skip = hasShared() ? false : NO_SHARED_REASON

describe('request limits, checked before any rendering or tokenizing', {skip}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 256, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  const chat = (extra: Record<string, unknown>) =>
    postRaw(t.url, '/v1/chat/completions', JSON.stringify({model: 'stories260K', messages: [{role: 'user', content: 'x'}], ...extra}))

  test('130,000 tiny messages (under the body limit) are refused by count at once; /health answers meanwhile', async () => {
    const messages = Array.from({length: 130_000}, () => ({role: 'user', content: 'x'}))
    const body = JSON.stringify({model: 'stories260K', messages})
    assert.ok(body.length < 4 << 20)
    const requests = [0, 1, 2].map(() => postRaw(t.url, '/v1/chat/completions', body))
    const t0 = performance.now()
    const health = await fetch(`${t.url}/health`)
    const healthMs = performance.now() - t0
    assert.equal(health.status, 200)
    for (const r of await Promise.all(requests)) {
      assert.equal(r.status, 400)
      assert.equal(r.body.error.code, 'array_above_max_length')
      assert.equal(r.body.error.param, 'messages')
      assert.match(r.body.error.message, /maximum length 2048, but got an array with length 130000 .*--max-messages/)
    }
    assert.ok(healthMs < 2000, `/health took ${healthMs.toFixed(0)} ms beside three such requests`)
  })

  test('Anthropic: messages, system blocks and stop_sequences by count and size, in its error shape', async () => {
    const post = (extra: Record<string, unknown>) =>
      postRaw(
        t.url,
        '/v1/messages',
        JSON.stringify({model: 'stories260K', max_tokens: 4, messages: [{role: 'user', content: 'x'}], ...extra}),
      ) as unknown as Promise<{status: number; body: {type: string; error: {type: string; message: string}}}>
    const many = await post({messages: Array.from({length: 3000}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: 'x'}))})
    assert.equal(many.status, 400)
    assert.equal(many.body.type, 'error')
    assert.equal(many.body.error.type, 'invalid_request_error')
    assert.match(many.body.error.message, /Invalid 'messages': array too long/)
    const system = await post({system: Array.from({length: 300}, () => ({type: 'text', text: 'x'}))})
    assert.match(system.body.error.message, /Invalid 'system': array too long/)
    const stop = await post({stop_sequences: ['x'.repeat(5000)]})
    assert.match(stop.body.error.message, /Invalid 'stop_sequences\.0': string too long/)
  })

  test('a 1 MB stop string is refused by size', async () => {
    const r = await chat({stop: 'x'.repeat(1 << 20)})
    assert.equal(r.status, 400)
    assert.equal(r.body.error.code, 'string_above_max_length')
    assert.equal(r.body.error.param, 'stop')
    const second = await chat({stop: ['ok', 'y'.repeat(2000)]})
    assert.equal(second.body.error.param, 'stop[1]')
  })

  test('tools, content parts and logit_bias entries are refused past their limits, naming the field', async () => {
    const tool = (i: number) => ({type: 'function', function: {name: `f${i}`, parameters: {type: 'object'}}})
    const tools = await chat({tools: Array.from({length: 129}, (_, i) => tool(i))})
    assert.deepEqual([tools.status, tools.body.error.param, tools.body.error.code], [400, 'tools', 'array_above_max_length'])
    const parts = await chat({messages: [{role: 'user', content: Array.from({length: 257}, () => ({type: 'text', text: 'x'}))}]})
    assert.equal(parts.body.error.param, 'messages[0].content')
    const bias = await chat({logit_bias: Object.fromEntries(Array.from({length: 1025}, (_, i) => [String(i), 1]))})
    assert.deepEqual([bias.body.error.param, bias.body.error.code], ['logit_bias', 'object_above_max_size'])
  })

  test('text that cannot fit the context is refused before it is tokenized, naming the field', async () => {
    // stories260K: a 256-token slot, and no token covers more than a handful of bytes.
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {limits: {prompt_chars_per_slot: number}}
    const most = caps.limits.prompt_chars_per_slot
    assert.ok(most > 256 && most < 256 * 64, `prompt_chars_per_slot ${most}`)
    const text = 'Once upon a time '.repeat(Math.ceil((most + 100) / 17))
    const c = await postRaw(t.url, '/v1/completions', JSON.stringify({model: 'stories260K', prompt: text, max_tokens: 1}))
    assert.deepEqual([c.status, c.body.error.code, c.body.error.param], [400, 'context_length_exceeded', 'prompt'])
    assert.match(c.body.error.message, /characters of text/)
    const m = await chat({messages: [{role: 'user', content: text}]})
    assert.deepEqual([m.body.error.code, m.body.error.param], ['context_length_exceeded', 'messages'])
  })

  test('count_tokens counts, and /apply-template renders, a history longer than the context all the same', async () => {
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {limits: {prompt_chars_per_slot: number}}
    const text = 'Once upon a time '.repeat(Math.ceil((caps.limits.prompt_chars_per_slot + 100) / 17))
    const count = await fetch(`${t.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({model: 'stories260K', messages: [{role: 'user', content: text}]}),
    })
    assert.equal(count.status, 200)
    assert.ok(((await count.json()) as {input_tokens: number}).input_tokens > 256)
    const applied = await postRaw(t.url, '/apply-template', JSON.stringify({messages: [{role: 'user', content: text}]}))
    assert.equal(applied.status, 200)
  })

  test('a large tokenization runs off the event loop: /health answers before it does', async () => {
    const text = 'Once upon a time there was a little girl named Lily. '.repeat(6_000)
    let tokenizedAt = 0
    const big = fetch(`${t.url}/tokenize`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({content: text}),
    }).then(async (r) => {
      tokenizedAt = performance.now()
      return (await r.json()) as {tokens: number[]}
    })
    // Let the big body arrive and its tokenizing begin.
    await new Promise((r) => setTimeout(r, 150))
    const health = await fetch(`${t.url}/health`)
    const healthAt = performance.now()
    assert.equal(health.status, 200)
    const tokens = (await big).tokens
    assert.ok(tokens.length > 50_000, `${tokens.length} tokens`)
    assert.ok(healthAt < tokenizedAt, `/health answered ${(tokenizedAt - healthAt).toFixed(0)} ms before the tokenization`)
  })

  test('/tokenize takes at most --max-content-parts text parts (each is a worker job); token ids are not counted', async () => {
    const many = await postRaw(t.url, '/tokenize', JSON.stringify({content: Array.from({length: 300}, () => 'a')}))
    assert.deepEqual([many.status, many.body.error.code, many.body.error.param], [400, 'array_above_max_length', 'content'])
    const ids = await fetch(`${t.url}/tokenize`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({content: ['a', ...Array(1000).fill(5)]}),
    })
    assert.equal(((await ids.json()) as {tokens: number[]}).tokens.length > 1000, true)
  })

  test('the limits are in /v1/capabilities, with the template budget', async () => {
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {limits: Record<string, unknown>}
    assert.equal(caps.limits.max_messages, 2048)
    assert.equal(caps.limits.max_stop_length, 1024)
    assert.deepEqual(Object.keys(caps.limits.chat_template_budget as object).sort(), ['listItems', 'milliseconds', 'steps', 'valueChars'])
  })
})

describe('limits given as options are honoured', {skip}, () => {
  test('--max-messages 3 refuses a fourth message; an option out of range is refused by its flag name', async () => {
    const t = await startTestServer({modelPath: STORIES, nCtx: 256, threadsPerSlot: 1, requestLimits: {messages: 3}})
    try {
      const four = Array.from({length: 4}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: 'x'}))
      const r = await postRaw(t.url, '/v1/chat/completions', JSON.stringify({model: 'stories260K', messages: four, max_tokens: 1}))
      assert.match(r.body.error.message, /maximum length 3, but got an array with length 4/)
      const ok = await postRaw(
        t.url,
        '/v1/chat/completions',
        JSON.stringify({model: 'stories260K', messages: four.slice(1), max_tokens: 1}),
      )
      assert.equal(ok.status, 200)
    } finally {
      await t.close()
    }
    await assert.rejects(startTestServer({modelPath: STORIES, requestLimits: {stopChars: 0}}), /--max-stop-length 0 must be an integer/)
  })
})

describe('a hostile chat template cannot hang the server', {skip}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-template-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('a template that loops on every history is refused at start, by name', {timeout: 60_000}, async () => {
    await assert.rejects(
      startTestServer({modelPath: STORIES, nCtx: 256, threadsPerSlot: 1, chatTemplate: '{% for i in range(10000000) %}ab{% endfor %}'}),
      (e: Error & {code?: string}) => e.code === 'CHAT_TEMPLATE_BUDGET' && /render budget/.test(e.message),
    )
  })

  test('one that loops only on longer histories: that request is refused, /health answers throughout', {timeout: 60_000}, async () => {
    const template =
      '{% if messages|length > 4 %}{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}{% endif %}' +
      '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}'
    const t = await startTestServer({modelPath: STORIES, nCtx: 256, threadsPerSlot: 1, chatTemplate: template})
    try {
      const five = Array.from({length: 5}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: 'x'}))
      let answeredAt = 0
      const hostile = postRaw(t.url, '/v1/chat/completions', JSON.stringify({model: 'stories260K', messages: five, max_tokens: 1})).then(
        (r) => {
          answeredAt = performance.now()
          return r
        },
      )
      await new Promise((r) => setTimeout(r, 100))
      const t0 = performance.now()
      const health = await fetch(`${t.url}/health`)
      const healthAt = performance.now()
      assert.equal(health.status, 200)
      assert.ok(healthAt - t0 < 1000, `/health took ${(healthAt - t0).toFixed(0)} ms`)
      const r = await hostile
      assert.ok(healthAt < answeredAt, '/health answered while the template was still looping')
      assert.equal(r.status, 400)
      assert.equal(r.body.error.code, 'chat_template_budget')
      // The next request is served as usual.
      const ok = await t.client.chat.completions.create({model: 'stories260K', messages: [{role: 'user', content: 'hi'}], max_tokens: 2})
      assert.equal(ok.choices.length, 1)
    } finally {
      await t.close()
    }
  })
})
