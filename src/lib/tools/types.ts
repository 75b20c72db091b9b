/** What a request offers the model (functions and a choice) and what comes back (calls). */

/** A function tool, the same whichever API described it. */
export interface ToolSpec {
  readonly name: string
  readonly description?: string
  /** The arguments' JSON Schema (an object schema; no parameters: an object with none). */
  readonly parameters: Record<string, unknown>
  /** OpenAI's strict / Anthropic's strict: arguments always valid against the schema, even when the model may also answer in text. */
  readonly strict: boolean
  /** Where the request gave it, for refusals: `tools[2].function`, `tools.2`. */
  readonly at: string
  /** Where its parameter schema was given: `tools[2].function.parameters`, `tools.2.input_schema`. */
  readonly parametersAt: string
}

/**
 * auto: text or calls, the model decides; none: text only (tools still described to the model when
 * the template renders them); required: at least one call; named: a call of that function.
 */
export type ToolChoice = {readonly mode: 'auto' | 'none' | 'required'} | {readonly mode: 'named'; readonly name: string}

export interface ToolCallOut {
  readonly id: string
  readonly name: string
  /** The arguments as JSON text of an object, as the model wrote them. */
  readonly arguments: string
}

/** One piece of an answer as it becomes final. */
export type AnswerEvent =
  | {readonly type: 'text'; readonly text: string}
  | {readonly type: 'reasoning'; readonly text: string}
  | {readonly type: 'call'; readonly index: number; readonly call: ToolCallOut}

export interface ParsedAnswer {
  readonly content: string
  readonly reasoning: string
  readonly calls: readonly ToolCallOut[]
}

/** OpenAI's rule for function names (Anthropic's is the same set, 1 to 64 long). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/
