/**
 * Array schemas: positional items (`prefixItems`, or the array form of `items`), the items after
 * them (`items`/`additionalItems`), and `minItems`/`maxItems` as repetition bounds (a counter in
 * the matcher, never an expansion). `uniqueItems` is not context-free in general: refused unless
 * at most one item can occur.
 */
import {alt, EMPTY, lit, NOTHING, opt, repeat, seq, type Expr} from '../ir.js'
import type {Context} from './context.js'
import type {ArrC} from './model.js'
import {SchemaRefusal} from './refusal.js'

export function compileArray(a: ArrC, ctx: Context, _pointer: string): Expr {
  const max = a.maxItems
  if (max !== undefined && a.minItems > max) return NOTHING
  if (a.unique && (max === undefined || max > 1)) throw new SchemaRefusal('uniqueItems', a.unique, 'uniqueItems is not supported')
  const ws = ctx.lex.ws
  const comma = seq(ws, lit(','), ws)
  const n = a.prefix.length
  const at = (i: number): Expr => (i < n ? ctx.sub(a.prefix[i]!) : ctx.isFalse(a.items) ? NOTHING : ctx.sub(a.items))
  // what may follow once i elements are written (each further one after a comma)
  const from = (i: number): Expr => {
    if (i >= n) {
      if (ctx.isFalse(a.items)) return a.minItems > i ? NOTHING : EMPTY
      return repeat(seq(comma, at(i)), Math.max(0, a.minItems - i), max === undefined ? undefined : max - i)
    }
    const more = max !== undefined && i >= max ? NOTHING : seq(comma, at(i), from(i + 1))
    return i >= a.minItems ? alt(EMPTY, more) : more
  }
  const nonEmpty = max === 0 ? NOTHING : seq(at(0), from(1), ws)
  return seq(lit('['), ws, a.minItems > 0 ? nonEmpty : opt(nonEmpty), lit(']'))
}
