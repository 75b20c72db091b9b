// POST /v1/messages/count_tokens through @anthropic-ai/sdk's messages.countTokens(). Anchors: the
// SDK parses the answer (MessageTokensCount) and its errors; the count must equal the
// usage.input_tokens that /v1/messages reports for the same request (and the OpenAI route's
// prompt_tokens for the same history, which test/server/openai.test.ts ties to llama.cpp's tokens).
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const MODEL = 'stories260K'

describe('POST /v1/messages/count_tokens with @anthropic-ai/sdk', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  let a: Anthropic
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 256, threadsPerSlot: 1, apiKey: 'k'})
    a = new Anthropic({baseURL: t.url, apiKey: 'k', maxRetries: 0})
  })
  after(async () => t?.close())

  const cases: Array<{name: string; system?: Anthropic.MessageCountTokensParams['system']; messages: Anthropic.MessageParam[]}> = [
    {name: 'one turn', messages: [{role: 'user', content: 'Once upon a time'}]},
    {name: 'a system string', system: 'You tell stories.', messages: [{role: 'user', content: 'Hi'}]},
    {
      name: 'system blocks and several turns',
      system: [
        {type: 'text', text: 'You tell '},
        {type: 'text', text: 'stories.'},
      ],
      messages: [
        {role: 'user', content: [{type: 'text', text: 'Tell me one'}]},
        {role: 'assistant', content: 'There was a cat.'},
        {role: 'user', content: 'And then?'},
      ],
    },
  ]

  for (const c of cases) {
    test(`${c.name}: input_tokens equals the usage.input_tokens of the real request`, async () => {
      const counted = await a.messages.countTokens({model: MODEL, messages: c.messages, ...(c.system ? {system: c.system} : {})})
      assert.deepEqual(Object.keys(counted), ['input_tokens'])
      const m = await a.messages.create({model: MODEL, messages: c.messages, max_tokens: 2, ...(c.system ? {system: c.system} : {})})
      assert.equal(counted.input_tokens, m.usage.input_tokens)
      const system =
        c.system === undefined
          ? []
          : [{role: 'system' as const, content: typeof c.system === 'string' ? c.system : c.system.map((b) => b.text).join('')}]
      const o = await t.client.chat.completions.create({
        model: MODEL,
        messages: [
          ...system,
          ...c.messages.map((x) => ({
            role: x.role,
            content: typeof x.content === 'string' ? x.content : x.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
          })),
        ],
        max_tokens: 2,
      })
      assert.equal(counted.input_tokens, o.usage?.prompt_tokens)
    })
  }

  test('a history longer than a slot is counted (a client counts to know), where /v1/messages refuses it', async () => {
    const long = [{role: 'user' as const, content: 'Once upon a time there was a little girl. '.repeat(40)}]
    const counted = await a.messages.countTokens({model: MODEL, messages: long})
    assert.ok(counted.input_tokens > 256, String(counted.input_tokens))
    await assert.rejects(a.messages.create({model: MODEL, messages: long, max_tokens: 2}), Anthropic.BadRequestError)
  })

  test("refusals as /v1/messages refuses, in Anthropic's shape, naming the field", async () => {
    const messages = [{role: 'user' as const, content: 'Hi'}]
    const refused = async (body: Record<string, unknown>, ctor: new (...args: never[]) => Error, pattern: RegExp) => {
      try {
        await a.messages.countTokens({model: MODEL, messages, ...body} as never)
      } catch (error) {
        assert.ok(error instanceof ctor, String(error))
        const e = (error as InstanceType<typeof Anthropic.APIError>).error as {type: string; error: {type: string; message: string}}
        assert.equal(e.type, 'error')
        assert.match(e.error.message, pattern)
        return
      }
      assert.fail('expected an error')
    }
    // Generation fields are not count_tokens fields (the SDK's MessageCountTokensParams has none of them).
    await refused({max_tokens: 10}, Anthropic.BadRequestError, /^max_tokens: Unrecognized request argument/)
    await refused({temperature: 0.5}, Anthropic.BadRequestError, /^temperature: Unrecognized/)
    await refused({stream: true}, Anthropic.BadRequestError, /^stream: Unrecognized/)
    await refused({model: 'claude-sonnet-4-5'}, Anthropic.NotFoundError, /--accept-any-model/)
    await refused({messages: [{role: 'system', content: 'x'}]}, Anthropic.BadRequestError, /top-level "system" field/)
    await refused({messages: []}, Anthropic.BadRequestError, /messages/)
    await refused({thinking: {type: 'enabled', budget_tokens: 1024}}, Anthropic.BadRequestError, /thinking is not supported/)
    await refused({output_config: {format: {type: 'json_schema', schema: 7}}}, Anthropic.BadRequestError, /output_config\.format\.schema/)
    await refused({model: undefined}, Anthropic.BadRequestError, /model/)
    await assert.rejects(
      new Anthropic({baseURL: t.url, apiKey: 'no', maxRetries: 0}).messages.countTokens({model: MODEL, messages}),
      Anthropic.AuthenticationError,
    )
    // A structured-output request is counted like the plain one: the constraint does not change the prompt.
    const plain = await a.messages.countTokens({model: MODEL, messages})
    const shaped = await a.messages.countTokens({
      model: MODEL,
      messages,
      output_config: {format: {type: 'json_schema', schema: {type: 'object'}}},
    })
    assert.equal(shaped.input_tokens, plain.input_tokens)
  })
})
