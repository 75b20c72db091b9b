/**
 * The constraint that makes calls valid: the family's call syntax (./formats.ts) around each
 * offered function's arguments, whose grammar is the function's parameter schema compiled exactly
 * (src/lib/grammar). tool_choice required or a named function force a call; auto with a strict
 * function (or the generic JSON format) allows text but makes any call valid, the way llama.cpp's
 * lazy grammars do, here in one grammar: text in which the call marker never occurs, then calls.
 */
import type {ConstraintSource, Piece} from '../grammar/index.js'
import type {ThinkStart} from './answer.js'
import {THINK, type ToolFormat} from './formats.js'
import type {ToolChoice, ToolSpec} from './types.js'

/**
 * Arguments are a machine's text: up to 2 whitespace characters between tokens (`{"a": 1, "b": 2}`
 * needs 1) rather than the schema front end's 20, and escapes only where a character needs one (or
 * is not ASCII), not `\u0061` for `a`: a model that may pad or escape spends its budget doing so.
 */
const ARGUMENT_JSON = {maxWhitespace: 2, escapes: 'needed'} as const

export interface ToolGrammarOptions {
  readonly format: ToolFormat
  readonly tools: readonly ToolSpec[]
  readonly choice: ToolChoice
  /** parallel_tool_calls (OpenAI) / not disable_parallel_tool_use (Anthropic). */
  readonly parallel: boolean
  readonly think: ThinkStart
}

/** Whether a request's calls are constrained at all (otherwise the answer is only parsed). */
export function toolsConstrained(o: Pick<ToolGrammarOptions, 'format' | 'tools' | 'choice'>): boolean {
  if (o.choice.mode === 'none' || o.tools.length === 0) return false
  return o.choice.mode !== 'auto' || o.format.layout === 'json' || o.tools.some((t) => t.strict)
}

function callPieces(o: ToolGrammarOptions, tools: readonly ToolSpec[], max: number | undefined): Piece[] {
  const f = o.format
  const one: Piece = {
    oneOf: tools.map((t) => [
      {literal: `${f.before}${t.name}${f.between}`},
      {schema: t.parameters, at: `${t.at}'s parameters`, options: ARGUMENT_JSON},
      {literal: f.after},
    ]),
  }
  return [{literal: f.open}, {repeat: [one], min: 1, max, separator: f.separator}, {literal: f.close}]
}

/** Thinking the answer may open with, when forced to call. */
function thinkPieces(think: ThinkStart): Piece[] {
  const afterThink: Piece = {oneOf: [[{literal: '\n\n'}], [{literal: '\n'}], []]}
  const block: Piece[] = [{textWithout: THINK.close}, {literal: THINK.close}, afterThink]
  if (think === 'inside') return block
  if (think === 'optional') return [{oneOf: [[], [{literal: THINK.open}, ...block]]}]
  return []
}

/** The constraint's source (compiled by the caller, which caches and names refusals its own way). */
export function toolConstraint(o: ToolGrammarOptions): (ConstraintSource & {kind: 'tool-calls'}) | undefined {
  if (!toolsConstrained(o)) return undefined
  const f = o.format
  const named = o.choice.mode === 'named' ? o.tools.filter((t) => t.name === (o.choice as {name: string}).name) : o.tools
  const max = o.choice.mode === 'named' || !o.parallel ? 1 : f.maxCalls
  const calls = callPieces(o, named, max)
  let pieces: Piece[]
  if (o.choice.mode !== 'auto') pieces = [...thinkPieces(o.think), ...calls]
  else if (f.layout === 'text-then-calls') pieces = [{textWithout: f.marker}, {oneOf: [[], calls]}]
  else if (f.layout === 'calls-or-text') pieces = [{oneOf: [calls, [{textNotStartingWith: `${f.marker} \t\n\r`}]]}]
  else pieces = [{oneOf: [calls, [{literal: '{"response": '}, {schema: {type: 'string'}}, {literal: '}'}]]}]
  return {kind: 'tool-calls', text: JSON.stringify({pieces})}
}

/** Thinking alone, forced (the first phase of a thinking budget when the answer is constrained). */
export function thinkingConstraint(think: ThinkStart): (ConstraintSource & {kind: 'tool-calls'}) | undefined {
  if (think === 'none') return undefined
  const block: Piece[] = [{textWithout: THINK.close}, {literal: THINK.close}]
  return {kind: 'tool-calls', text: JSON.stringify({pieces: think === 'inside' ? block : [{literal: THINK.open}, ...block]})}
}
