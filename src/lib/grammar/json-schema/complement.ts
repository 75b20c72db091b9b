/**
 * `not`, for the schemas whose complement the internal form can state exactly: the complement of
 * an alternation is the intersection of the complements of its branches, and the complement of one
 * conjunction is the union of "another type" and, per allowed type, "violates one of its
 * constraints" (below the minimum, too long, missing a required property, matching no dialect's
 * reading of a pattern...). Constraints with no exact complement here (sub-schemas of items and
 * properties, formats, multipleOf, integer, enums among other constraints) are refused.
 */
import {intersectDisj} from './intersect.js'
import {ANY_ARR, ANY_NUM, ANY_STR, anyConj, anyObj, type Conj, type Disj, isTrueSub, type Sub} from './model.js'
import {SchemaRefusal} from './refusal.js'

const only = (pointer: string, t: Partial<Conj>): Conj => ({null: false, boolean: false, pointer, ...t})

function conjComplement(c: Conj, pointer: string, isFalse: (s: Sub) => boolean): Conj[] {
  const refuse = (why: string): never => {
    throw new SchemaRefusal('not', pointer, why)
  }
  if (c.enum) refuse('the complement of an enum among other constraints')
  const out: Conj[] = []
  if (!c.null) out.push(only(pointer, {null: true}))
  if (!c.boolean) out.push(only(pointer, {boolean: true}))
  const n = c.number
  if (!n) out.push(only(pointer, {number: ANY_NUM}))
  else {
    if (n.integer) refuse('the complement of integer (numbers with a fraction)')
    if (n.multipleOf.length > 0) refuse('the complement of multipleOf')
    if (n.lo !== undefined) out.push(only(pointer, {number: {...ANY_NUM, hi: n.lo, hiExcl: !n.loExcl}}))
    if (n.hi !== undefined) out.push(only(pointer, {number: {...ANY_NUM, lo: n.hi, loExcl: !n.hiExcl}}))
  }
  const s = c.string
  if (!s) out.push(only(pointer, {string: ANY_STR}))
  else {
    if (s.formats.length > 0 || (s.antiPatterns?.length ?? 0) > 0) refuse('the complement of a format')
    if (s.minLength > 0) out.push(only(pointer, {string: {...ANY_STR, maxLength: s.minLength - 1}}))
    if (s.maxLength !== undefined) out.push(only(pointer, {string: {...ANY_STR, minLength: s.maxLength + 1}}))
    for (const p of s.patterns) out.push(only(pointer, {string: {...ANY_STR, antiPatterns: [p]}}))
  }
  const a = c.array
  if (!a) out.push(only(pointer, {array: ANY_ARR}))
  else {
    if (a.unique || !isTrueSub(a.items) || a.prefix.some((p) => !isTrueSub(p))) refuse('the complement of item schemas')
    if (a.minItems > 0) out.push(only(pointer, {array: {...ANY_ARR, maxItems: a.minItems - 1}}))
    if (a.maxItems !== undefined) out.push(only(pointer, {array: {...ANY_ARR, minItems: a.maxItems + 1}}))
  }
  const o = c.object
  if (!o) out.push(only(pointer, {object: anyObj(pointer)}))
  else {
    if (o.patterns.length > 0 || !isTrueSub(o.additional)) refuse('the complement of additional or pattern properties')
    for (const [k, v] of o.props) if (!isTrueSub(v) && !(isFalse(v) && !o.required.has(k))) refuse('the complement of property schemas')
    for (const [k, v] of o.props)
      if (isFalse(v) && !o.required.has(k)) out.push(only(pointer, {object: {...anyObj(pointer), required: new Set([k])}}))
    for (const k of o.required)
      out.push(only(pointer, {object: {...anyObj(pointer), props: new Map([[k, {parts: [{schema: false, pointer}]}]])}}))
    if (o.minProps > 0) out.push(only(pointer, {object: {...anyObj(pointer), maxProps: o.minProps - 1}}))
    if (o.maxProps !== undefined) out.push(only(pointer, {object: {...anyObj(pointer), minProps: o.maxProps + 1}}))
  }
  return out
}

/** The values `d` rejects, or a refusal naming `not` at `pointer`. */
export function complementDisj(d: Disj, pointer: string, isFalse: (s: Sub) => boolean): Disj {
  let out: Disj = [anyConj(pointer)]
  for (const c of d) out = intersectDisj(out, conjComplement(c, pointer, isFalse), pointer)
  return out
}
