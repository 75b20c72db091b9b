/**
 * Tools as the two APIs describe them, checked field by field and turned into the one shape the
 * tools area works with: OpenAI's `tools: [{type: "function", function: {name, description,
 * parameters, strict}}]`, `tool_choice` and `parallel_tool_calls`; Anthropic's `tools: [{name,
 * description, input_schema}]` and `tool_choice: {type, name, disable_parallel_tool_use}`.
 * `tools: null`, `tools: []` and `tool_choice: "none"` mean no tools, as OpenAI and llama-server take them.
 *
 * Parallel calls are off unless asked for (`parallel_tool_calls: true`, `disable_parallel_tool_use:
 * false`), as llama-server has them: OpenAI's and Anthropic's defaults allow several, but a local
 * model allowed another call tends to repeat the last one until its token budget runs out.
 */
import {own} from '../util/index.js'
import {TOOL_NAME, type ToolChoice, type ToolSpec} from '../tools/index.js'
import {badParam} from './api-error.js'

export interface RequestTools {
  readonly tools: readonly ToolSpec[]
  readonly choice: ToolChoice
  readonly parallel: boolean
}

export const NO_TOOLS: RequestTools = {tools: [], choice: {mode: 'none'}, parallel: false}

type Obj = Record<string, unknown>

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

function onlyKeys(o: Obj, keys: readonly string[], at: string, what: string): void {
  for (const key of Object.keys(o))
    if (!keys.includes(key)) throw badParam(`${at}.${key}`, `${at}.${key} is not a field of ${what} (${keys.join(', ')})`)
}

function schemaOf(v: unknown, at: string): Record<string, unknown> {
  // No parameters: a function that takes none (OpenAI's reading of an omitted `parameters`).
  if (v === undefined || v === null) return {type: 'object', properties: {}, additionalProperties: false}
  if (!isObject(v)) throw badParam(at, `${at} must be a JSON Schema object`)
  if (v.type !== undefined && v.type !== 'object') throw badParam(`${at}.type`, `${at}.type must be "object": arguments are named`)
  return v
}

/** Names valid and unique; a refusal names the tool's `name` field (`tools[0].function.name`, `tools.0.name`). */
function checkNames(tools: readonly ToolSpec[]): void {
  const seen = new Set<string>()
  tools.forEach((t) => {
    const at = `${t.at}.name`
    if (!TOOL_NAME.test(t.name)) throw badParam(at, `${t.at}'s name ${JSON.stringify(t.name)} must be 1 to 64 of a-z, A-Z, 0-9, _ and -`)
    if (seen.has(t.name)) throw badParam(at, `${t.at}'s name "${t.name}" is used by an earlier tool`)
    seen.add(t.name)
  })
}

/** `strict` is a boolean or absent. */
function strictOf(v: unknown, at: string): boolean {
  if (v !== undefined && v !== null && typeof v !== 'boolean') throw badParam(at, `${at} must be a boolean`)
  return v === true
}

function named(tools: readonly ToolSpec[], name: unknown, at: string): ToolChoice {
  if (typeof name !== 'string') throw badParam(at, `${at} must name a function`)
  if (!tools.some((t) => t.name === name))
    throw badParam(at, `${at} "${name}" is not one of the tools given (${tools.map((t) => t.name).join(', ') || 'none'})`)
  return {mode: 'named', name}
}

/** OpenAI chat completions' tools, tool_choice and parallel_tool_calls. */
export function openAiTools(body: Obj): RequestTools {
  const raw = body.tools
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) throw badParam('tools', 'tools must be an array of function tools')
  const tools: ToolSpec[] = ((raw as unknown[] | null | undefined) ?? []).map((t, i) => {
    const at = `tools[${i}]`
    if (!isObject(t)) throw badParam(at, `${at} must be {type: "function", function: {...}}`)
    onlyKeys(t, ['type', 'function'], at, 'a tool')
    if (t.type !== 'function') throw badParam(`${at}.type`, `${at}.type ${JSON.stringify(t.type)} is not supported: only "function" tools`)
    const fn = t.function
    if (!isObject(fn)) throw badParam(`${at}.function`, `${at}.function must be {name, description, parameters, strict}`)
    onlyKeys(fn, ['name', 'description', 'parameters', 'strict'], `${at}.function`, 'a function')
    if (fn.description !== undefined && fn.description !== null && typeof fn.description !== 'string')
      throw badParam(`${at}.function.description`, `${at}.function.description must be a string`)
    if (fn.strict !== undefined && fn.strict !== null && typeof fn.strict !== 'boolean')
      throw badParam(`${at}.function.strict`, `${at}.function.strict must be a boolean`)
    return {
      name: typeof fn.name === 'string' ? fn.name : '',
      ...(typeof fn.description === 'string' ? {description: fn.description} : {}),
      parameters: schemaOf(fn.parameters, `${at}.function.parameters`),
      parametersAt: `${at}.function.parameters`,
      strict: fn.strict === true,
      at: `${at}.function`,
    }
  })
  checkNames(tools)
  const parallel = body.parallel_tool_calls
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw badParam('parallel_tool_calls', 'parallel_tool_calls must be a boolean')
  const c = body.tool_choice
  let choice: ToolChoice
  if (c === undefined || c === null) choice = {mode: tools.length > 0 ? 'auto' : 'none'}
  else if (c === 'auto' || c === 'none' || c === 'required') choice = {mode: c}
  else if (isObject(c)) {
    onlyKeys(c, ['type', 'function'], 'tool_choice', 'a tool choice')
    if (c.type !== 'function' || !isObject(c.function))
      throw badParam('tool_choice', 'tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}')
    onlyKeys(c.function, ['name'], 'tool_choice.function', 'a named tool choice')
    choice = named(tools, c.function.name, 'tool_choice.function.name')
  } else throw badParam('tool_choice', 'tool_choice must be "auto", "none", "required" or {type: "function", function: {name}}')
  if ((choice.mode === 'required' || choice.mode === 'auto') && tools.length === 0 && c !== undefined && c !== null)
    throw badParam('tool_choice', `tool_choice "${choice.mode}" needs tools`)
  return {tools, choice, parallel: parallel === true}
}

/** Anthropic Messages' tools and tool_choice ({type: auto | any | tool | none, name, disable_parallel_tool_use}). */
export function anthropicTools(body: Obj): RequestTools {
  const raw = body.tools
  if (raw !== undefined && !Array.isArray(raw)) throw badParam('tools', 'tools must be an array of tools')
  const tools: ToolSpec[] = ((raw as unknown[] | undefined) ?? []).map((t, i) => {
    const at = `tools.${i}`
    if (!isObject(t)) throw badParam(at, `${at} must be {name, description, input_schema}`)
    if (t.type !== undefined && t.type !== null && t.type !== 'custom')
      throw badParam(
        `${at}.type`,
        `${at}.type ${JSON.stringify(t.type)} is not supported: only client tools (name, description, input_schema)`,
      )
    onlyKeys(t, ['type', 'name', 'description', 'input_schema', 'cache_control', 'strict'], at, 'a tool')
    if (t.description !== undefined && typeof t.description !== 'string')
      throw badParam(`${at}.description`, `${at}.description must be a string`)
    if (t.input_schema === undefined) throw badParam(`${at}.input_schema`, `${at}.input_schema is required`)
    if (t.cache_control !== undefined && t.cache_control !== null && !isObject(t.cache_control))
      throw badParam(`${at}.cache_control`, `${at}.cache_control must be an object ({"type": "ephemeral"})`)
    return {
      name: typeof t.name === 'string' ? t.name : '',
      ...(typeof t.description === 'string' ? {description: t.description} : {}),
      parameters: schemaOf(t.input_schema, `${at}.input_schema`),
      parametersAt: `${at}.input_schema`,
      strict: strictOf(t.strict, `${at}.strict`),
      at,
    }
  })
  checkNames(tools)
  const c = body.tool_choice
  if (c === undefined || c === null) return {tools, choice: {mode: tools.length > 0 ? 'auto' : 'none'}, parallel: false}
  if (!isObject(c)) throw badParam('tool_choice', 'tool_choice must be {type: "auto" | "any" | "tool" | "none"}')
  onlyKeys(c, ['type', 'name', 'disable_parallel_tool_use'], 'tool_choice', 'a tool choice')
  if (c.disable_parallel_tool_use !== undefined && typeof c.disable_parallel_tool_use !== 'boolean')
    throw badParam('tool_choice.disable_parallel_tool_use', 'tool_choice.disable_parallel_tool_use must be a boolean')
  const parallel = c.disable_parallel_tool_use === false
  const modes: Readonly<Record<string, ToolChoice['mode']>> = {auto: 'auto', any: 'required', none: 'none'}
  if (c.type === 'tool') return {tools, choice: named(tools, c.name, 'tool_choice.name'), parallel}
  const mode = typeof c.type === 'string' ? own(modes, c.type) : undefined
  if (mode === undefined) throw badParam('tool_choice.type', 'tool_choice.type must be "auto", "any", "tool" or "none"')
  if (c.name !== undefined) throw badParam('tool_choice.name', `tool_choice.name goes with type "tool", not "${String(c.type)}"`)
  if (mode !== 'none' && tools.length === 0) throw badParam('tool_choice', `tool_choice "${String(c.type)}" needs tools`)
  return {tools, choice: {mode} as ToolChoice, parallel}
}
