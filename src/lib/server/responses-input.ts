/**
 * A Responses API request (`POST /v1/responses`) to what the chat routes run: `instructions` and
 * `input` (a string, or items: messages, function calls and their outputs, reasoning) become the
 * chat history; flat function `tools` and `tool_choice` the request's tools; `text.format` the
 * structured-output constraint. The server is stateless: `previous_response_id`, `store: true` and
 * `conversation` are refused by name, as is everything else it cannot honour.
 */
import {own} from '../util/index.js'
import {type ChatMessage, type ChatToolCall, checkArgumentDepth} from '../chat/index.js'
import type {Constraint} from '../grammar/index.js'
import {ApiError, badParam, toApiError} from './api-error.js'
import {openAiResponseFormat} from './structured.js'
import {openAiTools, type RequestTools} from './tool-fields.js'

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Fields of the request this server cannot honour, with the reason (refused unless null or their neutral value). */
export const RESPONSES_UNSUPPORTED: Readonly<Record<string, string>> = {
  previous_response_id: 'the server stores no responses: send the whole conversation in input',
  conversation: 'the server stores no conversations: send the whole conversation in input',
  background: 'background responses need a store, and the server keeps none',
  prompt: 'stored prompts are not supported',
  context_management: 'server-side context management is not supported',
  moderation: 'moderation is not supported',
  max_tool_calls: 'max_tool_calls is not supported',
}

/** Values of optional fields that ask for nothing (and so are accepted). */
const NEUTRAL: Readonly<Record<string, (v: unknown) => boolean>> = {
  store: (v) => v === false,
  truncation: (v) => v === 'disabled',
  service_tier: (v) => v === 'auto' || v === 'default',
  include: (v) => Array.isArray(v) && v.length === 0,
  reasoning: (v) => isObject(v) && Object.values(v).every((x) => x === null || x === undefined),
  top_logprobs: (v) => v === 0,
  stream_options: (v) =>
    isObject(v) &&
    Object.keys(v).every((k) => k === 'include_obfuscation') &&
    (v.include_obfuscation === undefined || v.include_obfuscation === false),
}

const NEUTRAL_WHY: Readonly<Record<string, string>> = {
  store: 'the server stores nothing (store: false)',
  truncation: 'the input is never truncated (truncation: "disabled"); a longer one is refused',
  service_tier: 'there is one service tier',
  include: 'there is nothing extra to include',
  reasoning: 'reasoning controls are not supported',
  top_logprobs: 'log-probabilities are not reported on this route yet: use /v1/chat/completions',
  stream_options: 'stream obfuscation is not needed on a local server',
}

/** Refuse what cannot be honoured; null means unset. */
export function checkResponsesFields(body: Obj): void {
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue
    const why = own(RESPONSES_UNSUPPORTED, key)
    if (why) throw badParam(key, `${key} is not supported: ${why}`, 'unsupported_parameter')
    const neutral = own(NEUTRAL, key)
    if (neutral && !neutral(value))
      throw badParam(key, `${key} = ${JSON.stringify(value)} is not supported: ${NEUTRAL_WHY[key]}`, 'unsupported_parameter')
  }
}

/** Text of a message item's content: a string, or input_text / output_text parts. */
function contentText(content: unknown, at: string): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) throw badParam(at, `${at} must be a string or an array of content parts`)
  return content
    .map((p: unknown, j) => {
      const here = `${at}[${j}]`
      if (!isObject(p)) throw badParam(here, `${here} must be a content part`)
      if (p.type !== 'input_text' && p.type !== 'output_text')
        throw badParam(`${here}.type`, `${here}.type ${JSON.stringify(p.type)} is not supported: the runner is text-only`)
      for (const key of Object.keys(p)) {
        if (!['type', 'text', 'annotations', 'logprobs'].includes(key))
          throw badParam(`${here}.${key}`, `${here}.${key} is not a field of a text part`)
      }
      if (typeof p.text !== 'string') throw badParam(`${here}.text`, `${here}.text must be a string`)
      return p.text
    })
    .join('')
}

const MESSAGE_ROLES: Readonly<Record<string, ChatMessage['role']>> = {
  user: 'user',
  assistant: 'assistant',
  system: 'system',
  developer: 'system',
}

/** Input items to a chat history; consecutive function calls join the assistant turn before them. */
export interface ResponsesHistory {
  readonly messages: ChatMessage[]
  /** Where each message came from, for refusals: `input[3]`, `instructions`. */
  readonly origin: string[]
}

export function responsesHistory(instructions: unknown, input: unknown): ResponsesHistory {
  const out: ChatMessage[] = []
  const origin: string[] = []
  const push = (m: ChatMessage, from: string) => {
    out.push(m)
    origin.push(from)
  }
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') throw badParam('instructions', 'instructions must be a string')
    push({role: 'system', content: instructions}, 'instructions')
  }
  if (typeof input === 'string') {
    if (input.length === 0) throw badParam('input', 'input is empty')
    push({role: 'user', content: input}, 'input')
    return {messages: out, origin}
  }
  if (!Array.isArray(input) || input.length === 0) throw badParam('input', 'input must be a string or a non-empty array of items')
  const calls = new Set<string>()
  let pendingReasoning = ''
  /** The assistant turn function calls attach to: the last message when it is the assistant's, else a new one. */
  const assistantTurn = (at: string): ChatMessage => {
    const last = out.at(-1)
    if (last?.role === 'assistant') return last
    const turn: ChatMessage = {role: 'assistant', content: ''}
    push(turn, at)
    return turn
  }
  input.forEach((item: unknown, i) => {
    const at = `input[${i}]`
    if (!isObject(item)) throw badParam(at, `${at} must be an item object`)
    const type = item.type ?? 'message'
    if (type === 'message') {
      const role = typeof item.role === 'string' ? own(MESSAGE_ROLES, item.role) : undefined
      if (!role) throw badParam(`${at}.role`, `${at}.role must be "user", "assistant", "system" or "developer"`)
      for (const key of Object.keys(item)) {
        if (!['type', 'role', 'content', 'id', 'status'].includes(key))
          throw badParam(`${at}.${key}`, `${at}.${key} is not a field of a message item`)
      }
      const content = contentText(item.content, `${at}.content`)
      if (role !== 'assistant' && content.length === 0) throw badParam(`${at}.content`, `${at}.content is empty`)
      push({role, content, ...(role === 'assistant' && pendingReasoning ? {reasoning: pendingReasoning} : {})}, at)
      pendingReasoning = ''
    } else if (type === 'function_call') {
      for (const key of Object.keys(item)) {
        if (!['type', 'call_id', 'name', 'arguments', 'id', 'status'].includes(key))
          throw badParam(`${at}.${key}`, `${at}.${key} is not a field of a function_call item`)
      }
      for (const key of ['call_id', 'name', 'arguments'] as const) {
        const v = item[key]
        if (typeof v !== 'string' || (key !== 'arguments' && v.length === 0))
          throw badParam(`${at}.${key}`, `${at}.${key} must be a non-empty string`)
      }
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') return
      let args: unknown
      try {
        args = JSON.parse(item.arguments)
      } catch {
        args = undefined
      }
      if (!isObject(args)) throw badParam(`${at}.arguments`, `${at}.arguments must be the JSON text of an object`)
      try {
        checkArgumentDepth(args, `${at}.arguments`)
      } catch (error) {
        throw toApiError(error)
      }
      const turn = assistantTurn(at)
      const call: ChatToolCall = {id: item.call_id, name: item.name, arguments: item.arguments}
      out[out.length - 1] = {
        ...turn,
        toolCalls: [...(turn.toolCalls ?? []), call],
        ...(pendingReasoning ? {reasoning: pendingReasoning} : {}),
      }
      pendingReasoning = ''
      calls.add(item.call_id)
    } else if (type === 'function_call_output') {
      for (const key of Object.keys(item)) {
        if (!['type', 'call_id', 'output', 'id', 'status'].includes(key))
          throw badParam(`${at}.${key}`, `${at}.${key} is not a field of a function_call_output item`)
      }
      if (typeof item.call_id !== 'string' || !calls.has(item.call_id))
        throw badParam(`${at}.call_id`, `${at}.call_id ${JSON.stringify(item.call_id)} answers no function_call item before it`)
      push({role: 'tool', content: contentText(item.output, `${at}.output`), toolCallId: item.call_id}, at)
    } else if (type === 'reasoning') {
      // A reasoning item from an earlier response: its text is the next assistant turn's thinking.
      pendingReasoning += reasoningText(item, at)
    } else
      throw badParam(
        `${at}.type`,
        `${at}.type ${JSON.stringify(type)} is not supported (message, function_call, function_call_output, reasoning)`,
      )
  })
  return {messages: out, origin}
}

/** A reasoning item's text: its `content` (reasoning_text parts), else its `summary` (summary_text parts). */
function reasoningText(item: Obj, at: string): string {
  for (const key of Object.keys(item)) {
    if (!['type', 'id', 'summary', 'content', 'encrypted_content', 'status'].includes(key))
      throw badParam(`${at}.${key}`, `${at}.${key} is not a field of a reasoning item`)
  }
  if (item.encrypted_content !== undefined && item.encrypted_content !== null)
    throw badParam(`${at}.encrypted_content`, `${at}.encrypted_content is not supported: a local model's reasoning is not encrypted`)
  const read = (key: 'content' | 'summary', type: string): string | undefined => {
    const parts = item[key]
    if (parts === undefined || parts === null) return undefined
    if (!Array.isArray(parts)) throw badParam(`${at}.${key}`, `${at}.${key} must be an array of ${type} parts`)
    return parts
      .map((p: unknown, j) => {
        if (!isObject(p) || p.type !== type || typeof p.text !== 'string')
          throw badParam(`${at}.${key}[${j}]`, `${at}.${key}[${j}] must be {"type": "${type}", "text": ...}`)
        return p.text
      })
      .join('')
  }
  const content = read('content', 'reasoning_text')
  const summary = read('summary', 'summary_text')
  return content !== undefined && content.length > 0 ? content : (summary ?? '')
}

/** Flat function tools (`{type: "function", name, parameters, strict}`) in chat completions' nested shape, so one parser checks both. */
export function responsesTools(body: Obj): RequestTools {
  const tools = body.tools
  if (tools !== undefined && tools !== null && !Array.isArray(tools)) throw badParam('tools', 'tools must be an array')
  const nested = ((tools as unknown[] | null | undefined) ?? []).map((t, i) => {
    if (!isObject(t) || t.type !== 'function') {
      throw badParam(
        `tools[${i}].type`,
        `tools[${i}].type ${JSON.stringify(isObject(t) ? t.type : t)} is not supported: only function tools (no built-in tools on a local server)`,
      )
    }
    const {type: _type, ...fn} = t
    return {type: 'function', function: fn}
  })
  const choice = body.tool_choice
  if (isObject(choice)) {
    for (const key of Object.keys(choice))
      if (key !== 'type' && key !== 'name')
        throw badParam(`tool_choice.${key}`, `tool_choice.${key} is not a field of a tool choice (type, name)`)
  }
  const nestedChoice = isObject(choice) && choice.type === 'function' ? {type: 'function', function: {name: choice.name}} : choice
  // Checked as chat completions' nested shape; refusals (now and at compile time) say this route's flat field names.
  const flat = (text: string) =>
    text.replace(/tools\[(\d+)\]\.function/g, 'tools[$1]').replaceAll('tool_choice.function.name', 'tool_choice.name')
  const checked = renamedFields(
    () => openAiTools({tools: nested, tool_choice: nestedChoice, parallel_tool_calls: body.parallel_tool_calls}),
    flat,
  )
  return {...checked, tools: checked.tools.map((t) => ({...t, at: flat(t.at), parametersAt: flat(t.parametersAt)}))}
}

/** text.format to a constraint (json_object, json_schema with name/schema/strict), as response_format is read. */
export function responsesFormat(text: unknown): Constraint | undefined {
  if (text === undefined || text === null) return undefined
  if (!isObject(text)) throw badParam('text', 'text must be an object {format, verbosity}')
  for (const key of Object.keys(text)) {
    if (key === 'verbosity') {
      if (text.verbosity !== null && text.verbosity !== undefined)
        throw badParam('text.verbosity', 'text.verbosity is not supported: a local model has no verbosity setting')
    } else if (key !== 'format') throw badParam(`text.${key}`, `text.${key} is not a field of text (format, verbosity)`)
  }
  const f = text.format
  if (f === undefined || f === null) return undefined
  if (!isObject(f)) throw badParam('text.format', 'text.format must be an object')
  if (f.type === 'json_schema') {
    const {type: _t, ...schema} = f
    return renamed(() => openAiResponseFormat({type: 'json_schema', json_schema: schema}))
  }
  if (f.type === 'text' || f.type === 'json_object') {
    if (Object.keys(f).length > 1) throw badParam('text.format', `text.format of type "${f.type}" takes no other field`)
    return renamed(() => openAiResponseFormat({type: f.type as 'text' | 'json_object'}))
  }
  throw badParam('text.format.type', 'text.format.type must be "text", "json_object" or "json_schema"')
}

/** response_format's refusals in this route's terms: its json_schema fields sit directly in text.format. */
function renamed<T>(run: () => T): T {
  return renamedFields(run, (text) =>
    text.replaceAll('response_format.json_schema', 'text.format').replaceAll('response_format', 'text.format'),
  )
}

/** Refusals of a check written for another shape, with their field names rewritten for this route. */
function renamedFields<T>(run: () => T, rename: (text: string) => string): T {
  try {
    return run()
  } catch (error) {
    if (error instanceof ApiError)
      throw new ApiError(error.status, rename(error.message), error.param && rename(error.param), error.code, error.headers)
    throw error
  }
}
