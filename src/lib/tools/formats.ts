/**
 * The call syntaxes of model families, as data: how one call is written (text around the name and
 * the arguments), how several are joined and wrapped, what begins them in an answer, and how an
 * answer may mix text and calls. The same table drives the grammar that forces valid calls
 * (./grammar.ts) and the parser that reads them back (./answer.ts), so the two cannot disagree.
 */
import {randomBytes} from 'node:crypto'

export type ToolFormatId = 'hermes' | 'llama3-json' | 'mistral' | 'generic'

export interface ToolFormat {
  readonly id: ToolFormatId
  /** Call = before + NAME + between + ARGUMENTS + after. */
  readonly before: string
  readonly between: string
  readonly after: string
  /** Calls = open + call (separator call)* + close. */
  readonly open: string
  readonly separator: string
  readonly close: string
  /** How many calls one answer may hold. */
  readonly maxCalls: number | undefined
  /**
   * text-then-calls: free text, then calls from the first `marker` on; calls-or-text: the whole
   * answer is calls (it begins with `marker`) or text; json: the whole answer is one JSON object.
   */
  readonly layout: 'text-then-calls' | 'calls-or-text' | 'json'
  readonly marker: string
  /** The key holding the arguments when the answer is parsed (the model's own spelling first). */
  readonly argumentKeys: readonly string[]
  /** Ids for calls the server makes (some templates check their shape). */
  readonly newId: (api: 'openai' | 'anthropic') => string
}

const alnum = (n: number) => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
  return [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('')
}

const apiId = (api: 'openai' | 'anthropic') => (api === 'openai' ? `call_${alnum(24)}` : `toolu_${alnum(24)}`)

export const TOOL_FORMATS: Readonly<Record<ToolFormatId, ToolFormat>> = {
  // Qwen 2.5 / Qwen 3 / Hermes 2 Pro: <tool_call> blocks after any text.
  hermes: {
    id: 'hermes',
    before: '<tool_call>\n{"name": "',
    between: '", "arguments": ',
    after: '}\n</tool_call>',
    open: '',
    separator: '\n',
    close: '',
    maxCalls: undefined,
    layout: 'text-then-calls',
    marker: '<tool_call>',
    argumentKeys: ['arguments', 'parameters'],
    newId: apiId,
  },
  // Llama 3.1-3.3 custom tools: the answer is one JSON object {"name", "parameters"}; the templates take one call per turn.
  'llama3-json': {
    id: 'llama3-json',
    before: '{"name": "',
    between: '", "parameters": ',
    after: '}',
    open: '',
    separator: '',
    close: '',
    maxCalls: 1,
    layout: 'calls-or-text',
    marker: '{',
    argumentKeys: ['parameters', 'arguments'],
    newId: apiId,
  },
  // Mistral (Nemo, Small): [TOOL_CALLS] then a JSON array. [TOOL_CALLS] is a control token, which a
  // grammar over text cannot emit: forced calls begin with the array, and both spellings parse.
  mistral: {
    id: 'mistral',
    before: '{"name": "',
    between: '", "arguments": ',
    after: '}',
    open: '[',
    separator: ', ',
    close: ']',
    maxCalls: undefined,
    layout: 'calls-or-text',
    marker: '[',
    argumentKeys: ['arguments', 'parameters'],
    // Mistral's templates refuse ids that are not 9 letters and digits.
    newId: () => alnum(9),
  },
  // Templates with no tool support: the tools are described in the system prompt and the whole
  // answer is JSON, {"tool_calls": [...]} or {"response": "..."} (llama.cpp's generic format).
  generic: {
    id: 'generic',
    before: '{"name": "',
    between: '", "arguments": ',
    after: '}',
    open: '{"tool_calls": [',
    separator: ', ',
    close: ']}',
    maxCalls: undefined,
    layout: 'json',
    marker: '{',
    argumentKeys: ['arguments', 'parameters'],
    newId: apiId,
  },
}

/**
 * Which syntax a template speaks, from the markers its source writes (as llama.cpp's
 * common/chat.cpp recognises templates), given that it renders tools at all.
 */
export function detectToolFormat(templateSource: string, rendersTools: boolean): ToolFormat {
  if (!rendersTools) return TOOL_FORMATS.generic
  if (templateSource.includes('<tool_call>')) return TOOL_FORMATS.hermes
  if (templateSource.includes('[TOOL_CALLS]')) return TOOL_FORMATS.mistral
  if (templateSource.includes('<|start_header_id|>') && templateSource.includes('"parameters"')) return TOOL_FORMATS['llama3-json']
  return TOOL_FORMATS.generic
}

/** The thinking block some templates (Qwen 3, DeepSeek R1) ask for before the answer. */
export const THINK = {open: '<think>', close: '</think>'} as const

export function templateThinks(templateSource: string): boolean {
  return templateSource.includes(THINK.close)
}
