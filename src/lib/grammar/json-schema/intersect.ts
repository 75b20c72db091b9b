/**
 * Intersection of the internal form (./model.ts), for `allOf`, sibling keywords next to
 * `$ref`/`anyOf`/`oneOf`, and property schemas met twice. Every rule is exact (bounds take the
 * tighter value, property maps merge key by key, `patternProperties` meet the other side's
 * `additionalProperties`); what cannot be intersected exactly is refused. Also here: the proof of
 * disjointness `oneOf` needs before it may be compiled as a plain alternation.
 */
import {
  andSub,
  type ArrC,
  type Conj,
  type Disj,
  type Json,
  jsonEqual,
  type NumC,
  type ObjC,
  type PatternProp,
  type StrC,
  type Sub,
  TRUE_SUB,
} from './model.js'
import {patternMatches} from './regex.js'
import {SchemaRefusal} from './refusal.js'

/** The schema a key's value must satisfy in `o` (its property schema, matching patterns, or additionalProperties). */
export function propSchema(o: ObjC, key: string): Sub {
  const own = o.props.get(key)
  const matching = o.patterns.filter((p) => patternMatches(p.source, p.pointer, key))
  let s: Sub = own ?? (matching.length === 0 ? o.additional : TRUE_SUB)
  for (const p of matching) s = andSub(s, p.sub)
  return s
}

function mergeNum(a: NumC, b: NumC): NumC {
  let lo = a.lo
  let loExcl = a.loExcl
  if (b.lo !== undefined && (lo === undefined || b.lo > lo)) {
    lo = b.lo
    loExcl = b.loExcl
  } else if (b.lo !== undefined && b.lo === lo) loExcl ||= b.loExcl
  let hi = a.hi
  let hiExcl = a.hiExcl
  if (b.hi !== undefined && (hi === undefined || b.hi < hi)) {
    hi = b.hi
    hiExcl = b.hiExcl
  } else if (b.hi !== undefined && b.hi === hi) hiExcl ||= b.hiExcl
  return {lo, loExcl, hi, hiExcl, integer: a.integer || b.integer, multipleOf: [...a.multipleOf, ...b.multipleOf]}
}

function mergeStr(a: StrC, b: StrC): StrC {
  const maxLength = a.maxLength === undefined ? b.maxLength : b.maxLength === undefined ? a.maxLength : Math.min(a.maxLength, b.maxLength)
  const patterns = [...a.patterns, ...b.patterns.filter((p) => !a.patterns.some((q) => q.source === p.source))]
  const formats = [...a.formats, ...b.formats.filter((f) => !a.formats.some((g) => g.name === f.name))]
  const antiPatterns = [...(a.antiPatterns ?? []), ...(b.antiPatterns ?? [])]
  const notIn = [...(a.notIn ?? []), ...(b.notIn ?? [])]
  return {
    minLength: Math.max(a.minLength, b.minLength),
    maxLength,
    patterns,
    formats,
    ...(antiPatterns.length > 0 ? {antiPatterns} : {}),
    ...(notIn.length > 0 ? {notIn} : {}),
  }
}

function mergeArr(a: ArrC, b: ArrC): ArrC {
  const n = Math.max(a.prefix.length, b.prefix.length)
  const at = (x: ArrC, i: number): Sub => x.prefix[i] ?? x.items
  const prefix = Array.from({length: n}, (_, i) => andSub(at(a, i), at(b, i)))
  const maxItems = a.maxItems === undefined ? b.maxItems : b.maxItems === undefined ? a.maxItems : Math.min(a.maxItems, b.maxItems)
  return {prefix, items: andSub(a.items, b.items), minItems: Math.max(a.minItems, b.minItems), maxItems, unique: a.unique ?? b.unique}
}

function mergeObj(a: ObjC, b: ObjC): ObjC {
  if (a.patterns.length > 0 && b.patterns.length > 0)
    throw new SchemaRefusal('patternProperties', b.pointer, 'patternProperties on both sides of an intersection')
  const props = new Map<string, Sub>()
  for (const k of [...a.props.keys(), ...b.props.keys()]) if (!props.has(k)) props.set(k, andSub(propSchema(a, k), propSchema(b, k)))
  const withOther = (ps: readonly PatternProp[], other: ObjC): PatternProp[] =>
    ps.map((p) => ({...p, sub: andSub(p.sub, other.additional)}))
  const patterns = a.patterns.length > 0 ? withOther(a.patterns, b) : withOther(b.patterns, a)
  const maxProps = a.maxProps === undefined ? b.maxProps : b.maxProps === undefined ? a.maxProps : Math.min(a.maxProps, b.maxProps)
  return {
    props,
    required: new Set([...a.required, ...b.required]),
    additional: andSub(a.additional, b.additional),
    patterns,
    minProps: Math.max(a.minProps, b.minProps),
    maxProps,
    pointer: a.pointer,
  }
}

function both<T>(x: T | undefined, y: T | undefined, f: (a: T, b: T) => T): T | undefined {
  return x === undefined || y === undefined ? undefined : x === y ? x : f(x, y)
}

/** a ∧ b, or undefined when no value can satisfy both (no type left, or an empty enum). */
export function intersectConj(a: Conj, b: Conj): Conj | undefined {
  let values: readonly Json[] | undefined = a.enum ?? b.enum
  if (a.enum && b.enum) values = a.enum.filter((v) => b.enum!.some((w) => jsonEqual(v, w)))
  const c: Conj = {
    null: a.null && b.null,
    boolean: a.boolean && b.boolean,
    number: both(a.number, b.number, mergeNum),
    string: both(a.string, b.string, mergeStr),
    array: both(a.array, b.array, mergeArr),
    object: both(a.object, b.object, mergeObj),
    enum: values,
    pointer: a.pointer,
  }
  if (values?.length === 0) return undefined
  return c.null || c.boolean || c.number || c.string || c.array || c.object ? c : undefined
}

export const MAX_BRANCHES = 128

export function intersectDisj(a: Disj, b: Disj, pointer: string): Disj {
  const out: Conj[] = []
  for (const x of a)
    for (const y of b) {
      const c = intersectConj(x, y)
      if (c) out.push(c)
      if (out.length > MAX_BRANCHES) throw new SchemaRefusal('anyOf', pointer, `more than ${MAX_BRANCHES} alternatives after distributing`)
    }
  return out
}

/** Types two conjunctions both allow. */
function sharedTypes(x: Conj, y: Conj): string[] {
  const t: string[] = []
  if (x.null && y.null) t.push('null')
  if (x.boolean && y.boolean) t.push('boolean')
  if (x.number && y.number) t.push('number')
  if (x.string && y.string) t.push('string')
  if (x.array && y.array) t.push('array')
  if (x.object && y.object) t.push('object')
  return t
}

const numbersDisjoint = (a: NumC, b: NumC): boolean => {
  const below = (x: NumC, y: NumC): boolean =>
    x.hi !== undefined && y.lo !== undefined && (x.hi < y.lo || (x.hi === y.lo && (x.hiExcl || y.loExcl)))
  return below(a, b) || below(b, a)
}

export interface DisjointnessOracle {
  normalizeSub(s: Sub): Disj
  stringsDisjoint(a: StrC, b: StrC): boolean
  /** May `value` satisfy `c` for some validator? ("no" must be certain.) */
  valid(value: Json, c: Conj): boolean
}

/** Can no value satisfy both? A sound, incomplete proof (false means "could not prove"). */
export function conjDisjoint(x: Conj, y: Conj, o: DisjointnessOracle, depth = 0): boolean {
  const types = sharedTypes(x, y)
  if (types.length === 0) return true
  if (x.enum || y.enum) {
    const [e, other] = x.enum ? [x.enum, y] : [y.enum!, x]
    const self = x.enum ? x : y
    return e.every((v) => !o.valid(v, self) || !o.valid(v, other))
  }
  if (depth > 3) return false
  return types.every((t) => {
    if (t === 'number') return numbersDisjoint(x.number!, y.number!)
    if (t === 'string') return o.stringsDisjoint(x.string!, y.string!)
    if (t === 'object') {
      // a discriminator: a property both require, whose schemas cannot both hold
      const a = x.object!
      const b = y.object!
      // a property one requires and the other forbids
      const forbids = (x: ObjC, y: ObjC): boolean => [...x.required].some((k) => o.normalizeSub(propSchema(y, k)).length === 0)
      if (forbids(a, b) || forbids(b, a)) return true
      for (const k of a.required) {
        if (!b.required.has(k)) continue
        const da = o.normalizeSub(propSchema(a, k))
        const db = o.normalizeSub(propSchema(b, k))
        if (da.every((p) => db.every((q) => conjDisjoint(p, q, o, depth + 1)))) return true
      }
      return false
    }
    return false
  })
}

export function disjDisjoint(a: Disj, b: Disj, o: DisjointnessOracle): boolean {
  return a.every((x) => b.every((y) => conjDisjoint(x, y, o)))
}
