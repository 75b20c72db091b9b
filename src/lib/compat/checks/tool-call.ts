/**
 * `tool_call`: a forced tool round trip through the server and the official `openai` client. One
 * function with a JSON schema, tool_choice naming it: the reply must be a call of that function
 * whose arguments parse as JSON and validate against the schema (ajv); the tool's result sent back
 * (tool_choice "none") must get a final assistant message in text. Anchors: the client parses the
 * calls, ajv judges the arguments.
 */
import {Ajv} from 'ajv'

import {type CheckClass, fail, numberParam, pass} from '../types.js'
import {errorText, openaiMissing, quote, SERVE_PARAMS, since, withServer} from './serve-common.js'

export const TOOL_NAME = 'get_weather'

/** Bounded strings, so a call ends within max_tokens even where the model is noise. */
export const WEATHER_SCHEMA = {
  type: 'object',
  properties: {city: {type: 'string', minLength: 1, maxLength: 12}, unit: {enum: ['celsius', 'fahrenheit']}},
  required: ['city', 'unit'],
  additionalProperties: false,
} as const

const TOOLS = [
  {type: 'function' as const, function: {name: TOOL_NAME, description: 'The current weather in a city', parameters: WEATHER_SCHEMA}},
]
const ASK = [{role: 'user' as const, content: 'What is the weather in Paris?'}]
const RESULT = 'Sunny, 21 C'

/** The parts of a chat completion's choice the verdicts read (the openai client's shape). */
export interface ChoiceLike {
  readonly finish_reason: string | null
  readonly message: {
    readonly content?: string | null
    readonly tool_calls?: ReadonlyArray<{
      readonly id?: string
      readonly type: string
      readonly function?: {name: string; arguments: string}
    }>
  }
}

export type CallVerdict = {readonly ok: true; readonly id: string; readonly args: unknown} | {readonly ok: false; readonly why: string}

/**
 * Is `choice` exactly one call of `name` with arguments that are JSON and valid under `schema`
 * (ajv), ending with finish_reason tool_calls?
 */
export function toolCallVerdict(choice: ChoiceLike | undefined, name: string, schema: object): CallVerdict {
  if (!choice) return {ok: false, why: 'the reply has no choice'}
  const calls = choice.message.tool_calls ?? []
  if (calls.length !== 1)
    return {ok: false, why: `the reply has ${calls.length} tool calls, not 1 (content ${quote(choice.message.content)})`}
  const call = calls[0]!
  if (call.type !== 'function' || !call.function) return {ok: false, why: `the call is of type ${call.type}, not function`}
  if (call.function.name !== name) return {ok: false, why: `the call names ${JSON.stringify(call.function.name)}, not the forced ${name}`}
  if (choice.finish_reason !== 'tool_calls') return {ok: false, why: `finish_reason ${String(choice.finish_reason)}, not tool_calls`}
  let args: unknown
  try {
    args = JSON.parse(call.function.arguments)
  } catch {
    return {ok: false, why: `the arguments ${quote(call.function.arguments)} are not JSON`}
  }
  const ajv = new Ajv({strict: false, allErrors: true})
  const validate = ajv.compile(schema)
  if (!validate(args))
    return {
      ok: false,
      why: `the arguments ${JSON.stringify(args)} do not validate: ${ajv.errorsText(validate.errors, {dataVar: 'arguments'})}`,
    }
  return {ok: true, id: call.id ?? '', args}
}

/** Why the reply to the tool's result is not a final assistant message in text, or undefined. */
export function finalVerdict(choice: ChoiceLike | undefined): string | undefined {
  if (!choice) return 'the answer to the tool result has no choice'
  const calls = choice.message.tool_calls?.length ?? 0
  if (calls > 0) return `the answer to the tool result makes ${calls} more tool calls`
  if (typeof choice.message.content !== 'string')
    return `the answer to the tool result has no text content (${quote(choice.message.content)})`
  if (choice.finish_reason !== 'stop' && choice.finish_reason !== 'length')
    return `the answer to the tool result ended with finish_reason ${String(choice.finish_reason)}`
  return undefined
}

export const toolCall: CheckClass = {
  name: 'tool_call',
  summary:
    'a forced tool call through the server and the openai client names the function with arguments ajv validates against its schema; the result sent back gets a text answer',
  params: {
    ...SERVE_PARAMS,
    maxTokens: {type: 'integer', minimum: 1, description: 'max_tokens of the forced call (default 160); the answer to the result takes 8'},
  },
  async when() {
    return openaiMissing()
  },
  async run(row, params, env) {
    const maxTokens = numberParam(params, 'maxTokens', 160)
    return withServer(row, params, env, async ({client, templateOrigin}) => {
      const opts = {signal: env.signal}
      let model: string | undefined
      try {
        model = (await client.models.list(opts)).data[0]?.id
      } catch (error) {
        return fail(`GET /v1/models failed: ${errorText(error)}`)
      }
      if (model === undefined) return fail('GET /v1/models lists no model')
      const request = {model, tools: TOOLS, parallel_tool_calls: false, temperature: 0}
      let t0 = performance.now()
      let first
      try {
        first = await client.chat.completions.create(
          {...request, messages: ASK, tool_choice: {type: 'function', function: {name: TOOL_NAME}}, max_tokens: maxTokens},
          opts,
        )
      } catch (error) {
        return fail(`the forced tool call failed: ${errorText(error)}`)
      }
      const callMs = since(t0)
      const verdict = toolCallVerdict(first.choices[0], TOOL_NAME, WEATHER_SCHEMA)
      if (!verdict.ok) return fail(`model ${model} (template ${templateOrigin}): ${verdict.why}`)
      const message = first.choices[0]!.message
      t0 = performance.now()
      let answer
      try {
        answer = await client.chat.completions.create(
          {
            ...request,
            messages: [...ASK, message, {role: 'tool', tool_call_id: verdict.id, content: RESULT}],
            tool_choice: 'none',
            max_tokens: 8,
          },
          opts,
        )
      } catch (error) {
        return fail(`sending the tool result back failed: ${errorText(error)}`)
      }
      const answerMs = since(t0)
      const why = finalVerdict(answer.choices[0])
      const args = JSON.stringify(verdict.args)
      if (why) return fail(`model ${model}: call ${TOOL_NAME}(${args}) validated, but ${why}`)
      return pass(
        `model ${model} (template ${templateOrigin}): ${TOOL_NAME}(${args}) validates against its schema (ajv) in ${callMs} ms; ` +
          `the answer to the result: ${quote(answer.choices[0]!.message.content)} (finish ${answer.choices[0]!.finish_reason}, ${answerMs} ms)`,
      )
    })
  },
}
