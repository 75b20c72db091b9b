/**
 * Structured output in the servers' own terms: OpenAI's `response_format` (`json_object`,
 * `json_schema` with `{name, schema, strict}`; a `description` is refused, not shown to the model) and Anthropic's `output_config.format`
 * (`{type: "json_schema", schema}`) become a constraint (src/lib/grammar); a schema the compiler
 * refuses is a 400 naming the parameter, with the compiler's message (keyword and JSON pointer).
 * Compiled constraints are kept by source text for the schemas used lately: clients send the same
 * schema with every request.
 */
import {RunnerError} from '../errors.js'
import {compileConstraint, type Constraint, type ConstraintSource} from '../grammar/index.js'
import {RecentCache} from '../util/index.js'
import {ApiError, badParam} from './api-error.js'

const compiled = new RecentCache<string, Constraint>(64)

function cachedCompile(source: ConstraintSource): Constraint {
  return compiled.get(`${source.kind}\n${'text' in source ? source.text : ''}`, () => compileConstraint(source))
}

function compileAt(source: ConstraintSource, param: string): Constraint {
  try {
    return cachedCompile(source)
  } catch (error) {
    if (error instanceof RunnerError) throw new ApiError(400, error.message, param, 'invalid_schema')
    throw error
  }
}

function schemaText(schema: unknown, param: string): string {
  if (schema === undefined) throw badParam(param, `${param} is required`)
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    throw badParam(param, `${param} must be a JSON Schema (an object or a boolean)`)
  }
  return JSON.stringify(schema)
}

/**
 * The constraint that makes tool calls valid. Each function's schema is compiled alone first (kept
 * in the same cache), so a refusal names the very field: `tools[1].function.parameters`.
 */
export function compileToolConstraint(
  source: ConstraintSource,
  tools: ReadonlyArray<{parameters: unknown; parametersAt: string}>,
): Constraint {
  for (const t of tools) compileAt({kind: 'json-schema', text: JSON.stringify(t.parameters)}, t.parametersAt)
  return compileAt(source, 'tools')
}

/** OpenAI chat completions' response_format (already shape-checked by the route's JSON schema). */
export function openAiResponseFormat(format: {type: string; json_schema?: Record<string, unknown>} | undefined): Constraint | undefined {
  if (!format || format.type === 'text') {
    if (format && format.json_schema !== undefined) {
      throw badParam(
        'response_format.json_schema',
        'response_format.json_schema goes with type "json_schema"; with "text" it would be ignored',
      )
    }
    return undefined
  }
  if (format.type === 'json_object') {
    if (format.json_schema !== undefined)
      throw badParam('response_format.json_schema', 'json_schema goes with type "json_schema", not "json_object"')
    return compileAt({kind: 'json-object'}, 'response_format')
  }
  const js = format.json_schema
  if (!js) throw badParam('response_format.json_schema', 'type "json_schema" needs response_format.json_schema: {name, schema}')
  for (const key of Object.keys(js)) {
    if (key === 'description') {
      // OpenAI shows it to the model; this server would have to rewrite the prompt to, and does not.
      throw badParam(
        'response_format.json_schema.description',
        'response_format.json_schema.description is not supported: put it in the messages',
        'unsupported_parameter',
      )
    }
    if (!['name', 'schema', 'strict'].includes(key)) {
      throw badParam(
        `response_format.json_schema.${key}`,
        `response_format.json_schema.${key} is not a field of json_schema (name, schema, strict)`,
      )
    }
  }
  if (typeof js.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(js.name)) {
    throw badParam('response_format.json_schema.name', 'response_format.json_schema.name must be 1 to 64 of a-z, A-Z, 0-9, _ and -')
  }
  if (js.strict !== undefined && js.strict !== null && typeof js.strict !== 'boolean') {
    throw badParam('response_format.json_schema.strict', 'response_format.json_schema.strict must be a boolean')
  }
  // strict: false asks for less than we give: every schema is enforced exactly (docs/structured-output.md).
  const text = schemaText(js.schema === null ? undefined : js.schema, 'response_format.json_schema.schema')
  return compileAt({kind: 'json-schema', text}, 'response_format.json_schema.schema')
}

/** Anthropic Messages' output_config: `format` ({type: "json_schema", schema}) is honoured; `effort` has no meaning here. */
export function anthropicOutputConfig(
  config: {format?: {type?: unknown; schema?: unknown} | null; effort?: unknown} | undefined,
): Constraint | undefined {
  if (!config) return undefined
  for (const key of Object.keys(config)) {
    if (key === 'effort' && (config.effort === null || config.effort === undefined)) continue
    if (key === 'effort')
      throw badParam('output_config.effort', 'output_config.effort is not supported: a local model has no effort levels')
    if (key !== 'format') throw badParam(`output_config.${key}`, `output_config.${key} is not a field of output_config (format)`)
  }

  const f = config.format
  if (f === null || f === undefined) return undefined
  if (f.type !== 'json_schema') throw badParam('output_config.format.type', 'output_config.format.type must be "json_schema"')
  for (const key of Object.keys(f)) {
    if (key !== 'type' && key !== 'schema')
      throw badParam(`output_config.format.${key}`, `output_config.format.${key} is not a field of the format (type, schema)`)
  }
  return compileAt({kind: 'json-schema', text: schemaText(f.schema, 'output_config.format.schema')}, 'output_config.format.schema')
}

/**
 * Ollama's `format` (/api/chat, /api/generate): `"json"` is JSON mode with an object at the root
 * (Ollama's grammar for "json", like OpenAI's json_object); a JSON Schema object is enforced exactly;
 * `""` and null mean no format, as in Ollama.
 */
export function ollamaFormat(format: unknown): Constraint | undefined {
  if (format === undefined || format === null || format === '') return undefined
  if (format === 'json') return compileAt({kind: 'json-object'}, 'format')
  if (typeof format === 'string') throw badParam('format', `format ${JSON.stringify(format)} must be "json" or a JSON Schema object`)
  if (typeof format !== 'object' || Array.isArray(format)) throw badParam('format', 'format must be "json" or a JSON Schema object')
  return compileAt({kind: 'json-schema', text: schemaText(format, 'format')}, 'format')
}
