// OpenAI's Responses API on `runner serve`, consumed by the clients whose default path it is: the
// `openai` SDK (responses.create, its ResponseStream event accumulator, responses.parse with a zod
// text format), the OpenAI Agents SDK's default Responses model (tools and handoffs), the Vercel
// AI SDK's `openai(model)` and LangChain with useResponsesApi. Anchors: each client's own parsing and
// validation (the SDKs' types, zod), ajv for arguments, and the chat completions route of the same
// server given the same history (same greedy tokens: the two routes share slots and templates).
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {createOpenAI} from '@ai-sdk/openai'
import {ChatOpenAI} from '@langchain/openai'
import {Agent, OpenAIResponsesModel, run, tool as agentTool} from '@openai/agents'
import {generateText, Output, tool} from 'ai'
import {Ajv} from 'ajv'
import OpenAI from 'openai'
import {zodTextFormat} from 'openai/helpers/zod'
import {z} from 'zod'

import {lenmlServer} from './lenml-server.js'

const MODEL = 'tokenizer-qwen2_5'
const WEATHER = {
  type: 'object',
  properties: {city: {type: 'string', minLength: 1, maxLength: 12}},
  required: ['city'],
  additionalProperties: false,
}
const TOOLS: OpenAI.Responses.FunctionTool[] = [
  {type: 'function', name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER, strict: true},
]
const validWeather = new Ajv({strict: false}).compile(WEATHER)

const server = lenmlServer(MODEL)

describe('POST /v1/responses with the openai SDK', () => {
  test('text: output_text equals the chat completion of the same history; usage counts tokens; a short budget is incomplete', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const r = await t!.client.responses.create({
      model: MODEL,
      instructions: 'Be brief.',
      input: 'Hello',
      max_output_tokens: 12,
      temperature: 0,
    })
    const chat = await t!.client.chat.completions.create({
      model: MODEL,
      messages: [
        {role: 'system', content: 'Be brief.'},
        {role: 'user', content: 'Hello'},
      ],
      max_tokens: 12,
      temperature: 0,
    })
    assert.equal(r.object, 'response')
    assert.equal(r.output_text, chat.choices[0]!.message.content)
    assert.equal(r.usage?.input_tokens, chat.usage?.prompt_tokens)
    assert.equal(r.usage?.output_tokens, chat.usage?.completion_tokens)
    assert.equal(typeof r.usage?.input_tokens_details.cached_tokens, 'number')
    assert.equal(r.status, chat.choices[0]!.finish_reason === 'length' ? 'incomplete' : 'completed')
    if (r.status === 'incomplete') assert.equal(r.incomplete_details?.reason, 'max_output_tokens')
  })

  test('the stream: its events in order, accumulated by the SDK into the same response', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const body = {model: MODEL, input: 'Hello', max_output_tokens: 12, temperature: 0}
    const whole = await t!.client.responses.create(body)
    const stream = t!.client.responses.stream(body)
    const types: string[] = []
    let deltas = ''
    stream.on('event', (e) => types.push(e.type))
    stream.on('response.output_text.delta', (e) => (deltas += e.delta))
    const final = await stream.finalResponse()
    assert.equal(final.output_text, whole.output_text)
    assert.equal(deltas, whole.output_text)
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ])
    assert.deepEqual(types.slice(-4), [
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      whole.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
    ])
  })

  test('function tools: a forced call, streamed and not; its output item goes back and the answer is text', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const body = {
      model: MODEL,
      input: 'Weather in Paris?',
      tools: TOOLS,
      tool_choice: 'required' as const,
      max_output_tokens: 64,
      temperature: 0,
    }
    const r = await t!.client.responses.create(body)
    const call = r.output.find((o) => o.type === 'function_call')
    assert.ok(call && call.type === 'function_call', JSON.stringify(r.output))
    assert.equal(call.name, 'get_weather')
    assert.ok(validWeather(JSON.parse(call.arguments)))
    const stream = t!.client.responses.stream(body)
    let args = ''
    stream.on('response.function_call_arguments.delta', (e) => (args += e.delta))
    const final = await stream.finalResponse()
    const streamed = final.output.find((o) => o.type === 'function_call')
    assert.ok(streamed && streamed.type === 'function_call')
    assert.equal(streamed.arguments, call.arguments)
    assert.equal(args, call.arguments)
    const answer = await t!.client.responses.create({
      model: MODEL,
      input: [{role: 'user', content: 'Weather in Paris?'}, call, {type: 'function_call_output', call_id: call.call_id, output: 'Sunny'}],
      tools: TOOLS,
      tool_choice: 'none',
      max_output_tokens: 8,
      temperature: 0,
    })
    assert.ok(answer.output.every((o) => o.type === 'message'))
  })

  test('text.format: responses.parse gives the zod-validated object', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const schema = z.object({city: z.string().max(10), sunny: z.boolean()})
    const r = await t!.client.responses.parse({
      model: MODEL,
      input: 'Weather as JSON',
      text: {format: zodTextFormat(schema, 'weather')},
      max_output_tokens: 96,
      temperature: 0,
    })
    assert.ok(schema.safeParse(r.output_parsed).success, JSON.stringify(r.output_text))
  })

  test('what a stateless server cannot do is refused by name', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const refused = async (extra: Record<string, unknown>, param: string) => {
      try {
        await t!.client.responses.create({model: MODEL, input: 'x', max_output_tokens: 4, ...extra} as never)
      } catch (error) {
        assert.ok(error instanceof OpenAI.BadRequestError, String(error))
        assert.equal(error.param, param)
        return
      }
      assert.fail(`expected ${param} to be refused`)
    }
    await refused({previous_response_id: 'resp_1'}, 'previous_response_id')
    await refused({store: true}, 'store')
    await refused({tools: [{type: 'web_search'}]}, 'tools[0].type')
    await refused({input: [{type: 'function_call_output', call_id: 'nope', output: 'x'}]}, 'input[0].call_id')
    await refused({text: {format: {type: 'json_schema', name: 'x', schema: {type: 'object'}, description: 'd'}}}, 'text.format.description')
    // Field names as this route spells them, and input items by their own index.
    const unique = {type: 'object', properties: {tags: {type: 'array', uniqueItems: true}}}
    await refused({tools: [{type: 'function', name: 'f', parameters: unique}], tool_choice: 'required'}, 'tools[0].parameters')
    await refused({tools: [{type: 'function', name: 'f g'}]}, 'tools[0].name')
    await refused({tools: [{type: 'function', name: 'f'}], tool_choice: {type: 'function', name: 'g'}}, 'tool_choice.name')
    await refused(
      {
        instructions: 'x',
        input: [
          {role: 'user', content: 'a'},
          {type: 'function_call_output', call_id: 'c', output: 'x'},
        ],
      },
      'input[1].call_id',
    )
    await refused(
      {
        input: [
          {type: 'reasoning', foo: 1},
          {role: 'user', content: 'x'},
        ],
      },
      'input[0].foo',
    )
    await refused({input: [{role: 'constructor', content: 'x'}]}, 'input[0].role')
    await refused({input: [{role: 'user', content: ''}]}, 'input[0].content')
    await refused({stream_options: {include_obfuscation: false, extra: 1}}, 'stream_options')
  })
})

describe('clients whose default path is the Responses API', () => {
  test('OpenAI Agents SDK (its default Responses model): a tool, then a handoff', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const client = new OpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused', maxRetries: 0})
    const model = new OpenAIResponsesModel(client, MODEL)
    const seen: unknown[] = []
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: z.object({city: z.string().min(1).max(12)}),
      execute: async (input) => {
        seen.push(input)
        return 'sunny'
      },
    })
    const agent = new Agent({
      name: 'Forecaster',
      model,
      tools: [getWeather],
      modelSettings: {toolChoice: 'required', temperature: 0, maxTokens: 64},
      toolUseBehavior: 'stop_on_first_tool',
    })
    const result = await run(agent, 'Weather in Paris?')
    assert.equal(result.finalOutput, 'sunny')
    assert.ok(validWeather(seen[0]), JSON.stringify(seen[0]))
    const writer = new Agent({name: 'Writer', model, modelSettings: {temperature: 0, maxTokens: 8}})
    const triage = new Agent({
      name: 'Triage',
      model,
      handoffs: [writer],
      modelSettings: {toolChoice: 'required', temperature: 0, maxTokens: 64},
    })
    const handed = await run(triage, 'Write a line.')
    assert.equal(handed.lastAgent?.name, 'Writer')
  })

  test('structured output on the Responses path: an Agents SDK outputType, the AI SDK Output.object over openai(model)', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const schema = z.object({city: z.string().max(10), sunny: z.boolean()})
    const client = new OpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused', maxRetries: 0})
    const agent = new Agent({
      name: 'Reporter',
      model: new OpenAIResponsesModel(client, MODEL),
      outputType: schema,
      modelSettings: {temperature: 0, maxTokens: 96},
    })
    const result = await run(agent, 'Weather as JSON')
    assert.ok(schema.safeParse(result.finalOutput).success, JSON.stringify(result.finalOutput))
    const openai = createOpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused'})
    const viaAiSdk = await generateText({
      model: openai(MODEL),
      prompt: 'Weather as JSON',
      temperature: 0,
      maxOutputTokens: 96,
      output: Output.object({schema}),
      maxRetries: 0,
    })
    assert.ok(schema.safeParse(viaAiSdk.output).success, JSON.stringify(viaAiSdk.output))
  })

  test('Vercel AI SDK openai(model): a forced tool call over /v1/responses', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const openai = createOpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused'})
    const result = await generateText({
      model: openai(MODEL),
      prompt: 'Weather in Oslo?',
      temperature: 0,
      maxOutputTokens: 64,
      tools: {get_weather: tool({description: 'Current weather in a city', inputSchema: z.object({city: z.string().min(1).max(12)})})},
      toolChoice: 'required',
      maxRetries: 0,
    })
    assert.equal(result.toolCalls.length, 1)
    assert.ok(validWeather(result.toolCalls[0]!.input))
  })

  test('LangChain with useResponsesApi: bindTools', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const chat = new ChatOpenAI({
      model: MODEL,
      apiKey: 'unused',
      configuration: {baseURL: `${t!.url}/v1`},
      temperature: 0,
      maxTokens: 64,
      maxRetries: 0,
      useResponsesApi: true,
    })
    // LangChain's Responses converter drops string choices ("required", "auto": @langchain/openai 1.5.5
    // chat_models/responses.js), so the function is named, which it does pass on.
    const ai = await chat
      .bindTools([{type: 'function', function: {name: 'get_weather', description: 'weather', parameters: WEATHER}}], {
        tool_choice: 'get_weather',
      })
      .invoke('Weather?')
    assert.equal(ai.tool_calls?.length, 1)
    assert.ok(validWeather(ai.tool_calls![0]!.args))
  })
})
