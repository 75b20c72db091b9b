/**
 * The language of a string schema over decoded characters, as one automaton when a single regex
 * with folded length bounds is not enough: several patterns, a pattern and a format, negated
 * patterns (`not: {pattern}`), and length bounds a pattern cannot absorb. Also answers whether two
 * string schemas can share a value (for `oneOf`).
 */
import {ANY_CHAR} from '../charset.js'
import {chars, repeat, type Expr} from '../ir.js'
import {complementDfa, type Dfa, dfaEmpty, finiteDfa, productDfa, toDfa, TooLarge} from './dfa.js'
import {formatRegex} from './formats.js'
import type {StrC} from './model.js'
import {cachedPattern} from './regex.js'
import {SchemaRefusal} from './refusal.js'

/** Regexes (narrow readings) a string must match: its patterns and its format's. */
export function stringRegexes(s: StrC): {source: string; pointer: string; keyword: string}[] {
  const out = s.patterns.map((p) => ({...p, keyword: 'pattern'}))
  for (const f of s.formats) {
    const re = formatRegex(f.name)
    if (re === 'refuse') throw new SchemaRefusal('format', f.pointer, `format ${JSON.stringify(f.name)} is not supported`)
    if (re !== undefined) out.push({source: re, pointer: f.pointer, keyword: 'format'})
  }
  return out
}

/** The whole string language as a DFA (length bounds included when `withLength`). */
export function stringDfa(s: StrC, pointer: string, withLength: boolean): Dfa {
  try {
    let d: Dfa | undefined
    const and = (x: Dfa): void => void (d = d ? productDfa(d, x, 'and') : x)
    for (const r of stringRegexes(s)) and(toDfa(cachedPattern(r.source, r.pointer)))
    for (const r of s.antiPatterns ?? []) and(complementDfa(toDfa(cachedPattern(r.source, r.pointer, true))))
    if (s.notIn && s.notIn.length > 0) and(complementDfa(finiteDfa([...s.notIn])))
    if (withLength && (s.minLength > 0 || s.maxLength !== undefined)) {
      if ((s.maxLength ?? s.minLength) > 256) throw new TooLarge('length bound too large for an automaton')
      const len: Expr = repeat(chars(ANY_CHAR), s.minLength, s.maxLength)
      and(toDfa(len))
    }
    return d ?? toDfa(repeat(chars(ANY_CHAR), 0, undefined))
  } catch (e) {
    if (e instanceof TooLarge)
      throw new SchemaRefusal(s.patterns.length > 0 ? 'pattern' : 'format', pointer, `the string automaton is too large (${e.message})`)
    throw e
  }
}

/** No string satisfies both? (Lengths compared separately, patterns by automaton product.) */
export function stringsDisjoint(a: StrC, b: StrC, pointer: string): boolean {
  const lo = Math.max(a.minLength, b.minLength)
  const hi = Math.min(a.maxLength ?? Infinity, b.maxLength ?? Infinity)
  if (lo > hi) return true
  const hasRegex = (s: StrC): boolean =>
    s.patterns.length > 0 || s.formats.length > 0 || (s.antiPatterns?.length ?? 0) > 0 || (s.notIn?.length ?? 0) > 0
  if (!hasRegex(a) && !hasRegex(b)) return false
  try {
    return dfaEmpty(productDfa(stringDfa(a, pointer, false), stringDfa(b, pointer, false), 'and'))
  } catch (e) {
    if (e instanceof SchemaRefusal) return false
    throw e
  }
}
