// Structured output through `runner serve`, driven by the official clients: openai's
// `chat.completions.parse` (response_format json_schema, the path the SDK's helpers take) and
// `create` with json_object, streaming included; @anthropic-ai/sdk with output_config.format. Anchors:
// the SDKs parse every response and error; ajv (a real validator) judges every document; JSON.parse.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import {Ajv2020} from 'ajv/dist/2020.js'
import OpenAI from 'openai'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const MODEL = 'stories260K'
const PERSON = {
  type: 'object',
  properties: {
    name: {type: 'string', minLength: 1, maxLength: 10},
    age: {type: 'integer', minimum: 0, maximum: 99},
    pet: {enum: ['cat', 'dog']},
  },
  required: ['name', 'age', 'pet'],
  additionalProperties: false,
}
const validPerson = new Ajv2020({strict: false}).compile(PERSON)
const messages = [{role: 'user' as const, content: 'Tell me about a person.'}]

async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, String(error))
    return error
  }
  assert.fail('expected a refusal')
}

describe('structured output through runner serve', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), parallel: 2, nCtx: 512, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  test('openai chat.completions.parse with a json_schema: message.parsed is valid under ajv, for several seeds', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = await t.client.chat.completions.parse({
        model: MODEL,
        messages,
        max_tokens: 300,
        temperature: 1,
        seed,
        response_format: {type: 'json_schema', json_schema: {name: 'person', schema: PERSON, strict: true}},
      })
      const choice = r.choices[0]!
      assert.equal(choice.finish_reason, 'stop', choice.message.content ?? '')
      assert.ok(validPerson(choice.message.parsed), `${choice.message.content}: ${JSON.stringify(validPerson.errors)}`)
    }
  })

  test('streaming with a json_schema: the deltas concatenate to a valid document', async () => {
    const stream = await t.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 300,
      seed: 9,
      stream: true,
      response_format: {type: 'json_schema', json_schema: {name: 'person', schema: PERSON}},
    })
    let text = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    assert.equal(finish, 'stop')
    assert.ok(validPerson(JSON.parse(text)), text)
  })

  test('json_object: an object, or (out of tokens) the start of one', async () => {
    const r = await t.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 200,
      seed: 5,
      response_format: {type: 'json_object'},
    })
    const text = r.choices[0]!.message.content ?? ''
    assert.ok(text.startsWith('{'), text)
    if (r.choices[0]!.finish_reason === 'stop') assert.equal(typeof JSON.parse(text), 'object')
  })

  test("a schema that cannot be honoured exactly is refused naming the keyword and pointer, in OpenAI's error shape", async () => {
    const bad = await refusal(
      t.client.chat.completions.create({
        model: MODEL,
        messages,
        max_tokens: 10,
        response_format: {
          type: 'json_schema',
          json_schema: {name: 'x', schema: {type: 'object', properties: {a: {type: 'array', uniqueItems: true}}}},
        },
      }),
    )
    assert.equal(bad.status, 400)
    assert.equal(bad.param, 'response_format.json_schema.schema')
    assert.match(bad.message, /uniqueItems/)
    assert.match(bad.message, /\/properties\/a/)
    const unnamed = await refusal(
      t.client.chat.completions.create({
        model: MODEL,
        messages,
        response_format: {type: 'json_schema', json_schema: {schema: {}}},
      } as never),
    )
    assert.equal(unnamed.param, 'response_format.json_schema.name')
    const extra = await refusal(
      t.client.chat.completions.create({
        model: MODEL,
        messages,
        response_format: {type: 'json_schema', json_schema: {name: 'x', schema: {}, frob: 1}},
      } as never),
    )
    assert.equal(extra.param, 'response_format.json_schema.frob')
    // Not honoured, so refused by name: a description the model would be shown, a schema left out.
    const described = await refusal(
      t.client.chat.completions.create({
        model: MODEL,
        messages,
        response_format: {type: 'json_schema', json_schema: {name: 'x', schema: {}, description: 'a person'}},
      }),
    )
    assert.equal(described.param, 'response_format.json_schema.description')
    const schemaless = await refusal(
      t.client.chat.completions.create({model: MODEL, messages, response_format: {type: 'json_schema', json_schema: {name: 'x'}}}),
    )
    assert.equal(schemaless.param, 'response_format.json_schema.schema')
  })

  test('Anthropic output_config.format json_schema: the text block is a valid document; a bad schema is an Anthropic error', async () => {
    const client = new Anthropic({baseURL: t.url, apiKey: 'k', maxRetries: 0})
    const m = await client.messages.create({
      model: MODEL,
      messages,
      max_tokens: 300,
      output_config: {format: {type: 'json_schema', schema: PERSON}},
    })
    assert.equal(m.stop_reason, 'end_turn')
    const block = m.content[0]!
    assert.equal(block.type, 'text')
    assert.ok(validPerson(JSON.parse(block.type === 'text' ? block.text : '')))
    try {
      await client.messages.create({
        model: MODEL,
        messages,
        max_tokens: 10,
        output_config: {format: {type: 'json_schema', schema: {not: {}}}},
      })
      assert.fail('expected a refusal')
    } catch (error) {
      assert.ok(error instanceof Anthropic.BadRequestError, String(error))
      assert.match(error.message, /output_config\.format\.schema|not/)
    }
  })
})
