/**
 * The grammar IR every front end compiles to (JSON Schema, GBNF, JSON mode) and the native matcher's
 * program is lowered from (./lower.ts). A grammar is a set of named rules over code points:
 * terminals are character sets (./charset.ts), and the operators are sequence, alternation, a rule
 * reference and bounded or unbounded repetition. Repetition is an operator of its own (not expanded)
 * so that `maxLength: 10000` or `{0,500}` costs one element and a counter, not ten thousand rules.
 *
 * Conventions: `seq([])` is the empty string (ε); `alt([])` is the empty language (matches nothing:
 * lowering prunes it, and a grammar whose start matches nothing is refused).
 */
import {type CharSet, charsOf} from './charset.js'

export type Expr =
  | {readonly kind: 'chars'; readonly set: CharSet}
  | {readonly kind: 'literal'; readonly text: string}
  | {readonly kind: 'seq'; readonly items: readonly Expr[]}
  | {readonly kind: 'alt'; readonly items: readonly Expr[]}
  | {readonly kind: 'ref'; readonly name: string}
  /** `item` between min and max times (max undefined: no upper bound). */
  | {readonly kind: 'repeat'; readonly item: Expr; readonly min: number; readonly max: number | undefined}

export interface Grammar {
  /** Rule name → its expression. Names are any strings; references must resolve. */
  readonly rules: ReadonlyMap<string, Expr>
  /** The rule a whole document must match. */
  readonly start: string
}

export const chars = (set: CharSet): Expr => ({kind: 'chars', set})
/** One code point out of `text`'s characters. */
export const oneOf = (text: string): Expr => chars(charsOf(text))
export const lit = (text: string): Expr => ({kind: 'literal', text})
export const seq = (...items: Expr[]): Expr => (items.length === 1 ? items[0]! : {kind: 'seq', items})
export const alt = (...items: Expr[]): Expr => (items.length === 1 ? items[0]! : {kind: 'alt', items})
export const ref = (name: string): Expr => ({kind: 'ref', name})
export const repeat = (item: Expr, min: number, max: number | undefined): Expr => ({kind: 'repeat', item, min, max})
export const opt = (item: Expr): Expr => repeat(item, 0, 1)
export const star = (item: Expr): Expr => repeat(item, 0, undefined)
export const plus = (item: Expr): Expr => repeat(item, 1, undefined)
export const EMPTY: Expr = {kind: 'seq', items: []}
export const NOTHING: Expr = {kind: 'alt', items: []}
