/**
 * JSON Schema → grammar IR (../ir.ts) for constrained decoding. The grammar accepts exactly the
 * serialized documents the schema validates, within three documented policies (property order,
 * whitespace, number spelling: see ./objects.ts, ./lexical.ts, ./numbers.ts), or the schema is
 * refused with a `SchemaRefusal` naming the keyword and its JSON pointer. Never weakened.
 *
 * Pipeline: keywords → internal form (./normalize.ts: types, intersections for allOf/siblings/$ref,
 * distribution of anyOf/oneOf) → per-type grammars (strings, numbers, arrays, objects, values) with
 * a named rule per sub-schema, so recursion and sharing come for free.
 *
 * Whitespace: `flexible` (default) allows up to 20 JSON whitespace characters between tokens and
 * none around the document; `compact` none at all.
 */
import type {Expr, Grammar} from '../ir.js'
import {alt, lit, NOTHING, ref} from '../ir.js'
import {compileArray} from './arrays.js'
import type {Context} from './context.js'
import {type EscapePolicy, Lexicon} from './lexical.js'
import {type Conj, type Disj, isAnyConj, type Sub, subKey} from './model.js'
import {Normalizer} from './normalize.js'
import {boundedNumber, multipleOfInteger} from './numbers.js'
import {compileObject} from './objects.js'
import {SchemaRefusal} from './refusal.js'
import {compileString} from './strings.js'
import {validConj} from './validate.js'
import {compileValue} from './values.js'

export {SchemaRefusal} from './refusal.js'

export interface JsonSchemaOptions {
  /** 'flexible' (default): up to `maxWhitespace` (20) of [ \t\n\r] between tokens; 'compact': none. */
  whitespace?: 'flexible' | 'compact'
  maxWhitespace?: number
  /**
   * The draft, when the schema does not say with `$schema`: 4, 6 and 7 let `$ref` replace its
   * sibling keywords. Unknown: read as 2020-12 (siblings applied), the draft Python's and Rust's
   * jsonschema assume when `$schema` is absent.
   */
  draft?: 4 | 6 | 7 | 2019 | 2020
  /** 'any' (default): every legal spelling of a character; 'needed': printable ASCII only as itself (./lexical.ts). */
  escapes?: EscapePolicy
}

/** Draft 4-7 (`$ref` overrides siblings)? From `$schema`, else the option; undefined when unknown. */
function legacyRef(schema: unknown, draft: JsonSchemaOptions['draft']): boolean | undefined {
  const declared = typeof schema === 'object' && schema !== null ? (schema as {$schema?: unknown}).$schema : undefined
  if (typeof declared === 'string') {
    if (/draft-0[3-7]/.test(declared)) return true
    if (/draft\/20(19|20)/.test(declared)) return false
  }
  return draft === undefined ? undefined : draft < 2019
}

class Compiler implements Context {
  readonly lex: Lexicon
  readonly rules: Map<string, Expr>
  readonly norm: Normalizer
  private counter = 0
  private readonly subRules = new Map<string, string>()

  constructor(root: unknown, options: JsonSchemaOptions) {
    this.lex = new Lexicon(options.whitespace === 'compact' ? 0 : (options.maxWhitespace ?? 20), options.escapes)
    this.rules = this.lex.rules
    this.norm = new Normalizer(root, (v, c) => validConj(v, c, this.norm, true), legacyRef(root, options.draft))
  }

  fresh(prefix: string): string {
    return `${prefix}#${this.counter++}`
  }

  isFalse(s: Sub): boolean {
    return s.parts.some((p) => p.schema === false) || this.norm.normalizeSub(s).length === 0
  }

  sub(s: Sub): Expr {
    const key = subKey(s)
    const known = this.subRules.get(key)
    if (known) return ref(known)
    const d = this.norm.normalizeSub(s)
    if (d.length === 1 && isAnyConj(d[0]!)) return this.lex.anyValue
    const name = `s:${key}`
    this.subRules.set(key, name)
    this.rules.set(name, NOTHING)
    this.rules.set(name, this.disj(d))
    return ref(name)
  }

  disj(d: Disj): Expr {
    if (d.length === 1 && isAnyConj(d[0]!)) return this.lex.anyValue
    return alt(...d.map((c) => this.conj(c)))
  }

  private conj(c: Conj): Expr {
    const p = c.pointer
    if (c.enum) {
      const unconstrained: Conj = {...c, enum: undefined}
      const ok = c.enum.filter((v) => validConj(v, unconstrained, this.norm))
      return alt(...ok.map((v) => this.enumValue(v, c, p)))
    }
    const parts: Expr[] = []
    if (c.null) parts.push(lit('null'))
    if (c.boolean) parts.push(lit('true'), lit('false'))
    if (c.number) parts.push(this.number(c, p))
    if (c.string) parts.push(compileString(c.string, this, p))
    if (c.array) parts.push(compileArray(c.array, this, p))
    if (c.object) parts.push(compileObject(c.object, this, p))
    return alt(...parts)
  }

  private enumValue(v: unknown, c: Conj, p: string): Expr {
    return compileValue(v as never, this, typeof v === 'number' && (c.number?.integer ?? false), p)
  }

  private number(c: Conj, p: string): Expr {
    const n = c.number!
    let integer = n.integer
    let maxFrac: number | undefined
    const ints: number[] = []
    for (const m of n.multipleOf) {
      if (m.value === 1) integer = true
      else if (Number.isInteger(m.value)) ints.push(m.value)
      else throw new SchemaRefusal('multipleOf', m.pointer, 'a fractional multipleOf (validators divide in floating point)')
    }
    if (ints.length > 0) {
      const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))
      const m = ints.reduce((a, b) => (a / gcd(a, b)) * b)
      if (!Number.isSafeInteger(m) || m > 1000) throw new SchemaRefusal('multipleOf', n.multipleOf[0]!.pointer, 'a multipleOf over 1000')
      if (n.lo === undefined && n.hi === undefined) return multipleOfInteger(m, this.rules)
      if (n.lo === undefined || n.hi === undefined)
        throw new SchemaRefusal('multipleOf', n.multipleOf[0]!.pointer, 'a multipleOf with a one-sided bound')
      const first = Math.ceil(n.lo / m) * m
      const values: number[] = []
      for (let x = first; x <= n.hi && values.length <= 256; x += m)
        if (!(x === n.lo && n.loExcl) && !(x === n.hi && n.hiExcl)) values.push(x)
      if (values.length > 256) throw new SchemaRefusal('multipleOf', n.multipleOf[0]!.pointer, 'more than 256 multiples in range')
      return alt(...values.map((x) => boundedNumber({lo: x, hi: x, integer: true}, p)))
    }
    return boundedNumber({lo: n.lo, loExcl: n.loExcl, hi: n.hi, hiExcl: n.hiExcl, integer, maxFrac}, p)
  }
}

/**
 * Does the rule derive at least one string? (So an unsatisfiable schema is refused, not compiled
 * to nothing.) Depth-first, memoising only "yes": a rule met again while in progress counts as "no"
 * for this pass, and passes repeat until no new "yes" appears, which settles cycles.
 */
function productive(rules: ReadonlyMap<string, Expr>, start: string): boolean {
  const yes = new Set<string>()
  let seen = new Map<string, boolean>()
  const rule = (name: string): boolean => {
    if (yes.has(name)) return true
    const known = seen.get(name)
    if (known !== undefined) return known
    seen.set(name, false)
    const r = can(rules.get(name)!)
    seen.set(name, r)
    if (r) yes.add(name)
    return r
  }
  const can = (e: Expr): boolean => {
    switch (e.kind) {
      case 'chars':
        return e.set.length > 0
      case 'literal':
        return true
      case 'seq':
        return e.items.every(can)
      case 'alt':
        return e.items.some(can)
      case 'ref':
        return rule(e.name)
      case 'repeat':
        return e.min === 0 || can(e.item)
    }
  }
  for (let before = -1; before !== yes.size;) {
    before = yes.size
    seen = new Map()
    if (rule(start)) return true
  }
  return false
}

/** Compile a JSON Schema to a grammar over the serialized document, or throw `SchemaRefusal`. */
export function compileJsonSchema(schema: unknown, options: JsonSchemaOptions = {}): Grammar {
  const c = new Compiler(schema, options)
  const root = c.norm.normalize({schema, pointer: ''})
  const start = 'root'
  c.rules.set(start, c.disj(root))
  if (!productive(c.rules, start)) throw new SchemaRefusal('schema', '', 'no document satisfies the schema')
  return {rules: c.rules, start}
}
