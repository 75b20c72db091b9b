// Tool calling through `runner serve` with the real clients and real templates. Anchors: the
// `openai` and `@anthropic-ai/sdk` packages parse every response and stream (their own
// accumulators build the calls from our deltas); ajv validates arguments against each function's
// schema; the templates are the models' own (Qwen 2.5, Llama 3.2, Mistral Nemo from @lenml's
// copies of the published tokenizer_config.json), and the prompts they render are compared with
// Jinja2 (Python) set up as transformers' apply_chat_template. The weights are random: calls are
// forced (tool_choice required or named) so that even noise must produce a valid call.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import {Ajv} from 'ajv'
import type OpenAI from 'openai'

import {hasJinja2, NO_JINJA2_REASON, renderWithJinja2} from '../helpers/jinja2.js'
import {lenmlTemplate, makeLenmlModel} from '../helpers/lenml-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const WEATHER_SCHEMA = {
  type: 'object',
  properties: {city: {type: 'string', minLength: 1, maxLength: 12}, unit: {enum: ['celsius', 'fahrenheit']}},
  required: ['city', 'unit'],
  additionalProperties: false,
}
const TOOLS: OpenAI.ChatCompletionTool[] = [
  {type: 'function', function: {name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA}},
  {
    type: 'function',
    function: {name: 'get_time', description: 'The time now', parameters: {type: 'object', properties: {}, additionalProperties: false}},
  },
]
const validWeather = new Ajv({strict: false}).compile(WEATHER_SCHEMA)
const ASK: OpenAI.ChatCompletionMessageParam[] = [{role: 'user', content: 'What is the weather in Paris?'}]
const QWEN = 'tokenizer-qwen2_5'

let dir: string
let qwenModel: string | undefined

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'runner-tools-'))
  qwenModel = await makeLenmlModel(dir, QWEN)
})
after(() => rmSync(dir, {recursive: true, force: true}))

/** The prompt /apply-template renders for a body. */
async function applyTemplate(t: TestServer, body: Record<string, unknown>): Promise<string> {
  const r = await fetch(`${t.url}/apply-template`, {
    method: 'POST',
    headers: {'content-type': 'application/json'},
    body: JSON.stringify(body),
  })
  const json = (await r.json()) as {prompt?: string; error?: unknown}
  assert.equal(r.status, 200, JSON.stringify(json))
  return json.prompt!
}

const FAMILIES = [
  {name: 'Qwen 2.5 (Hermes <tool_call>)', template: undefined as string | undefined, pkg: QWEN, id: /^call_[A-Za-z0-9]{24}$/},
  {name: 'Llama 3.2 (JSON with "parameters")', template: 'tokenizer-llama3_2', pkg: 'tokenizer-llama3_2', id: /^call_[A-Za-z0-9]{24}$/},
  {name: 'Mistral Nemo ([TOOL_CALLS])', template: 'tokenizer-mistral_nemo', pkg: 'tokenizer-mistral_nemo', id: /^[A-Za-z0-9]{9}$/},
]

for (const family of FAMILIES) {
  describe(`tool calls, ${family.name}`, () => {
    let t: TestServer
    let skip: string | false = false
    before(async () => {
      const template = family.template === undefined ? undefined : lenmlTemplate(family.template)
      if (!qwenModel || (family.template && !template)) {
        skip = `@lenml/${family.pkg} is not installed`
        return
      }
      t = await startTestServer({modelPath: qwenModel, nCtx: 2048, threadsPerSlot: 1, ...(template ? {chatTemplate: template} : {})})
    })
    after(async () => t?.close())

    const forced = {
      model: QWEN,
      messages: ASK,
      tools: TOOLS,
      tool_choice: 'required' as const,
      parallel_tool_calls: false,
      max_tokens: 96,
      temperature: 0,
    }

    test('tool_choice required: a call the SDK parses, arguments valid against the schema, finish_reason tool_calls', async (c) => {
      if (skip) return c.skip(skip)
      const r = await t.client.chat.completions.create(forced)
      const choice = r.choices[0]!
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message))
      assert.equal(choice.message.content, null)
      const calls = choice.message.tool_calls ?? []
      assert.equal(calls.length, 1)
      const call = calls[0]!
      assert.equal(call.type, 'function')
      assert.match(call.id, family.id)
      if (call.type !== 'function') return
      assert.ok(['get_weather', 'get_time'].includes(call.function.name))
      const args: unknown = JSON.parse(call.function.arguments)
      if (call.function.name === 'get_weather') assert.ok(validWeather(args), JSON.stringify(validWeather.errors))
      else assert.deepEqual(args, {})
    })

    test('a named function is the one called; streamed deltas build the same call in the SDK', async (c) => {
      if (skip) return c.skip(skip)
      const body = {...forced, tool_choice: {type: 'function' as const, function: {name: 'get_weather'}}}
      const whole = await t.client.chat.completions.create(body)
      const wc = whole.choices[0]!.message.tool_calls![0]!
      assert.ok(wc.type === 'function' && wc.function.name === 'get_weather')
      assert.ok(validWeather(JSON.parse(wc.function.arguments)))
      const stream = t.client.chat.completions.stream(body)
      const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = []
      stream.on('chunk', (chunk) => deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? [])))
      const final = await stream.finalChatCompletion()
      const sc = final.choices[0]!.message.tool_calls![0]!
      assert.equal(final.choices[0]!.finish_reason, 'tool_calls')
      assert.ok(sc.type === 'function')
      assert.deepEqual([sc.function.name, sc.function.arguments], [wc.function.name, wc.function.arguments])
      // OpenAI's shape: the first delta of a call has its index, id, type and name; later ones only arguments.
      assert.equal(deltas[0]!.index, 0)
      assert.match(deltas[0]!.id!, family.id)
      assert.equal(deltas[0]!.function!.name, 'get_weather')
      assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined))
    })

    test('the tool result goes back through the template (as Jinja2 renders it) and the model answers in text', async (c) => {
      if (skip) return c.skip(skip)
      const r = await t.client.chat.completions.create({...forced, tool_choice: {type: 'function', function: {name: 'get_weather'}}})
      const message = r.choices[0]!.message
      const call = message.tool_calls![0]!
      const history: OpenAI.ChatCompletionMessageParam[] = [...ASK, message, {role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 C'}]
      const answer = await t.client.chat.completions.create({
        model: QWEN,
        messages: history,
        tools: TOOLS,
        tool_choice: 'none',
        max_tokens: 8,
        temperature: 0,
      })
      assert.equal(answer.choices[0]!.message.tool_calls, undefined)
      assert.equal(typeof answer.choices[0]!.message.content, 'string')
      assert.ok(['stop', 'length'].includes(answer.choices[0]!.finish_reason))
      const prompt = await applyTemplate(t, {messages: history, tools: TOOLS})
      assert.ok(prompt.includes('Sunny, 21 C'))
      if (!hasJinja2()) return c.diagnostic(NO_JINJA2_REASON)
      const tokenizer = t.server.state.env.tokenizer
      const tokenText = (id: number | undefined) => (id === undefined ? '' : tokenizer.tokenText(id))
      const expected = renderWithJinja2(t.server.state.env.template.source, {
        messages: [
          ...ASK,
          {
            role: 'assistant',
            content: '',
            tool_calls: [
              {
                id: call.id,
                type: 'function',
                function: {
                  name: 'get_weather',
                  arguments: JSON.parse(call.type === 'function' ? call.function.arguments : '{}') as unknown,
                },
              },
            ],
          },
          {role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 C'},
        ],
        tools: TOOLS,
        add_generation_prompt: true,
        bos_token: tokenText(tokenizer.bos),
        eos_token: tokenText(tokenizer.eos),
      })
      assert.equal(prompt, expected)
    })
  })
}

describe('tool calls with the Anthropic SDK (Qwen 2.5 template)', () => {
  let t: TestServer
  let client: Anthropic
  before(async () => {
    if (!qwenModel) return
    t = await startTestServer({modelPath: qwenModel, nCtx: 2048, threadsPerSlot: 1})
    client = new Anthropic({baseURL: t.url, apiKey: 'unused', maxRetries: 0})
  })
  after(async () => t?.close())
  const tools: Anthropic.Tool[] = [
    {name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER_SCHEMA as Anthropic.Tool.InputSchema},
  ]

  test('tool_choice any: a tool_use block with valid input, stop_reason tool_use; the stream builds the same block', async (c) => {
    if (!qwenModel) return c.skip(`@lenml/${QWEN} is not installed`)
    const body = {
      model: QWEN,
      max_tokens: 96,
      temperature: 0,
      messages: [{role: 'user' as const, content: 'Weather in Paris?'}],
      tools,
      tool_choice: {type: 'any' as const, disable_parallel_tool_use: true},
    }
    const m = await client.messages.create(body)
    assert.equal(m.stop_reason, 'tool_use')
    const use = m.content.find((b) => b.type === 'tool_use')
    assert.ok(use && use.type === 'tool_use', JSON.stringify(m.content))
    assert.equal(use.name, 'get_weather')
    assert.match(use.id, /^toolu_/)
    assert.ok(validWeather(use.input), JSON.stringify(use.input))
    const final = await client.messages.stream(body).finalMessage()
    const streamed = final.content.find((b) => b.type === 'tool_use')
    assert.ok(streamed && streamed.type === 'tool_use')
    assert.deepEqual([streamed.name, streamed.input], [use.name, use.input])
    assert.equal(final.stop_reason, 'tool_use')

    // The result goes back as a tool_result block; the answer is text.
    const reply = await client.messages.create({
      ...body,
      max_tokens: 8,
      tool_choice: {type: 'none'},
      messages: [
        ...body.messages,
        {role: 'assistant', content: m.content},
        {role: 'user', content: [{type: 'tool_result', tool_use_id: use.id, content: 'Sunny'}]},
      ],
    })
    assert.ok(reply.content.every((b) => b.type === 'text'))
    assert.notEqual(reply.stop_reason, 'tool_use')
  })

  test('a tool_result that answers no tool_use is refused naming the block', async (c) => {
    if (!qwenModel) return c.skip(`@lenml/${QWEN} is not installed`)
    // Hostile shapes are 400s naming the field: prototype keys as values, arguments nested past the bound.
    let deep: Record<string, unknown> = {}
    // Past the 64 levels of arguments, short of the 128 of a whole body.
    for (let i = 0; i < 100; i++) deep = {a: deep}
    for (const [body, pattern] of [
      [{tools, tool_choice: {type: 'constructor'}}, /tool_choice\.type must be/],
      [
        {
          tools,
          messages: [
            {role: 'user', content: 'x'},
            {role: 'assistant', content: [{type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: deep}]},
            {role: 'user', content: [{type: 'tool_result', tool_use_id: 'toolu_1', content: 'x'}]},
          ],
        },
        /messages\.1\.content\.0\.input nests deeper than 64/,
      ],
      [
        {messages: [{role: 'user', content: [{type: 'text', text: 'x', cache_control: 42}]}]},
        /messages\.0\.content\.0\.cache_control must be an object/,
      ],
    ] as const) {
      await assert.rejects(
        client.messages.create({model: QWEN, max_tokens: 8, messages: [{role: 'user', content: 'x'}], ...(body as object)} as never),
        (e: unknown) => e instanceof Anthropic.BadRequestError && pattern.test(e.message),
      )
    }
    await assert.rejects(
      client.messages.create({
        model: QWEN,
        max_tokens: 8,
        tools,
        messages: [{role: 'user', content: [{type: 'tool_result', tool_use_id: 'toolu_x', content: 'x'}]}],
      }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /messages\.0\.content\.0\.tool_use_id/.test(e.message),
    )
  })
})

describe('tool calls on a template without tool support (the generic JSON format)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 512, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  test('the tools are described in the system prompt; a forced call parses; auto answers text or a call, never raw JSON', async () => {
    const prompt = await applyTemplate(t, {messages: ASK, tools: TOOLS})
    assert.ok(prompt.startsWith('<|im_start|>system\nYou can call these functions:\n{"name":"get_weather"'), prompt)
    // stories260K's context is 512 tokens: one tool leaves room for the answer.
    const one = [TOOLS[0]!]
    const r = await t.client.chat.completions.create({
      model: 'stories260K',
      messages: ASK,
      tools: one,
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_tokens: 96,
      temperature: 0,
    })
    const call = r.choices[0]!.message.tool_calls?.[0]
    assert.ok(call?.type === 'function', JSON.stringify(r.choices[0]))
    assert.equal(r.choices[0]!.finish_reason, 'tool_calls')
    if (call.function.name === 'get_weather') assert.ok(validWeather(JSON.parse(call.function.arguments)))
    const auto = await t.client.chat.completions.create({model: 'stories260K', messages: ASK, tools: one, max_tokens: 96, temperature: 0})
    const m = auto.choices[0]!.message
    if (auto.choices[0]!.finish_reason !== 'length')
      assert.ok((m.tool_calls?.length ?? 0) > 0 || !m.content!.startsWith('{'), JSON.stringify(m))
  })

  test('openai runTools: the SDK calls the function with the parsed arguments and sends the result back', async () => {
    const seen: unknown[] = []
    const runner = t.client.chat.completions.runTools(
      {
        model: 'stories260K',
        messages: ASK,
        max_tokens: 128,
        temperature: 0,
        tool_choice: {type: 'function', function: {name: 'get_time'}},
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_time',
              parameters: {type: 'object', properties: {}, additionalProperties: false},
              parse: JSON.parse,
              function: (args: unknown) => {
                seen.push(args)
                return '12:00'
              },
            },
          },
        ],
      },
      {maxChatCompletions: 2},
    )
    await runner.done()
    assert.ok(seen.length >= 1)
    assert.deepEqual(seen[0], {})
    const toolMessages = runner.messages.filter((m) => m.role === 'tool')
    assert.ok(toolMessages.length >= 1 && toolMessages[0]!.content === '12:00')
  })

  test('a history ending with the assistant is a prefill: the prompt stops after its text and the answer continues it', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      {role: 'user', content: 'Tell a story.'},
      {role: 'assistant', content: 'Once upon a time'},
    ]
    const prompt = await applyTemplate(t, {messages})
    assert.ok(prompt.endsWith('<|im_start|>assistant\nOnce upon a time'), prompt)
    // Located exactly: text that also occurs in the template's own markup is not cut there.
    for (const text of ['im', 'end', 'Sure, ']) {
      const p = await applyTemplate(t, {
        messages: [
          {role: 'user', content: 'Say it.'},
          {role: 'assistant', content: text},
        ],
      })
      assert.ok(p.endsWith(`<|im_start|>assistant\n${text}`), JSON.stringify(p))
    }
    const plain = await t.client.completions.create({model: 'stories260K', prompt, max_tokens: 12, temperature: 0})
    const r = await t.client.chat.completions.create({model: 'stories260K', messages, max_tokens: 12, temperature: 0})
    // The same tokens as a text completion of the rendered prompt (BOS aside: the chat prompt parses special tokens).
    assert.equal(typeof r.choices[0]!.message.content, 'string')
    assert.equal(r.usage?.completion_tokens, plain.usage?.completion_tokens)
  })

  test('fields a template would drop are refused by name: a participant name ChatML cannot show', async () => {
    await assert.rejects(
      t.client.chat.completions.create({model: 'stories260K', messages: [{role: 'user', content: 'hi', name: 'ann'}], max_tokens: 4}),
      (e: unknown) => (e as {status?: number; param?: string}).status === 400 && (e as {param?: string}).param === 'messages[0].name',
    )
    // ChatML renders a later system message as it is: accepted.
    const late = await t.client.chat.completions.create({
      model: 'stories260K',
      messages: [
        {role: 'user', content: 'hi'},
        {role: 'assistant', content: 'hello'},
        {role: 'system', content: 'Be brief.'},
        {role: 'user', content: 'more'},
      ],
      max_tokens: 4,
    })
    assert.equal(late.choices.length, 1)
  })

  test("a reply sent back as the OpenAI Agents SDK sends it (the message's fields copied into its text part) is read; other part fields are refused", async () => {
    const echoed = {type: 'text', text: 'Hello', role: 'assistant', refusal: null, tool_calls: []}
    const history = (part: Record<string, unknown>) => [
      {role: 'user', content: 'hi'},
      {role: 'assistant', content: [part]},
      {role: 'user', content: 'more'},
    ]
    const plain = await applyTemplate(t, {messages: history({type: 'text', text: 'Hello'})})
    assert.equal(await applyTemplate(t, {messages: history(echoed)}), plain)
    const r = await fetch(`${t.url}/apply-template`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({messages: history({type: 'text', text: 'x', colour: 'red'})}),
    })
    assert.equal(r.status, 400)
    assert.equal(((await r.json()) as {error: {param: string}}).error.param, 'messages[1].content[0].colour')
  })

  test('a role that is a prototype key is refused as a role, not taken for one', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({
        model: 'stories260K',
        messages: [
          {role: 'constructor', content: 'x'},
          {role: 'user', content: 'x'},
        ],
      }),
    })
    assert.equal(r.status, 400)
    assert.equal(((await r.json()) as {error: {param: string}}).error.param, 'messages[0].role')
  })

  test('tools: null, tools: [] and tool_choice "none" mean no tools', async () => {
    for (const extra of [{tools: null}, {tools: []}, {tools: TOOLS, tool_choice: 'none'}]) {
      const r = await t.client.chat.completions.create({
        model: 'stories260K',
        messages: ASK,
        max_tokens: 4,
        temperature: 0,
        ...(extra as object),
      })
      assert.equal(r.choices[0]!.message.tool_calls, undefined)
    }
  })
})
