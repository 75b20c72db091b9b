/**
 * GBNF, llama.cpp's `--grammar` language, compiled to the grammar IR (./ir.ts), so that grammars
 * people already have for llama.cpp constrain our output the same way. The syntax is read as
 * llama.cpp reads it (./gbnf/parser.ts); the grammar is then checked as llama.cpp checks it
 * (./gbnf/checks.ts): undefined rules, a missing start rule and left recursion are refused.
 *
 * Differences, each deliberate: token matches (`<[1000]>`, `!<[1000]>`, `<think>`) are refused by
 * name, since we constrain text; `[]`, `[^]`, a rule defined twice and `{m,n}` with n < m are
 * refused (llama.cpp drops, overwrites, or mis-expands them); a maximum count above 2000 is kept as
 * written, where llama.cpp quietly drops it and repeats without bound.
 */
import type {Grammar} from './ir.js'
import {checkGbnf} from './gbnf/checks.js'
import {parseGbnfSyntax} from './gbnf/parser.js'

export {GrammarSyntaxError} from './gbnf/errors.js'
export {MAX_REPETITION} from './gbnf/parser.js'

export interface GbnfOptions {
  /** The rule a whole document must match; llama.cpp's default, `root`, unless given. */
  readonly start?: string
}

/** Compile GBNF source to a Grammar; throws GrammarSyntaxError (line, column, what was expected). */
export function parseGbnf(text: string, options: GbnfOptions = {}): Grammar {
  const start = options.start ?? 'root'
  const rules = checkGbnf(text, parseGbnfSyntax(text), start)
  return {rules, start}
}
