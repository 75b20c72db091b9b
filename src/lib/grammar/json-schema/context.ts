/**
 * What the per-type compilers (strings, numbers, arrays, objects, values) share during one
 * compilation: the lexical rules, a way to turn a lazy sub-schema into a rule reference, and fresh
 * rule names. Kept as an interface so each module depends on this and not on the driver.
 */
import type {Expr} from '../ir.js'
import type {Lexicon} from './lexical.js'
import type {Sub} from './model.js'

export interface Context {
  readonly lex: Lexicon
  /** The rules being built (the lexicon's included). */
  readonly rules: Map<string, Expr>
  /** A reference to the rule for values satisfying `s`. */
  sub(s: Sub): Expr
  /** True when `s` admits no value at all (a `false` schema, an empty enum...). */
  isFalse(s: Sub): boolean
  /** A new rule name starting with `prefix`. */
  fresh(prefix: string): string
}
