/**
 * The compiler's internal form of a schema: a disjunction (anyOf) of conjunctions, each of which
 * says, per JSON type, whether that type is allowed and under which constraints. `allOf`,
 * sibling keywords and `$ref` become intersections of these (always exact: bounds tighten, property
 * maps merge), and `anyOf`/`oneOf` distribute over them. Sub-schemas of arrays and objects stay
 * lazy (`Sub`: the conjunction of schema locations) so that recursive schemas stay finite: they
 * are compiled to named rules, and JSON consumes `[`/`{` before any of them.
 */
import type {Located} from './refs.js'

export type Json = null | boolean | number | string | Json[] | {[k: string]: Json}

/** The conjunction of some schema locations (none: `true`). */
export interface Sub {
  readonly parts: readonly Located[]
}
export const TRUE_SUB: Sub = {parts: []}

export interface NumC {
  readonly lo?: number
  readonly loExcl: boolean
  readonly hi?: number
  readonly hiExcl: boolean
  readonly integer: boolean
  readonly multipleOf: readonly {value: number; pointer: string}[]
}
export interface StrC {
  readonly minLength: number
  readonly maxLength?: number
  readonly patterns: readonly {source: string; pointer: string}[]
  readonly formats: readonly {name: string; pointer: string}[]
  /** `not: {pattern}`: no dialect may match these. */
  readonly antiPatterns?: readonly {source: string; pointer: string}[]
  /** `not: {enum}`: none of these values. */
  readonly notIn?: readonly string[]
}
export interface ArrC {
  readonly prefix: readonly Sub[]
  readonly items: Sub
  readonly minItems: number
  readonly maxItems?: number
  readonly unique?: string
}
export interface PatternProp {
  readonly source: string
  readonly pointer: string
  readonly sub: Sub
}
export interface ObjC {
  /** In definition order: the order the grammar accepts them in. */
  readonly props: ReadonlyMap<string, Sub>
  readonly required: ReadonlySet<string>
  readonly additional: Sub
  readonly patterns: readonly PatternProp[]
  readonly minProps: number
  readonly maxProps?: number
  readonly pointer: string
}
export interface Conj {
  readonly null: boolean
  readonly boolean: boolean
  readonly number?: NumC
  readonly string?: StrC
  readonly array?: ArrC
  readonly object?: ObjC
  /** When present, only these values (each also subject to the constraints above). */
  readonly enum?: readonly Json[]
  readonly pointer: string
}
export type Disj = readonly Conj[]

export const ANY_NUM: NumC = {loExcl: false, hiExcl: false, integer: false, multipleOf: []}
export const ANY_STR: StrC = {minLength: 0, patterns: [], formats: []}
export const ANY_ARR: ArrC = {prefix: [], items: TRUE_SUB, minItems: 0}
export const anyObj = (pointer: string): ObjC => ({
  props: new Map(),
  required: new Set(),
  additional: TRUE_SUB,
  patterns: [],
  minProps: 0,
  pointer,
})
export const anyConj = (pointer: string): Conj => ({
  null: true,
  boolean: true,
  number: ANY_NUM,
  string: ANY_STR,
  array: ANY_ARR,
  object: anyObj(pointer),
  pointer,
})

export const isTrueSub = (s: Sub): boolean =>
  s.parts.every((p) => p.schema === true || (isPlainObject(p.schema) && Object.keys(p.schema).length === 0))
export const isPlainObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x)

export function andSub(a: Sub, b: Sub): Sub {
  if (a.parts.length === 0) return b
  if (b.parts.length === 0) return a
  const seen = new Set(a.parts.map((p) => p.pointer))
  return {parts: [...a.parts, ...b.parts.filter((p) => !seen.has(p.pointer))]}
}
export const subKey = (s: Sub): string => [...new Set(s.parts.map((p) => p.pointer))].sort().join('&')

/** JSON equality: numbers by value, objects regardless of key order. */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) return a.length === (b as Json[]).length && a.every((x, i) => jsonEqual(x, (b as Json[])[i]!))
  const ka = Object.keys(a)
  const ob = b as Record<string, Json>
  return ka.length === Object.keys(ob).length && ka.every((k) => k in ob && jsonEqual((a as Record<string, Json>)[k]!, ob[k]!))
}

export const isAnyConj = (c: Conj): boolean =>
  c.enum === undefined &&
  c.null &&
  c.boolean &&
  c.number === ANY_NUM &&
  c.string === ANY_STR &&
  c.array === ANY_ARR &&
  c.object !== undefined &&
  c.object.props.size === 0 &&
  c.object.required.size === 0 &&
  c.object.patterns.length === 0 &&
  c.object.minProps === 0 &&
  c.object.maxProps === undefined &&
  isTrueSub(c.object.additional)

export const isPlainNum = (n: NumC): boolean => n.lo === undefined && n.hi === undefined && !n.integer && n.multipleOf.length === 0
export const isPlainStr = (s: StrC): boolean =>
  s.minLength === 0 &&
  s.maxLength === undefined &&
  s.patterns.length === 0 &&
  s.formats.length === 0 &&
  !s.antiPatterns?.length &&
  !s.notIn?.length
export const isPlainArr = (a: ArrC): boolean =>
  a.prefix.length === 0 && isTrueSub(a.items) && a.minItems === 0 && a.maxItems === undefined && a.unique === undefined
export const isPlainObj = (o: ObjC): boolean =>
  o.props.size === 0 &&
  o.required.size === 0 &&
  o.patterns.length === 0 &&
  isTrueSub(o.additional) &&
  o.minProps === 0 &&
  o.maxProps === undefined
