/**
 * The prompt side of tool calling. A template that renders tools receives them as transformers and
 * llama.cpp's --jinja pass them, with calls and results in the history as they are; for one that
 * does not (it renders the same text with or without tools), the tools are described in the system
 * prompt with the generic JSON answer format, and past calls and results are written in it too.
 */
import type {ChatMessage, ChatTemplate} from '../chat/index.js'
import {detectToolFormat, type ToolFormat} from './formats.js'
import type {ToolChoice, ToolSpec} from './types.js'

/** Tools in the shape templates read. */
export function templateTools(tools: readonly ToolSpec[]): unknown[] {
  return tools.map((t) => ({
    type: 'function',
    function: {name: t.name, ...(t.description === undefined ? {} : {description: t.description}), parameters: t.parameters},
  }))
}

const PROBE_TOOLS = [{type: 'function', function: {name: 'probe_fn', description: 'probe', parameters: {type: 'object'}}}]
const probed = new WeakMap<ChatTemplate, boolean>()

/** Does the template render tools at all (llama.cpp's capability probe: render with and without)? */
export function rendersTools(template: ChatTemplate): boolean {
  let known = probed.get(template)
  if (known === undefined) {
    const history: ChatMessage[] = [{role: 'user', content: 'x'}]
    try {
      known = template.render(history, {tools: PROBE_TOOLS}) !== template.render(history)
    } catch {
      known = false
    }
    probed.set(template, known)
  }
  return known
}

export function toolFormatOf(template: ChatTemplate): ToolFormat {
  return detectToolFormat(template.source, rendersTools(template))
}

/** The generic format's instructions, for templates without tool support. */
function genericInstructions(tools: readonly ToolSpec[], choice: ToolChoice): string {
  const list = tools.map((t) => JSON.stringify({name: t.name, description: t.description ?? '', parameters: t.parameters})).join('\n')
  const answer =
    choice.mode === 'auto'
      ? 'Answer with one JSON object: {"tool_calls": [{"name": ..., "arguments": {...}}]} to call functions, or {"response": "..."} to reply in text.'
      : 'Answer with one JSON object: {"tool_calls": [{"name": ..., "arguments": {...}}]}.'
  return `You can call these functions:\n${list}\n${answer}`
}

/** A history written in the generic format: calls as the JSON the model answers with, results as user turns. */
function genericHistory(messages: readonly ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = []
  for (const m of messages) {
    if (m.role === 'assistant' && m.toolCalls) {
      // The arguments as they were written; text beside the calls is kept as the format's "response".
      const calls = m.toolCalls.map((c) => `{"name": ${JSON.stringify(c.name)}, "arguments": ${c.arguments}}`).join(', ')
      const text = m.content ? `"response": ${JSON.stringify(m.content)}, ` : ''
      out.push({role: 'assistant', content: `{${text}"tool_calls": [${calls}]}`})
    } else if (m.role === 'tool') {
      const text = JSON.stringify({tool_response: {tool_call_id: m.toolCallId, content: m.content}})
      const last = out.at(-1)
      // Consecutive results are one turn: templates that need alternating roles can render them.
      if (last?.role === 'user' && last.content.startsWith('{"tool_response"'))
        out[out.length - 1] = {...last, content: `${last.content}\n${text}`}
      else out.push({role: 'user', content: text})
    } else out.push(m)
  }
  return out
}

export interface ToolPrompt {
  readonly messages: ChatMessage[]
  /** What the template receives as `tools` (undefined: none). */
  readonly tools: unknown[] | undefined
  readonly format: ToolFormat
}

/** The history and tools to render for a request that offers tools (or whose history holds calls). */
export function toolPrompt(
  template: ChatTemplate,
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[],
  choice: ToolChoice,
): ToolPrompt {
  const format = toolFormatOf(template)
  if (format.id !== 'generic') return {messages: [...messages], tools: tools.length > 0 ? templateTools(tools) : undefined, format}
  const history = genericHistory(messages)
  if (tools.length === 0 || choice.mode === 'none') return {messages: history, tools: undefined, format}
  const instructions = genericInstructions(tools, choice)
  const first = history[0]
  const withSystem =
    first?.role === 'system'
      ? [{...first, content: `${first.content}\n\n${instructions}`}, ...history.slice(1)]
      : [{role: 'system' as const, content: instructions}, ...history]
  return {messages: withSystem, tools: undefined, format}
}
