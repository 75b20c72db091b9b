/**
 * Request bodies, checked with ajv before anything else reads them. A refusal is an OpenAI-shaped
 * 400 naming the field (`param`) as OpenAI writes it: `stop[1]`, `stream_options.include_usage`.
 * Unknown fields are refused ("Unrecognized request argument", OpenAI's own wording), and fields
 * OpenAI defines that the runner cannot honour are refused with the reason, never ignored.
 */
import {own, preview, printable, quoted} from '../util/index.js'
import {Ajv, type ErrorObject, type ValidateFunction} from 'ajv'

import {MAX_TOP_LOGPROBS} from '../sampling/index.js'
import {ApiError} from './api-error.js'

/** The most choices one request may ask for (they run one after another on the prompt's KV). */
export const MAX_CHOICES = 16

const nullable = (schema: Record<string, unknown>) => ({...schema, type: [schema.type as string, 'null']})

/** Fields both endpoints share. */
const common = {
  model: {type: 'string', minLength: 1},
  max_tokens: nullable({type: 'integer', minimum: 1}),
  temperature: nullable({type: 'number', minimum: 0, maximum: 2}),
  top_p: nullable({type: 'number', exclusiveMinimum: 0, maximum: 1}),
  top_k: nullable({type: 'integer', minimum: 0, maximum: 2 ** 31 - 1}),
  min_p: nullable({type: 'number', minimum: 0, maximum: 1}),
  seed: nullable({type: 'integer'}),
  stop: {
    anyOf: [{type: 'null'}, {type: 'string', minLength: 1}, {type: 'array', maxItems: 4, items: {type: 'string', minLength: 1}}],
  },
  presence_penalty: nullable({type: 'number', minimum: -2, maximum: 2}),
  frequency_penalty: nullable({type: 'number', minimum: -2, maximum: 2}),
  logit_bias: {
    type: ['object', 'null'],
    propertyNames: {pattern: '^(0|[1-9][0-9]{0,9})$'},
    additionalProperties: {type: 'number', minimum: -100, maximum: 100},
  },
  n: nullable({type: 'integer', minimum: 1, maximum: MAX_CHOICES}),
  stream: nullable({type: 'boolean'}),
  stream_options: {
    type: ['object', 'null'],
    properties: {include_usage: {type: 'boolean'}},
    additionalProperties: false,
  },
  user: {type: 'string'},
} as const

export const CHAT_SCHEMA = {
  type: 'object',
  required: ['model', 'messages'],
  additionalProperties: false,
  properties: {
    ...common,
    // The history's own checks (src/lib/chat validateHistory) name the message and field.
    messages: {},
    max_completion_tokens: nullable({type: 'integer', minimum: 1}),
    logprobs: nullable({type: 'boolean'}),
    top_logprobs: nullable({type: 'integer', minimum: 0, maximum: MAX_TOP_LOGPROBS}),
    // Checked field by field in ./tool-fields.ts, naming each.
    tools: {},
    tool_choice: {},
    parallel_tool_calls: {},
    chat_template_kwargs: {type: ['object', 'null']},
    response_format: {
      type: 'object',
      required: ['type'],
      // json_schema's fields are checked one by one in ./structured.ts, naming each.
      properties: {type: {enum: ['text', 'json_object', 'json_schema']}, json_schema: {type: 'object'}},
      additionalProperties: false,
    },
  },
} as const

/** POST /apply-template: a history, and whether to end with the assistant's header (llama-server's fields). */
export const APPLY_TEMPLATE_SCHEMA = {
  type: 'object',
  required: ['messages'],
  properties: {messages: {}, add_generation_prompt: {type: 'boolean'}, tools: {}, tool_choice: {}, parallel_tool_calls: {}},
  additionalProperties: false,
} as const

export const COMPLETION_SCHEMA = {
  type: 'object',
  required: ['model', 'prompt'],
  additionalProperties: false,
  properties: {
    ...common,
    prompt: {
      anyOf: [
        {type: 'string'},
        {type: 'array', minItems: 1, maxItems: 1, items: {type: 'string'}},
        {type: 'array', minItems: 1, items: {type: 'integer', minimum: 0}},
      ],
    },
    logprobs: nullable({type: 'integer', minimum: 0, maximum: MAX_TOP_LOGPROBS}),
    echo: nullable({type: 'boolean', const: false}),
    suffix: {anyOf: [{type: 'null'}, {type: 'string', maxLength: 0}]},
    best_of: nullable({type: 'integer', minimum: 1, maximum: 1}),
  },
} as const

/** OpenAI fields the runner knows and cannot honour: refused with the reason. */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  functions: 'the deprecated functions field is not supported: use tools',
  function_call: 'the deprecated function_call field is not supported: use tool_choice',
  audio: 'the runner is text-only',
  modalities: 'the runner is text-only',
  prediction: 'predicted outputs are not supported',
  reasoning_effort: 'reasoning controls are not supported',
  service_tier: 'there is one service tier',
  store: 'the server stores nothing',
  metadata: 'the server stores nothing, so there is nothing to attach metadata to',
  web_search_options: 'web search is not supported',
}

/** Why a value of a field is refused, for fields whose schema allows fewer values than OpenAI's. */
const NARROWED: Readonly<Record<string, string>> = {
  n: `n is at most ${MAX_CHOICES} (choices run one after another on a slot)`,
  best_of: 'only best_of = 1 is supported',
  echo: 'echo is not supported',
  suffix: 'suffix (insertion) is not supported',
}

const ajv = new Ajv({allErrors: false, strict: true, allowUnionTypes: true})
const compiled = new Map<object, ValidateFunction>()

/** Check a parsed body against a schema; throws an ApiError naming the first offending field. */
export function validateBody(
  schema: object,
  body: unknown,
  unsupported: Readonly<Record<string, string>> = UNSUPPORTED,
): Record<string, unknown> {
  if (body === undefined) throw new ApiError(400, 'the request body is empty; send a JSON object', null, 'invalid_json')
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(400, 'the request body must be a JSON object', null, 'invalid_type')
  }
  for (const key of Object.keys(body)) {
    const why = own(unsupported, key)
    if (why !== undefined) throw new ApiError(400, `${key} is not supported: ${why}`, key, 'unsupported_parameter')
  }
  let validate = compiled.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  if (!validate(body)) throw refusal(pickError(validate.errors ?? []), body)
  return body as Record<string, unknown>
}

/** `/stop/1` → `stop[1]`, `/stream_options/include_usage` → `stream_options.include_usage`. */
export function paramOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce(
      (out, seg) =>
        /^\d+$/.test(seg) && out !== '' && !out.startsWith('logit_bias') ? `${out}[${seg}]` : out === '' ? seg : `${out}.${seg}`,
      '',
    )
}

function valueAt(body: unknown, pointer: string): unknown {
  let v: unknown = body
  for (const seg of pointer.split('/').slice(1))
    v = (v as Record<string, unknown> | undefined)?.[seg.replaceAll('~1', '/').replaceAll('~0', '~')]
  return v
}

/** Rules of fields that take one of several shapes, said once. */
const ANY_OF_RULE: Readonly<Record<string, string>> = {
  stop: 'must be a non-empty string or an array of at most 4 non-empty strings',
  prompt: 'must be a string, an array of one string, or a non-empty array of token ids',
}

/**
 * The error to report. A field with several accepted shapes (anyOf) fails in every branch; an
 * error inside the value (`stop[1]` empty) says more than the branch that wanted another type.
 */
function pickError(errors: readonly ErrorObject[]): ErrorObject | undefined {
  const anyOf = errors.find((e) => e.keyword === 'anyOf')
  if (!anyOf) return errors[0]
  // A branch whose type matched but whose constraint failed (`maxItems`) says the most; then an
  // error inside the value; then the field's rule as a whole.
  return (
    errors.find((e) => e.instancePath === anyOf.instancePath && e.keyword !== 'type' && e.keyword !== 'anyOf') ??
    errors.find((e) => e.instancePath.startsWith(`${anyOf.instancePath}/`)) ??
    anyOf
  )
}

/** Names the client chose (an unknown field) are echoed only this far, printable: a 100 KB name is not sent back whole. */
const SHOWN_NAME_CHARS = 64

function shownName(name: string): string {
  return printable(name, {max: SHOWN_NAME_CHARS})
}

function refusal(e: ErrorObject | undefined, body: unknown): ApiError {
  if (!e) return new ApiError(400, 'the request body is invalid', null, 'invalid_value')
  if (e.keyword === 'required') {
    const name = (e.params as {missingProperty: string}).missingProperty
    const param = shownName(paramOf(`${e.instancePath}/${name}`))
    return new ApiError(400, `you must provide a ${param} parameter`, param, 'missing_required_parameter')
  }
  if (e.keyword === 'additionalProperties') {
    const name = (e.params as {additionalProperty: string}).additionalProperty
    const param = shownName(paramOf(`${e.instancePath}/${name}`))
    return new ApiError(400, `Unrecognized request argument supplied: ${param}`, param, 'unknown_parameter')
  }
  if (e.keyword === 'propertyNames') {
    const name = (e.params as {propertyName: string}).propertyName
    return new ApiError(
      400,
      `${paramOf(e.instancePath)} key ${quoted(name, SHOWN_NAME_CHARS)} must be a token id (a decimal integer)`,
      paramOf(e.instancePath),
      'invalid_value',
    )
  }
  const param = paramOf(e.instancePath)
  const value = valueAt(body, e.instancePath)
  // Bounded and depth-limited whatever the value (a 4 MB string is not stringified whole first).
  const shown = preview(value, {max: 80})
  const top = param.split(/[.[]/)[0]!
  if (NARROWED[top] !== undefined && e.keyword !== 'type')
    return new ApiError(400, `${param} = ${shown}: ${NARROWED[top]}`, param, 'unsupported_value')
  const code = e.keyword === 'type' || e.keyword === 'anyOf' ? 'invalid_type' : 'invalid_value'
  const rule =
    e.keyword === 'anyOf' ? (ANY_OF_RULE[param] ?? 'has the wrong type or value (see docs/http-api.md)') : (e.message ?? 'is invalid')
  return new ApiError(400, `${param} = ${shown} ${rule}`, param, code)
}
