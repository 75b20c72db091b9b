import {own} from '../util/index.js'
import {ExitCode, RunnerError} from '../errors.js'

/** The roles a chat history may hold ("tool" only where the caller offers tools: the servers). */
export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool'] as const
export type ChatRole = (typeof CHAT_ROLES)[number]

/** A call the assistant made, as the history carries it: arguments are the JSON text of an object. */
export interface ChatToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

export interface ChatMessage {
  readonly role: ChatRole
  readonly content: string
  /** The participant's name (user, assistant) or the function's (tool). */
  readonly name?: string
  /** An assistant turn's calls. */
  readonly toolCalls?: readonly ChatToolCall[]
  /** A tool result: the call it answers. */
  readonly toolCallId?: string
  /** An assistant turn's thinking (OpenAI-compatible servers' `reasoning_content`). */
  readonly reasoning?: string
}

/**
 * A history the runner refuses, naming the offending parameter as a path (`messages[2].content`),
 * so the HTTP layer can put it in OpenAI's `param` field and the chat UI can show it.
 */
export class ChatHistoryError extends RunnerError {
  constructor(
    readonly param: string,
    message: string,
    code = 'CHAT_BAD_HISTORY',
  ) {
    super(code, message, ExitCode.usage)
  }
}

/** OpenAI's newer clients send "developer" where older ones send "system"; they mean the same. */
const ROLE_ALIASES: Readonly<Record<string, ChatRole>> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool',
}

/** Roles OpenAI defines that need features the runner does not have; refused with the reason. */
const UNSUPPORTED_ROLES: Readonly<Record<string, string>> = {
  function: 'the deprecated function role is not supported: send tool results as role "tool" with tool_call_id',
}

/** Message fields OpenAI defines that the runner cannot honour; refused by name rather than dropped. */
const UNSUPPORTED_FIELDS: Readonly<Record<string, string>> = {
  function_call: 'the deprecated function_call is not supported: use tool_calls',
  audio: 'the runner is text-only',
  refusal: 'assistant refusals cannot be replayed through a chat template',
}

/** Which fields each role may carry beyond role and content. */
const ROLE_FIELDS: Readonly<Record<ChatRole, readonly string[]>> = {
  system: ['name'],
  user: ['name'],
  assistant: ['name', 'tool_calls', 'reasoning_content'],
  tool: ['name', 'tool_call_id'],
}

export interface HistoryOptions {
  /**
   * 'user' (default): the last message must be the user's (a reply to it follows). 'any': a history
   * may end with the assistant (a saved chat, or a prefill the servers continue) or a tool result.
   */
  readonly endWith?: 'user' | 'any'
  /** Accept tool calls and tool results (the servers, where requests carry tools). */
  readonly tools?: boolean
  /** Accept system messages after the conversation started (the template decides whether it can render them). */
  readonly systemAnywhere?: boolean
}

/**
 * Validate an untrusted history (parsed JSON, OpenAI's message shape) and return it in canonical
 * form: every message has a known role and text content; content given as parts must be text parts,
 * joined without a separator (as OpenAI does). Tool results must answer a call made earlier in the
 * history; call arguments must be JSON objects (templates receive them parsed).
 */
export function validateHistory(input: unknown, param = 'messages', options: HistoryOptions = {}): ChatMessage[] {
  if (!Array.isArray(input)) throw new ChatHistoryError(param, `${param} must be an array of messages`)
  if (input.length === 0) throw new ChatHistoryError(param, `${param} must hold at least one message`)
  const messages = input.map((m, i) => validateMessage(m, `${param}[${i}]`, options))
  const callIds = new Set<string>()
  let started = false
  messages.forEach((m, i) => {
    if (!options.systemAnywhere && m.role === 'system' && started) {
      throw new ChatHistoryError(
        `${param}[${i}].role`,
        `${param}[${i}] is a system message after the conversation started; system messages must come first`,
      )
    }
    started ||= m.role !== 'system'
    for (const call of m.toolCalls ?? []) callIds.add(call.id)
    if (m.role === 'tool' && !callIds.has(m.toolCallId!)) {
      throw new ChatHistoryError(
        `${param}[${i}].tool_call_id`,
        `${param}[${i}].tool_call_id ${JSON.stringify(m.toolCallId)} answers no tool call of an earlier assistant message`,
      )
    }
  })
  const last = messages.at(-1)!
  if (last.role !== 'user' && options.endWith !== 'any') {
    throw new ChatHistoryError(
      `${param}[${messages.length - 1}].role`,
      `the last message is "${last.role}", but a reply needs a "user" message last (continuing an assistant message is not supported here)`,
    )
  }
  return messages
}

function validateMessage(m: unknown, at: string, options: HistoryOptions): ChatMessage {
  if (typeof m !== 'object' || m === null || Array.isArray(m))
    throw new ChatHistoryError(at, `${at} must be an object with "role" and "content"`)
  const record = m as Record<string, unknown>
  const rawRole = record.role
  if (rawRole === undefined) throw new ChatHistoryError(`${at}.role`, `${at}.role is missing`)
  if (typeof rawRole !== 'string') throw new ChatHistoryError(`${at}.role`, `${at}.role must be a string`)
  const unsupported = own(UNSUPPORTED_ROLES, rawRole)
  if (unsupported) throw new ChatHistoryError(`${at}.role`, `${at}.role "${rawRole}" is not supported: ${unsupported}`)
  const role = own(ROLE_ALIASES, rawRole)
  if (!role) throw new ChatHistoryError(`${at}.role`, `${at}.role "${rawRole}" is not one of system, developer, user, assistant, tool`)
  if (role === 'tool' && !options.tools)
    throw new ChatHistoryError(`${at}.role`, `${at}.role "tool" is not supported here: tool results need a request with tools`)
  for (const key of Object.keys(record)) {
    if (key === 'role' || key === 'content' || ROLE_FIELDS[role].includes(key)) continue
    // Clients send a reply back as they got it: `refusal: null`, `audio: null`, `annotations: []` say nothing.
    if (carriesNothing(record[key])) continue
    const why = own(UNSUPPORTED_FIELDS, key)
    throw new ChatHistoryError(
      `${at}.${key}`,
      why ? `${at}.${key} is not supported: ${why}` : `${at}.${key} is not a field of a "${rawRole}" message`,
    )
  }
  const out: {-readonly [K in keyof ChatMessage]: ChatMessage[K]} = {role, content: ''}
  const name = optionalString(record.name, `${at}.name`)
  if (name !== undefined) out.name = name
  const calls = record.tool_calls === null || record.tool_calls === undefined ? undefined : toolCalls(record.tool_calls, `${at}.tool_calls`)
  if (calls !== undefined && !options.tools)
    throw new ChatHistoryError(`${at}.tool_calls`, `${at}.tool_calls is not supported here: tool calls need a request with tools`)
  if (calls !== undefined && calls.length > 0) out.toolCalls = calls
  // An assistant turn that only calls tools has no content (OpenAI sends null).
  const contentOptional = role === 'assistant'
  out.content =
    contentOptional && (record.content === null || record.content === undefined)
      ? ''
      : textContent(record.content, `${at}.content`, role === 'assistant')
  if (role !== 'assistant' && out.content.length === 0) throw new ChatHistoryError(`${at}.content`, `${at}.content is empty`)
  const reasoning = optionalString(record.reasoning_content, `${at}.reasoning_content`)
  if (reasoning !== undefined) out.reasoning = reasoning
  if (role === 'tool') {
    const id = record.tool_call_id
    if (typeof id !== 'string' || id.length === 0)
      throw new ChatHistoryError(`${at}.tool_call_id`, `${at}.tool_call_id must name the call this result answers`)
    out.toolCallId = id
  }
  return out
}

function carriesNothing(v: unknown): boolean {
  return v === null || v === undefined || (Array.isArray(v) && v.length === 0)
}

function optionalString(v: unknown, at: string): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new ChatHistoryError(at, `${at} must be a string`)
  return v
}

/** OpenAI's `tool_calls: [{id, type: "function", function: {name, arguments}}]`. */
function toolCalls(v: unknown, at: string): ChatToolCall[] {
  if (!Array.isArray(v)) throw new ChatHistoryError(at, `${at} must be an array of tool calls`)
  return v.map((c: unknown, j) => {
    const here = `${at}[${j}]`
    const call = c as Record<string, unknown> | null
    if (typeof call !== 'object' || call === null || Array.isArray(call))
      throw new ChatHistoryError(here, `${here} must be an object {id, type: "function", function: {name, arguments}}`)
    for (const key of Object.keys(call)) {
      if (!['id', 'type', 'function'].includes(key))
        throw new ChatHistoryError(`${here}.${key}`, `${here}.${key} is not a field of a tool call`)
    }
    if (call.type !== undefined && call.type !== 'function')
      throw new ChatHistoryError(`${here}.type`, `${here}.type ${JSON.stringify(call.type)} is not supported: only "function" calls`)
    if (typeof call.id !== 'string' || call.id.length === 0)
      throw new ChatHistoryError(`${here}.id`, `${here}.id must be a non-empty string`)
    const fn = call.function as Record<string, unknown> | null
    if (typeof fn !== 'object' || fn === null) throw new ChatHistoryError(`${here}.function`, `${here}.function must be {name, arguments}`)
    for (const key of Object.keys(fn)) {
      if (key !== 'name' && key !== 'arguments')
        throw new ChatHistoryError(`${here}.function.${key}`, `${here}.function.${key} is not a field of a function call`)
    }
    if (typeof fn.name !== 'string' || fn.name.length === 0)
      throw new ChatHistoryError(`${here}.function.name`, `${here}.function.name must be a non-empty string`)
    return {id: call.id, name: fn.name, arguments: argumentsText(fn.arguments, `${here}.function.arguments`)}
  })
}

/** Arguments as JSON text of an object (templates receive the object; an invalid one is refused, not passed as text). */
function argumentsText(v: unknown, at: string): string {
  if (typeof v !== 'string') throw new ChatHistoryError(at, `${at} must be a string holding a JSON object`)
  let parsed: unknown
  try {
    parsed = JSON.parse(v)
  } catch {
    throw new ChatHistoryError(at, `${at} is not JSON: ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ChatHistoryError(at, `${at} must be a JSON object (the function's named arguments)`)
  checkArgumentDepth(parsed, at)
  return v
}

/** How deep a call's arguments may nest: far past any real function's, short of what templates (and JSON.stringify) can recurse through. */
export const MAX_ARGUMENT_DEPTH = 64

/** Refuse arguments nested deeper than MAX_ARGUMENT_DEPTH (measured without recursion). */
export function checkArgumentDepth(value: unknown, at: string): void {
  let level: unknown[] = [value]
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > MAX_ARGUMENT_DEPTH) throw new ChatHistoryError(at, `${at} nests deeper than ${MAX_ARGUMENT_DEPTH} levels`)
    level = level.flatMap((v) => (typeof v === 'object' && v !== null ? Object.values(v) : []))
  }
}

/**
 * Fields of a whole reply that the OpenAI Agents SDK copies into the text part when it sends the
 * reply back (its providerData). They repeat the message's own fields, which are what count.
 */
const MESSAGE_ECHO = ['role', 'refusal', 'tool_calls', 'annotations', 'audio']

function textContent(content: unknown, at: string, echoAllowed = false): string {
  if (content === undefined || content === null) throw new ChatHistoryError(at, `${at} is missing`)
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) throw new ChatHistoryError(at, `${at} must be a string or an array of text parts`)
  return content
    .map((part: unknown, j) => {
      const p = part as Record<string, unknown> | null
      if (typeof p !== 'object' || p === null)
        throw new ChatHistoryError(`${at}[${j}]`, `${at}[${j}] must be an object {"type": "text", "text": ...}`)
      if (p.type !== 'text') {
        throw new ChatHistoryError(
          `${at}[${j}].type`,
          `${at}[${j}].type ${JSON.stringify(p.type)} is not supported: the runner is text-only`,
        )
      }
      for (const key of Object.keys(p)) {
        if (key === 'type' || key === 'text' || (echoAllowed && MESSAGE_ECHO.includes(key))) continue
        throw new ChatHistoryError(`${at}[${j}].${key}`, `${at}[${j}].${key} is not a field of a text part`)
      }
      if (typeof p.text !== 'string') throw new ChatHistoryError(`${at}[${j}].text`, `${at}[${j}].text must be a string`)
      return p.text
    })
    .join('')
}
