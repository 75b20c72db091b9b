import {ExitCode, RunnerError} from '../errors.js'

/** The roles a chat history may hold. The runner is text-only and has no tool calling. */
export const CHAT_ROLES = ['system', 'user', 'assistant'] as const
export type ChatRole = (typeof CHAT_ROLES)[number]

export interface ChatMessage {
  readonly role: ChatRole
  readonly content: string
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
const ROLE_ALIASES: Readonly<Record<string, ChatRole>> = {system: 'system', developer: 'system', user: 'user', assistant: 'assistant'}

/** Roles OpenAI defines that need features the runner does not have; refused with the reason. */
const UNSUPPORTED_ROLES: Readonly<Record<string, string>> = {
  tool: 'tool results need tool calling, which the runner does not support',
  function: 'function results need function calling, which the runner does not support',
}

/** Message fields OpenAI defines that the runner cannot honour; refused by name rather than dropped. */
const UNSUPPORTED_FIELDS: Readonly<Record<string, string>> = {
  name: 'participant names are not supported by chat templates the runner renders',
  tool_calls: 'tool calling is not supported',
  function_call: 'function calling is not supported',
  tool_call_id: 'tool calling is not supported',
  audio: 'the runner is text-only',
  refusal: 'assistant refusals cannot be replayed through a chat template',
}

/**
 * Validate an untrusted history (parsed JSON) and return it in canonical form: every message has a
 * known role and text content; content given as parts must be text parts, joined without a
 * separator (as OpenAI does). System messages may appear only at the start; the history must end
 * with a user message, since the runner answers it (continuing an assistant message is refused).
 * `options.endWith: 'any'` accepts a history that ends with the assistant's reply (a saved chat
 * being loaded, which is not answered until the next user message).
 */
export function validateHistory(input: unknown, param = 'messages', options: {endWith?: 'user' | 'any'} = {}): ChatMessage[] {
  if (!Array.isArray(input)) throw new ChatHistoryError(param, `${param} must be an array of messages`)
  if (input.length === 0) throw new ChatHistoryError(param, `${param} must hold at least one message`)
  const messages = input.map((m, i) => validateMessage(m, `${param}[${i}]`))
  messages.forEach((m, i) => {
    if (m.role === 'system' && messages.slice(0, i).some((p) => p.role !== 'system')) {
      throw new ChatHistoryError(
        `${param}[${i}].role`,
        `${param}[${i}] is a system message after the conversation started; system messages must come first`,
      )
    }
  })
  const last = messages.at(-1)!
  if (last.role !== 'user' && options.endWith !== 'any') {
    throw new ChatHistoryError(
      `${param}[${messages.length - 1}].role`,
      `the last message is "${last.role}", but a reply needs a "user" message last (continuing an assistant message is not supported)`,
    )
  }
  return messages
}

function validateMessage(m: unknown, at: string): ChatMessage {
  if (typeof m !== 'object' || m === null || Array.isArray(m))
    throw new ChatHistoryError(at, `${at} must be an object with "role" and "content"`)
  const record = m as Record<string, unknown>
  const rawRole = record.role
  if (rawRole === undefined) throw new ChatHistoryError(`${at}.role`, `${at}.role is missing`)
  if (typeof rawRole !== 'string') throw new ChatHistoryError(`${at}.role`, `${at}.role must be a string`)
  if (UNSUPPORTED_ROLES[rawRole])
    throw new ChatHistoryError(`${at}.role`, `${at}.role "${rawRole}" is not supported: ${UNSUPPORTED_ROLES[rawRole]}`)
  const role = ROLE_ALIASES[rawRole]
  if (!role) throw new ChatHistoryError(`${at}.role`, `${at}.role "${rawRole}" is not one of system, developer, user, assistant`)
  for (const key of Object.keys(record)) {
    if (key === 'role' || key === 'content') continue
    const why = UNSUPPORTED_FIELDS[key]
    throw new ChatHistoryError(`${at}.${key}`, why ? `${at}.${key} is not supported: ${why}` : `${at}.${key} is not a message field`)
  }
  const content = textContent(record.content, `${at}.content`)
  if (role !== 'assistant' && content.length === 0) throw new ChatHistoryError(`${at}.content`, `${at}.content is empty`)
  return {role, content}
}

function textContent(content: unknown, at: string): string {
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
      if (typeof p.text !== 'string') throw new ChatHistoryError(`${at}[${j}].text`, `${at}[${j}].text must be a string`)
      return p.text
    })
    .join('')
}
