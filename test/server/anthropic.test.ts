// Anthropic's Messages API on the same server, driven by the official @anthropic-ai/sdk client:
// the SDK parses every message, stream event and error (its own APIError subclasses). Anchors: the
// SDK itself, and the OpenAI route of the same server given the same history (system prompt as a
// system message), which the other tests tie to `runner run` and @huggingface/jinja.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer, waitIdle} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const MODEL = 'stories260K'

describe('POST /v1/messages with @anthropic-ai/sdk', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  let client: Anthropic
  before(async () => {
    t = await startTestServer({modelPath: STORIES, parallel: 2, nCtx: 256, threadsPerSlot: 1, apiKey: 'k'})
    client = new Anthropic({baseURL: t.url, apiKey: 'k', maxRetries: 0})
  })
  after(async () => t?.close())

  const system = 'You tell stories.'
  const messages = [{role: 'user' as const, content: 'Once upon a time'}]

  test('a greedy message equals the OpenAI route on the same history; streaming gives the same text and usage', async () => {
    const m = await client.messages.create({model: MODEL, system, messages, max_tokens: 40, temperature: 0})
    const o = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{role: 'system', content: system}, ...messages],
      max_tokens: 40,
      temperature: 0,
    })
    assert.equal(m.type, 'message')
    assert.equal(m.role, 'assistant')
    assert.equal(m.content.length, 1)
    const block = m.content[0]!
    assert.equal(block.type, 'text')
    assert.equal(block.type === 'text' ? block.text : '', o.choices[0]!.message.content)
    assert.equal(m.usage.input_tokens, o.usage?.prompt_tokens)
    assert.equal(m.usage.output_tokens, o.usage?.completion_tokens)
    assert.equal(m.stop_reason, o.choices[0]!.finish_reason === 'length' ? 'max_tokens' : 'end_turn')

    const stream = client.messages.stream({model: MODEL, system: [{type: 'text', text: system}], messages, max_tokens: 40, temperature: 0})
    let deltas = ''
    stream.on('text', (text) => (deltas += text))
    const final = await stream.finalMessage()
    const finalBlock = final.content[0]!
    assert.equal(finalBlock.type === 'text' ? finalBlock.text : '', block.type === 'text' ? block.text : '')
    assert.equal(deltas, block.type === 'text' ? block.text : '')
    assert.equal(final.usage.output_tokens, m.usage.output_tokens)
    assert.equal(final.stop_reason, m.stop_reason)
  })

  test('stop_sequences: stop_reason "stop_sequence" names the one that matched', async () => {
    const free = await client.messages.create({model: MODEL, messages, max_tokens: 40, temperature: 0})
    const text = free.content[0]!.type === 'text' ? free.content[0]!.text : ''
    const word = text.split(' ').filter((w) => w.length > 3)[1]!
    const m = await client.messages.create({model: MODEL, messages, max_tokens: 40, temperature: 0, stop_sequences: ['qqqq', word]})
    assert.equal(m.stop_reason, 'stop_sequence')
    assert.equal(m.stop_sequence, word)
    assert.equal(m.content[0]!.type === 'text' ? m.content[0]!.text : '', text.slice(0, text.indexOf(word)))
  })

  test("refusals are the SDK's own errors, in Anthropic's error shape", async () => {
    const bad = async (body: Record<string, unknown>, ctor: new (...args: never[]) => Error, pattern: RegExp) => {
      try {
        await client.messages.create({model: MODEL, messages, max_tokens: 8, ...body} as never)
      } catch (error) {
        assert.ok(error instanceof ctor, `${String(error)}`)
        const e = error as InstanceType<typeof Anthropic.APIError>
        assert.match(e.message, pattern)
        assert.equal((e.error as {type: string}).type, 'error')
        return
      }
      assert.fail('expected an error')
    }
    await bad({temperature: 1.5}, Anthropic.BadRequestError, /temperature/)
    await bad({thinking: {type: 'enabled', budget_tokens: 1024}}, Anthropic.BadRequestError, /thinking is not supported/)
    await bad({tools: [{name: 'f'}]}, Anthropic.BadRequestError, /tools\.0\.input_schema is required/)
    await bad(
      {tools: [{name: 'f', input_schema: {type: 'object'}}], tool_choice: {type: 'tool', name: 'g'}},
      Anthropic.BadRequestError,
      /tool_choice\.name .*g.* is not one of the tools given \(f\)/,
    )
    await bad(
      {messages: [{role: 'user', content: [{type: 'image', source: {type: 'base64', media_type: 'image/png', data: 'AA=='}}]}]},
      Anthropic.BadRequestError,
      /text-only/,
    )
    await bad({messages: [{role: 'system', content: 'x'}]}, Anthropic.BadRequestError, /takes the system prompt in the top-level/)
    await bad({model: 'claude-sonnet-4'}, Anthropic.NotFoundError, /does not exist/)
    await bad({max_tokens: 1000}, Anthropic.BadRequestError, /max_tokens/)
    const noKey = new Anthropic({baseURL: t.url, apiKey: 'wrong', maxRetries: 0})
    await assert.rejects(noKey.messages.create({model: MODEL, messages, max_tokens: 2}), Anthropic.AuthenticationError)
    await waitIdle(t.url, 2000)
  })
})
