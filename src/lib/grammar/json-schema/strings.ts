/**
 * String schemas: length bounds, `pattern`, `format`. The language is first built over decoded
 * code points (so `maxLength` counts characters, not escape sequences, and `\u00e9` is one
 * character), then every character class is lifted to all of its JSON spellings by the lexicon.
 * A pattern with length bounds is folded into the pattern's one variable repetition when that is
 * exact; other combinations (two patterns, a pattern and a format) are refused.
 */
import {ANY_CHAR, charsOf} from '../charset.js'
import {alt, lit, NOTHING, repeat, seq, type Expr} from '../ir.js'
import type {Context} from './context.js'
import {dfaRules} from './dfa.js'
import {stringDfa, stringRegexes} from './string-lang.js'
import type {StrC} from './model.js'
import {cachedPattern, foldLength} from './regex.js'
import {SchemaRefusal} from './refusal.js'

/** Replace every decoded character set by its escaped spellings (a rule per set). */
export function lift(e: Expr, ctx: Context): Expr {
  switch (e.kind) {
    case 'chars':
      return ctx.lex.char(e.set)
    case 'literal':
      return seq(...[...e.text].map((c) => ctx.lex.char(charsOf(c))))
    case 'seq':
      return seq(...e.items.map((i) => lift(i, ctx)))
    case 'alt':
      return alt(...e.items.map((i) => lift(i, ctx)))
    case 'repeat':
      return repeat(lift(e.item, ctx), e.min, e.max)
    case 'ref':
      throw new Error('lift over a rule reference')
  }
}

export function compileString(s: StrC, ctx: Context, pointer: string): Expr {
  if (s.maxLength !== undefined && s.minLength > s.maxLength) return NOTHING
  const regexes = stringRegexes(s)
  const bounded = s.minLength > 0 || s.maxLength !== undefined
  const quote = lit('"')
  const viaDfa = (withLength: boolean): Expr =>
    seq(
      quote,
      dfaRules(stringDfa(s, pointer, withLength), ctx.fresh('str'), ctx.rules, (set) => ctx.lex.char(set), quote),
    )
  if (regexes.length > 1 || (s.antiPatterns?.length ?? 0) > 0 || (s.notIn?.length ?? 0) > 0) {
    if (!bounded) return viaDfa(false)
    // fold the bounds into the automaton when small, else refuse
    return viaDfa(true)
  }
  let body: Expr
  if (regexes.length === 0) {
    if (!bounded) return ctx.lex.anyString
    body = repeat(ctx.lex.char(ANY_CHAR), s.minLength, s.maxLength)
  } else {
    const r = regexes[0]!
    let e = cachedPattern(r.source, r.pointer)
    if (bounded) {
      const folded = foldLength(e, s.minLength, s.maxLength)
      if (!folded) {
        if ((s.maxLength ?? s.minLength) <= 256) return viaDfa(true)
        throw new SchemaRefusal(
          s.maxLength !== undefined ? 'maxLength' : 'minLength',
          pointer,
          `length bounds with a ${r.keyword} they cannot be folded into`,
        )
      }
      e = folded
    }
    body = lift(e, ctx)
  }
  return seq(quote, body, quote)
}
