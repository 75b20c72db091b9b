/**
 * `enum`/`const` members as grammar: every spelling of the value that JSON equality accepts
 * within the whitespace policy. Strings accept every escape spelling of each character; numbers
 * every decimal spelling of the same value (`1`, `1.0`, `1.00`; exponents only as JSON.stringify
 * writes them); arrays element by element; objects with their keys in the member's own order (all
 * n! orders would be exponential: another order is rejected, a validation error on the safe side).
 */
import {alt, lit, NOTHING, seq, type Expr} from '../ir.js'
import type {Context} from './context.js'
import type {Json} from './model.js'
import {boundedNumber} from './numbers.js'

export function compileValue(v: Json, ctx: Context, integerOnly: boolean, pointer: string): Expr {
  if (v === null || typeof v === 'boolean') return lit(JSON.stringify(v))
  if (typeof v === 'number') {
    // an integer past 2^53 was rounded when the schema was parsed: its true value is unknown here
    if (Number.isInteger(v) && !Number.isSafeInteger(v)) return NOTHING
    const text = lit(JSON.stringify(v))
    if (!Number.isFinite(v)) return text
    return alt(boundedNumber({lo: v, hi: v, integer: integerOnly || Number.isInteger(v) ? integerOnly : false}, pointer), text)
  }
  if (typeof v === 'string') return ctx.lex.stringLiteral(v)
  const ws = ctx.lex.ws
  const comma = seq(ws, lit(','), ws)
  if (Array.isArray(v)) {
    if (v.length === 0) return seq(lit('['), ws, lit(']'))
    const items = v.map((x) => compileValue(x, ctx, false, pointer))
    return seq(lit('['), ws, ...items.flatMap((x, i) => (i === 0 ? [x] : [comma, x])), ws, lit(']'))
  }
  const entries = Object.entries(v)
  if (entries.length === 0) return seq(lit('{'), ws, lit('}'))
  const members = entries.map(([k, x]) => seq(ctx.lex.stringLiteral(k), ws, lit(':'), ws, compileValue(x, ctx, false, pointer)))
  return seq(lit('{'), ws, ...members.flatMap((x, i) => (i === 0 ? [x] : [comma, x])), ws, lit('}'))
}
