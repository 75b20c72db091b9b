/**
 * `not`, for the schemas whose complement the internal form can state exactly: the complement of
 * an alternation is the intersection of the complements of its branches, and the complement of one
 * conjunction is the union of "another type" and, per allowed type, "violates one of its
 * constraints" (below the minimum, too long, missing a required property, matching no dialect's
 * reading of a pattern...). Constraints with no exact complement here (sub-schemas of items and
 * properties, formats, multipleOf, integer, enums among other constraints) are refused.
 */
import {intersectDisj} from './intersect.js'
import {
  ANY_ARR,
  ANY_NUM,
  ANY_STR,
  anyConj,
  anyObj,
  type Conj,
  type Disj,
  isPlainArr,
  isPlainNum,
  isPlainObj,
  isPlainStr,
  isTrueSub,
  type Sub,
} from './model.js'
import {SchemaRefusal} from './refusal.js'

const only = (pointer: string, t: Partial<Conj>): Conj => ({null: false, boolean: false, pointer, ...t})

function conjComplement(c: Conj, pointer: string, isFalse: (s: Sub) => boolean): Conj[] {
  const refuse = (why: string): never => {
    throw new SchemaRefusal('not', pointer, why)
  }
  if (c.enum) return enumComplement(c, pointer, refuse)
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

/** Values outside an enum (of scalars, with no other constraint than the type). */
function enumComplement(c: Conj, pointer: string, refuse: (why: string) => never): Conj[] {
  const e = c.enum!
  const plain =
    (!c.number || isPlainNum(c.number)) &&
    (!c.string || isPlainStr(c.string)) &&
    (!c.array || isPlainArr(c.array)) &&
    (!c.object || isPlainObj(c.object))
  if (!plain) refuse('the complement of an enum among other constraints')
  if (e.some((v) => v !== null && typeof v === 'object')) refuse('the complement of an enum with array or object members')
  const out: Conj[] = []
  // the types the conjunction does not allow, whole; the allowed ones minus the members
  if (!c.null || !e.includes(null)) out.push(only(pointer, {null: true}))
  for (const b of [true, false]) if (!c.boolean || !e.includes(b)) out.push(only(pointer, {boolean: true, enum: [b]}))
  const nums = [...new Set(e.filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b)
  if (!c.number || nums.length === 0) out.push(only(pointer, {number: ANY_NUM}))
  else {
    out.push(only(pointer, {number: {...ANY_NUM, hi: nums[0]!, hiExcl: true}}))
    for (let i = 0; i + 1 < nums.length; i++)
      out.push(only(pointer, {number: {...ANY_NUM, lo: nums[i]!, loExcl: true, hi: nums[i + 1]!, hiExcl: true}}))
    out.push(only(pointer, {number: {...ANY_NUM, lo: nums[nums.length - 1]!, loExcl: true}}))
  }
  const strs = e.filter((v): v is string => typeof v === 'string')
  out.push(only(pointer, {string: !c.string || strs.length === 0 ? ANY_STR : {...ANY_STR, notIn: strs}}))
  out.push(only(pointer, {array: ANY_ARR}), only(pointer, {object: anyObj(pointer)}))
  return out
}
