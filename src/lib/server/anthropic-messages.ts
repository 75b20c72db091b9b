/**
 * Anthropic's messages (content as a string or blocks) to the canonical chat history: text blocks
 * joined; `tool_use` blocks become the assistant turn's calls; `tool_result` blocks become tool
 * results (role "tool") before the user's own text; `thinking` blocks the turn's reasoning.
 * `cache_control` is accepted on every block: the prefix cache already reuses what it marks.
 * Each refusal names the block as Anthropic does: `messages.2.content.1.tool_use_id`.
 */
import {own} from '../util/index.js'
import {type ChatMessage, type ChatToolCall, checkArgumentDepth} from '../chat/index.js'
import {badParam, toApiError} from './api-error.js'

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Fields each block type may carry. */
const BLOCK_FIELDS: Readonly<Record<string, readonly string[]>> = {
  text: ['type', 'text', 'cache_control', 'citations'],
  tool_use: ['type', 'id', 'name', 'input', 'cache_control', 'caller'],
  tool_result: ['type', 'tool_use_id', 'content', 'is_error', 'cache_control'],
  thinking: ['type', 'thinking', 'signature'],
}

const UNSUPPORTED_BLOCKS: Readonly<Record<string, string>> = {
  image: 'the runner is text-only',
  document: 'the runner is text-only',
  redacted_thinking: 'redacted thinking cannot be rendered through a chat template',
  server_tool_use: 'server tools are not supported',
  web_search_tool_result: 'server tools are not supported',
}

function blocksOf(content: unknown, at: string): Obj[] {
  if (typeof content === 'string') return [{type: 'text', text: content}]
  if (!Array.isArray(content)) throw badParam(at, `${at} must be a string or an array of content blocks`)
  return content.map((b: unknown, j) => {
    const here = `${at}.${j}`
    if (!isObject(b) || typeof b.type !== 'string') throw badParam(here, `${here} must be a content block with a "type"`)
    const why = own(UNSUPPORTED_BLOCKS, b.type)
    if (why) throw badParam(`${here}.type`, `${here}.type "${b.type}" is not supported: ${why}`)
    const fields = own(BLOCK_FIELDS, b.type)
    if (!fields) throw badParam(`${here}.type`, `${here}.type ${JSON.stringify(b.type)} is not a content block type`)
    for (const key of Object.keys(b))
      if (!fields.includes(key)) throw badParam(`${here}.${key}`, `${here}.${key} is not a field of a ${b.type} block`)
    if (b.citations !== undefined && b.citations !== null) throw badParam(`${here}.citations`, `${here}.citations are not supported`)
    if (b.cache_control !== undefined && b.cache_control !== null && !isObject(b.cache_control))
      throw badParam(`${here}.cache_control`, `${here}.cache_control must be an object ({"type": "ephemeral"})`)
    return b
  })
}

function text(b: Obj, key: string, at: string): string {
  if (typeof b[key] !== 'string') throw badParam(`${at}.${key}`, `${at}.${key} must be a string`)
  return b[key] as string
}

/** A tool result's content: a string or text blocks. An error result is marked in its text, which is all a template can carry. */
function resultText(b: Obj, at: string): string {
  const c = b.content
  const body =
    c === undefined
      ? ''
      : typeof c === 'string'
        ? c
        : blocksOf(c, `${at}.content`)
            .map((x, k) => {
              if (x.type !== 'text') throw badParam(`${at}.content.${k}.type`, `${at}.content.${k}: a tool result holds text blocks only`)
              return text(x, 'text', `${at}.content.${k}`)
            })
            .join('')
  if (b.is_error !== undefined && typeof b.is_error !== 'boolean') throw badParam(`${at}.is_error`, `${at}.is_error must be a boolean`)
  return b.is_error === true ? `Error: ${body}` : body
}

export interface AnthropicHistory {
  readonly messages: ChatMessage[]
  /** Where each canonical message came from, for refusals: `messages.3`, or `system`. */
  readonly origin: string[]
}

export function anthropicHistory(input: unknown, system: string | undefined): AnthropicHistory {
  if (!Array.isArray(input) || input.length === 0) throw badParam('messages', 'messages must be a non-empty array')
  const out: ChatMessage[] = system ? [{role: 'system', content: system}] : []
  const origin: string[] = system ? ['system'] : []
  const push = (m: ChatMessage, from: string) => {
    out.push(m)
    origin.push(from)
  }
  const calls = new Set<string>()
  input.forEach((m: unknown, i) => {
    const at = `messages.${i}`
    if (!isObject(m)) throw badParam(at, `${at} must be {role, content}`)
    for (const key of Object.keys(m))
      if (key !== 'role' && key !== 'content') throw badParam(`${at}.${key}`, `${at}.${key} is not a field of a message`)
    if (m.role === 'system' || m.role === 'developer')
      throw badParam(
        `${at}.role`,
        `${at}.role "${String(m.role)}": Anthropic's API takes the system prompt in the top-level "system" field`,
      )
    if (m.role !== 'user' && m.role !== 'assistant') throw badParam(`${at}.role`, `${at}.role must be "user" or "assistant"`)
    const blocks = blocksOf(m.content, `${at}.content`)
    if (m.role === 'assistant') {
      const toolCalls: ChatToolCall[] = []
      let content = ''
      let reasoning = ''
      blocks.forEach((b, j) => {
        const here = `${at}.content.${j}`
        if (b.type === 'text') content += text(b, 'text', here)
        else if (b.type === 'thinking') reasoning += text(b, 'thinking', here)
        else if (b.type === 'tool_use') {
          const id = text(b, 'id', here)
          if (!isObject(b.input)) throw badParam(`${here}.input`, `${here}.input must be an object`)
          checked(() => checkArgumentDepth(b.input, `${here}.input`))
          toolCalls.push({id, name: text(b, 'name', here), arguments: JSON.stringify(b.input)})
          calls.add(id)
        } else throw badParam(`${here}.type`, `${here}: a ${String(b.type)} block belongs in a user message`)
      })
      push({role: 'assistant', content, ...(toolCalls.length ? {toolCalls} : {}), ...(reasoning ? {reasoning} : {})}, at)
      return
    }
    let content = ''
    blocks.forEach((b, j) => {
      const here = `${at}.content.${j}`
      if (b.type === 'text') content += text(b, 'text', here)
      else if (b.type === 'tool_result') {
        const id = text(b, 'tool_use_id', here)
        if (!calls.has(id))
          throw badParam(
            `${here}.tool_use_id`,
            `${here}.tool_use_id ${JSON.stringify(id)} answers no tool_use block of an earlier assistant message`,
          )
        push({role: 'tool', content: resultText(b, here), toolCallId: id}, here)
      } else throw badParam(`${here}.type`, `${here}: a ${String(b.type)} block belongs in an assistant message`)
    })
    if (content.length > 0) push({role: 'user', content}, at)
    else if (!blocks.some((b) => b.type === 'tool_result')) throw badParam(`${at}.content`, `${at}.content is empty`)
  })
  return {messages: out, origin}
}

/** A history check's refusal as this API's error. */
function checked(run: () => void): void {
  try {
    run()
  } catch (error) {
    throw toApiError(error)
  }
}
