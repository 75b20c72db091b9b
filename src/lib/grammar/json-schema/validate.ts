/**
 * A validator of JSON values against the internal form, used where the grammar is built from
 * values rather than rules: `enum`/`const` members are kept only if they satisfy the sibling
 * constraints, and `oneOf` disjointness is proved by checking enum members against other
 * branches. It errs on the side of "invalid" (patterns and formats use the narrow regex reading),
 * so the grammar can only lose members, never gain one.
 */
import {propSchema} from './intersect.js'
import {type Conj, type Disj, type Json, jsonEqual, type Sub} from './model.js'
import {formatRegex} from './formats.js'
import {cachedPattern, matchesRegular} from './regex.js'
import {SchemaRefusal} from './refusal.js'

export interface SubResolver {
  normalizeSub(s: Sub): Disj
}

const codePoints = (s: string): number => [...s].length

/**
 * `wide`: "some validator may accept it" (patterns in their wide reading, formats not checked),
 * for proofs that a value is *not* valid; otherwise "every validator accepts it".
 */
export function validConj(v: Json, c: Conj, r: SubResolver, wide = false): boolean {
  if (c.enum && !c.enum.some((e) => jsonEqual(e, v))) return false
  if (v === null) return c.null
  if (typeof v === 'boolean') return c.boolean
  if (typeof v === 'number') {
    const n = c.number
    if (!n) return false
    if (n.integer && !Number.isInteger(v)) return false
    if (n.lo !== undefined && (v < n.lo || (n.loExcl && v === n.lo))) return false
    if (n.hi !== undefined && (v > n.hi || (n.hiExcl && v === n.hi))) return false
    for (const m of n.multipleOf) if (!(Number.isInteger(m.value) && Number.isInteger(v) && v % m.value === 0)) return false
    return true
  }
  if (typeof v === 'string') {
    const s = c.string
    if (!s) return false
    const len = codePoints(v)
    if (len < s.minLength || (s.maxLength !== undefined && len > s.maxLength)) return false
    for (const p of s.patterns) if (!matchesRegular(cachedPattern(p.source, p.pointer, wide), v)) return false
    if (s.notIn?.includes(v)) return false
    for (const p of s.antiPatterns ?? []) if (matchesRegular(cachedPattern(p.source, p.pointer, !wide), v)) return false
    if (wide) return true
    for (const f of s.formats) {
      const re = formatRegex(f.name)
      if (re === 'refuse') throw new SchemaRefusal('format', f.pointer, `format ${f.name} is not supported`)
      if (re !== undefined && !matchesRegular(cachedPattern(re, f.pointer), v)) return false
    }
    return true
  }
  const sub = (x: Json, s: Sub): boolean => r.normalizeSub(s).some((d) => validConj(x, d, r, wide))
  if (Array.isArray(v)) {
    const a = c.array
    if (!a) return false
    if (v.length < a.minItems || (a.maxItems !== undefined && v.length > a.maxItems)) return false
    if (a.unique && v.some((x, i) => v.slice(0, i).some((y) => jsonEqual(x, y)))) return false
    return v.every((x, i) => sub(x, a.prefix[i] ?? a.items))
  }
  const o = c.object
  if (!o) return false
  const keys = Object.keys(v)
  if (keys.length < o.minProps || (o.maxProps !== undefined && keys.length > o.maxProps)) return false
  for (const k of o.required) if (!(k in v)) return false
  return keys.every((k) => sub(v[k]!, propSchema(o, k)))
}
