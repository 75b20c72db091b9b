// The agent frameworks people point at a local server, each used as its documentation shows for a
// custom base URL, running their own tool loops against `runner serve`: the Vercel AI SDK (`ai` with
// @ai-sdk/openai-compatible and @ai-sdk/openai's chat model), LangChain JS (@langchain/openai
// bindTools and withStructuredOutput) and the OpenAI Agents SDK (tools and handoffs over its chat
// completions model). The anchor is each framework's own parsing and validation (zod schemas,
// their tool-call accumulators). The model is a random-weight Qwen 2.5 with its real template:
// calls are forced, so noise must still produce a call the framework accepts.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {createOpenAI} from '@ai-sdk/openai'
import {createOpenAICompatible} from '@ai-sdk/openai-compatible'
import {tool as lcTool} from '@langchain/core/tools'
import {ChatOpenAI} from '@langchain/openai'
import {Agent, OpenAIChatCompletionsModel, run, tool as agentTool} from '@openai/agents'
import {generateText, Output, stepCountIs, streamText, tool} from 'ai'
import OpenAI from 'openai'
import {z} from 'zod'

import {lenmlServer} from './lenml-server.js'

const MODEL = 'tokenizer-qwen2_5'
const weatherInput = z.object({city: z.string().min(1).max(12), unit: z.enum(['celsius', 'fahrenheit'])})

const server = lenmlServer(MODEL)

describe('Vercel AI SDK', () => {
  test('generateText with a tool: the forced call runs execute with parsed input, the result goes back, then text', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const provider = createOpenAICompatible({name: 'runner', baseURL: `${t!.url}/v1`, apiKey: 'unused'})
    const seen: unknown[] = []
    const result = await generateText({
      model: provider.chatModel(MODEL),
      prompt: 'What is the weather in Paris?',
      temperature: 0,
      maxOutputTokens: 64,
      tools: {
        get_weather: tool({
          description: 'Current weather in a city',
          inputSchema: weatherInput,
          execute: async (input) => {
            seen.push(input)
            return {forecast: 'sunny'}
          },
        }),
      },
      toolChoice: 'required',
      // A multi-step loop: the call, then (tools off) the answer.
      stopWhen: stepCountIs(2),
      prepareStep: ({stepNumber}) => (stepNumber > 0 ? {toolChoice: 'none'} : {}),
      maxRetries: 0,
    })
    assert.equal(result.steps.length, 2)
    assert.equal(result.steps[0]!.finishReason, 'tool-calls')
    assert.equal(result.steps[0]!.toolCalls.length, 1)
    assert.equal(seen.length, 1)
    assert.ok(weatherInput.safeParse(seen[0]).success, JSON.stringify(seen[0]))
    assert.equal(result.steps[0]!.toolResults[0]!.output.forecast, 'sunny')
    assert.equal(result.steps[1]!.toolCalls.length, 0)
    assert.equal(typeof result.text, 'string')
  })

  test('streamText: the streamed call is the one generateText gets; @ai-sdk/openai chat model too', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const tools = {get_weather: tool({description: 'Current weather in a city', inputSchema: weatherInput})}
    const compatible = createOpenAICompatible({name: 'runner', baseURL: `${t!.url}/v1`, apiKey: 'unused'})
    const openai = createOpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused'})
    const settings = {
      prompt: 'Weather in Oslo?',
      temperature: 0,
      maxOutputTokens: 64,
      tools,
      toolChoice: 'required' as const,
      maxRetries: 0,
    }
    const whole = await generateText({model: compatible.chatModel(MODEL), ...settings})
    const streamed = streamText({model: compatible.chatModel(MODEL), ...settings})
    const calls = await streamed.toolCalls
    assert.equal(calls.length, 1)
    assert.deepEqual(calls[0]!.input, whole.toolCalls[0]!.input)
    const viaOpenAi = await generateText({model: openai.chat(MODEL), ...settings})
    assert.deepEqual(viaOpenAi.toolCalls[0]!.input, whole.toolCalls[0]!.input)
  })

  test('structured output (response_format json_schema): the SDK parses and validates the object', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const provider = createOpenAICompatible({name: 'runner', baseURL: `${t!.url}/v1`, apiKey: 'unused', supportsStructuredOutputs: true})
    const schema = z.object({city: z.string().max(10), sunny: z.boolean()})
    const result = await generateText({
      model: provider.chatModel(MODEL),
      prompt: 'Weather as JSON',
      temperature: 0,
      maxOutputTokens: 96,
      output: Output.object({schema}),
      maxRetries: 0,
    })
    assert.ok(schema.safeParse(result.output).success, JSON.stringify(result.output))
  })
})

describe('LangChain JS', () => {
  const chat = () =>
    new ChatOpenAI({
      model: MODEL,
      apiKey: 'unused',
      configuration: {baseURL: `${server.t!.url}/v1`},
      temperature: 0,
      maxTokens: 64,
      maxRetries: 0,
    })

  test('bindTools: the AIMessage carries the parsed call; the ToolMessage round trip answers', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const weather = lcTool(async (input: z.infer<typeof weatherInput>) => `sunny in ${input.city}`, {
      name: 'get_weather',
      description: 'Current weather in a city',
      schema: weatherInput,
    })
    const model = chat().bindTools([weather], {tool_choice: 'required', parallel_tool_calls: false})
    const ai = await model.invoke('What is the weather in Paris?')
    assert.equal(ai.tool_calls?.length, 1)
    const call = ai.tool_calls![0]!
    assert.equal(call.name, 'get_weather')
    assert.ok(weatherInput.safeParse(call.args).success, JSON.stringify(call.args))
    const result = await weather.invoke(call)
    const answer = await chat().invoke([{role: 'user', content: 'What is the weather in Paris?'}, ai, result])
    assert.equal(typeof answer.content, 'string')
  })

  test('withStructuredOutput: by function calling and by JSON schema', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const schema = z.object({city: z.string().max(10), sunny: z.boolean()})
    for (const method of ['functionCalling', 'jsonSchema'] as const) {
      const out = await chat().withStructuredOutput(schema, {method}).invoke('Weather as JSON')
      assert.ok(schema.safeParse(out).success, `${method}: ${JSON.stringify(out)}`)
    }
  })
})

describe('OpenAI Agents SDK (chat completions model)', () => {
  test('a tool runs with the parsed arguments; a handoff moves the run to the other agent', async (c) => {
    if (server.skip) return c.skip(server.skip)
    const t = server.t
    const client = new OpenAI({baseURL: `${t!.url}/v1`, apiKey: 'unused', maxRetries: 0})
    const model = new OpenAIChatCompletionsModel(client, MODEL)
    const seen: unknown[] = []
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Current weather in a city',
      parameters: weatherInput,
      execute: async (input) => {
        seen.push(input)
        return 'sunny'
      },
    })
    const forecaster = new Agent({
      name: 'Forecaster',
      instructions: 'Answer with the weather.',
      model,
      tools: [getWeather],
      modelSettings: {toolChoice: 'required', temperature: 0, maxTokens: 64},
      toolUseBehavior: 'stop_on_first_tool',
    })
    const result = await run(forecaster, 'What is the weather in Paris?')
    assert.equal(seen.length, 1)
    assert.ok(weatherInput.safeParse(seen[0]).success, JSON.stringify(seen[0]))
    assert.equal(result.finalOutput, 'sunny')

    const writer = new Agent({name: 'Writer', instructions: 'Write one line.', model, modelSettings: {temperature: 0, maxTokens: 8}})
    const triage = new Agent({
      name: 'Triage',
      instructions: 'Hand off to the writer.',
      model,
      handoffs: [writer],
      modelSettings: {toolChoice: 'required', temperature: 0, maxTokens: 64},
    })
    const handed = await run(triage, 'Write a line.')
    assert.equal(handed.lastAgent?.name, 'Writer')
    assert.equal(typeof handed.finalOutput, 'string')
  })
})
