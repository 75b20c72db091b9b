/**
 * Schema keywords → the internal form (./model.ts). One place decides, keyword by keyword, what is
 * honoured, what is an annotation, and what is refused: anything that constrains and is not
 * implemented exactly is a refusal, never silently dropped. Results are memoised per schema
 * location, so a definition used a hundred times is normalised once; a reference cycle that
 * consumes no input (`{"$ref": "#"}` at the root) would be left recursion and is refused.
 */
import {intersectDisj, disjDisjoint, type DisjointnessOracle} from './intersect.js'
import {
  ANY_ARR,
  ANY_NUM,
  ANY_STR,
  anyConj,
  anyObj,
  type Conj,
  type Disj,
  isPlainObject,
  type Json,
  jsonEqual,
  type NumC,
  type PatternProp,
  type StrC,
  type Sub,
  TRUE_SUB,
} from './model.js'
import {type Located, RefIndex} from './refs.js'
import {stringsDisjoint} from './string-lang.js'
import {complementDisj} from './complement.js'
import {childPointer, SchemaRefusal} from './refusal.js'

/** Keywords that only annotate (or hold definitions, or are read elsewhere). */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  '$comment',
  '$schema',
  '$id',
  'id',
  '$anchor',
  '$dynamicAnchor',
  '$recursiveAnchor',
  '$vocabulary',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentMediaType',
  'contentEncoding',
  'contentSchema',
  '$defs',
  'definitions',
  'format',
  'then',
  'else',
  'minContains',
  'maxContains',
])
/** Constraining keywords this compiler does not implement: refused by name. */
const REFUSED = new Set(['contains', 'propertyNames', '$dynamicRef', '$recursiveRef', 'disallow', 'extends', 'divisibleBy'])
const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string', 'any']

const num = (s: Record<string, unknown>, k: string, pointer: string): number | undefined => {
  const v = s[k]
  if (v === undefined) return undefined
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new SchemaRefusal(k, childPointer(pointer, k), 'not a number')
  return v
}
const count = (s: Record<string, unknown>, k: string, pointer: string): number | undefined => {
  const v = num(s, k, pointer)
  if (v !== undefined && (v < 0 || !Number.isInteger(v))) throw new SchemaRefusal(k, childPointer(pointer, k), 'not a non-negative integer')
  return v
}
const located = (schema: unknown, pointer: string): Located => ({schema, pointer})
const subAt = (schema: unknown, pointer: string): Sub => (schema === true ? TRUE_SUB : {parts: [located(schema, pointer)]})

export class Normalizer implements DisjointnessOracle {
  readonly refs: RefIndex
  private readonly memo = new Map<string, Disj>()
  private readonly active = new Set<string>()

  constructor(
    readonly root: unknown,
    readonly valid: (value: Json, c: Conj) => boolean,
    /** Draft 4-7 (`$ref` replaces its siblings); undefined when the draft is not known. */
    private readonly legacyRef: boolean | undefined,
  ) {
    this.refs = new RefIndex(root, legacyRef)
  }

  stringsDisjoint(a: StrC, b: StrC): boolean {
    return stringsDisjoint(a, b, '')
  }

  normalizeSub(s: Sub): Disj {
    let d: Disj = [anyConj('')]
    for (const p of s.parts) d = intersectDisj(d, this.normalize(p), p.pointer)
    return d
  }

  normalize(loc: Located): Disj {
    const hit = this.memo.get(loc.pointer)
    if (hit) return hit
    if (this.active.has(loc.pointer))
      throw new SchemaRefusal('$ref', loc.pointer, 'a reference cycle that consumes no input (left recursion)')
    this.active.add(loc.pointer)
    try {
      const d = this.compute(loc.schema, loc.pointer)
      this.memo.set(loc.pointer, d)
      return d
    } finally {
      this.active.delete(loc.pointer)
    }
  }

  private compute(schema: unknown, pointer: string): Disj {
    if (schema === true) return [anyConj(pointer)]
    if (schema === false) return []
    if (!isPlainObject(schema)) throw new SchemaRefusal('schema', pointer, 'not a schema (object or boolean)')
    if (typeof schema.$ref === 'string' && this.legacyRef) return this.normalize(this.refs.resolve(schema.$ref, pointer))
    const s = schema
    for (const k of Object.keys(s))
      if (REFUSED.has(k) && !this.harmless(k, s[k])) throw new SchemaRefusal(k, childPointer(pointer, k), 'not supported')
    if ('if' in s && ('then' in s || 'else' in s))
      throw new SchemaRefusal('if', childPointer(pointer, 'if'), 'if/then/else is not supported')
    let d: Disj = this.own(s, pointer)
    if (typeof s.$ref === 'string') d = intersectDisj(d, this.normalize(this.refs.resolve(s.$ref, pointer)), pointer)
    if (Array.isArray(s.allOf))
      s.allOf.forEach((x, i) => (d = intersectDisj(d, this.normalize(located(x, childPointer(pointer, 'allOf', i))), pointer)))
    if (Array.isArray(s.anyOf)) {
      const branches = s.anyOf.flatMap((x, i) => this.normalize(located(x, childPointer(pointer, 'anyOf', i))))
      d = intersectDisj(d, branches, childPointer(pointer, 'anyOf'))
    }
    if (Array.isArray(s.oneOf)) {
      const branches = s.oneOf.map((x, i) => intersectDisj(d, this.normalize(located(x, childPointer(pointer, 'oneOf', i))), pointer))
      // exactly one: each branch minus the branches it may overlap (their complements), when expressible
      const raw = s.oneOf.map((x, i) => this.normalize(located(x, childPointer(pointer, 'oneOf', i))))
      const exclusive = branches.map((b, i) => {
        let out = b
        for (let j = 0; j < branches.length; j++) {
          if (j === i || disjDisjoint(b, branches[j]!, this)) continue
          try {
            out = intersectDisj(out, complementDisj(raw[j]!, childPointer(pointer, 'oneOf', j), this.isFalse), pointer)
          } catch (e) {
            if (!(e instanceof SchemaRefusal)) throw e
            throw new SchemaRefusal(
              'oneOf',
              childPointer(pointer, 'oneOf'),
              `branches ${i} and ${j} are not provably disjoint, and ${e.message}`,
            )
          }
        }
        return out
      })
      d = exclusive.flat()
    }
    if ('not' in s) d = this.not(d, s.not, childPointer(pointer, 'not'))
    for (const k of ['dependencies', 'dependentRequired', 'dependentSchemas'])
      if (isPlainObject(s[k])) d = this.dependencies(d, s[k], childPointer(pointer, k))
    return d
  }

  /**
   * `dependencies` (both forms), `dependentRequired`, `dependentSchemas`: for each name, either the
   * value is not an object, or the name is absent, or the object has it and satisfies the dependency.
   */
  private dependencies(d: Disj, deps: Record<string, unknown>, pointer: string): Disj {
    for (const [name, dep] of Object.entries(deps)) {
      const p = childPointer(pointer, name)
      const base = anyConj(p)
      const absent: Conj = {...base, object: {...anyObj(p), props: new Map([[name, {parts: [located(false, p)]}]])}}
      const present: Conj = {null: false, boolean: false, object: {...anyObj(p), required: new Set([name])}, pointer: p}
      let withDep: Disj
      if (Array.isArray(dep)) {
        if (!dep.every((x) => typeof x === 'string')) throw new SchemaRefusal('dependencies', p, 'not a list of names')
        withDep = [{...present, object: {...present.object!, required: new Set([name, ...(dep as string[])])}}]
      } else withDep = intersectDisj([present], this.normalize(located(dep, p)), p)
      d = intersectDisj(d, [absent, ...withDep], p)
    }
    return d
  }

  /** Refused keywords that, with this value, constrain nothing. */
  private harmless(k: string, v: unknown): boolean {
    const empty = v === true || (isPlainObject(v) && Object.keys(v).length === 0)
    return empty && ['propertyNames', 'dependentSchemas', 'dependencies', 'dependentRequired'].includes(k)
  }

  /** The keywords of one schema object other than references and combinators. */
  private own(s: Record<string, unknown>, pointer: string): Disj {
    let c: Conj = anyConj(pointer)
    if ('type' in s) {
      const ts = Array.isArray(s.type) ? s.type : [s.type]
      for (const t of ts)
        if (typeof t !== 'string' || !TYPES.includes(t))
          throw new SchemaRefusal('type', childPointer(pointer, 'type'), `unknown type ${JSON.stringify(t)}`)
      const has = (t: string): boolean => ts.includes(t) || ts.includes('any')
      c = {
        ...c,
        null: has('null'),
        boolean: has('boolean'),
        number: has('number') ? ANY_NUM : has('integer') ? {...ANY_NUM, integer: true} : undefined,
        string: has('string') ? ANY_STR : undefined,
        array: has('array') ? ANY_ARR : undefined,
        object: has('object') ? c.object : undefined,
      }
    }
    if ('const' in s) c = {...c, enum: [s.const as Json]}
    if ('enum' in s) {
      if (!Array.isArray(s.enum)) throw new SchemaRefusal('enum', childPointer(pointer, 'enum'), 'not an array')
      const values = s.enum as Json[]
      c = {...c, enum: c.enum ? c.enum.filter((v) => values.some((w) => jsonEqual(v, w))) : values}
    }
    if (c.number) c = {...c, number: this.numberKeywords(s, pointer, c.number)}
    if (c.string) c = {...c, string: this.stringKeywords(s, pointer, c.string)}
    if (c.array) c = {...c, array: this.arrayKeywords(s, pointer)}
    if (c.object) c = {...c, object: this.objectKeywords(s, pointer)}
    if (c.enum?.length === 0) return []
    return c.null || c.boolean || c.number || c.string || c.array || c.object ? [c] : []
  }

  private numberKeywords(s: Record<string, unknown>, pointer: string, base: NumC): NumC {
    let n = {...base, multipleOf: [...base.multipleOf]}
    const min = num(s, 'minimum', pointer)
    const max = num(s, 'maximum', pointer)
    if (min !== undefined) n = {...n, lo: min, loExcl: s.exclusiveMinimum === true}
    if (max !== undefined) n = {...n, hi: max, hiExcl: s.exclusiveMaximum === true}
    if (typeof s.exclusiveMinimum === 'number') {
      const v = s.exclusiveMinimum
      if (n.lo === undefined || v >= n.lo) n = {...n, lo: v, loExcl: true}
    }
    if (typeof s.exclusiveMaximum === 'number') {
      const v = s.exclusiveMaximum
      if (n.hi === undefined || v <= n.hi) n = {...n, hi: v, hiExcl: true}
    }
    const m = num(s, 'multipleOf', pointer)
    if (m !== undefined) {
      if (m <= 0) throw new SchemaRefusal('multipleOf', childPointer(pointer, 'multipleOf'), 'not positive')
      n.multipleOf.push({value: m, pointer: childPointer(pointer, 'multipleOf')})
    }
    return n
  }

  private stringKeywords(s: Record<string, unknown>, pointer: string, base: typeof ANY_STR): typeof ANY_STR {
    const minLength = count(s, 'minLength', pointer) ?? 0
    const maxLength = count(s, 'maxLength', pointer)
    const patterns = [...base.patterns]
    if ('pattern' in s) {
      if (typeof s.pattern !== 'string') throw new SchemaRefusal('pattern', childPointer(pointer, 'pattern'), 'not a string')
      patterns.push({source: s.pattern, pointer: childPointer(pointer, 'pattern')})
    }
    const formats = typeof s.format === 'string' ? [{name: s.format, pointer: childPointer(pointer, 'format')}] : []
    return {minLength, maxLength, patterns, formats}
  }

  private arrayKeywords(s: Record<string, unknown>, pointer: string): typeof ANY_ARR {
    let prefix: Sub[] = []
    let items: Sub = TRUE_SUB
    // prefixItems is a 2020-12 keyword: an unknown one (an annotation) in drafts 4-7
    if (Array.isArray(s.prefixItems) && this.legacyRef !== true) {
      prefix = s.prefixItems.map((x, i) => subAt(x, childPointer(pointer, 'prefixItems', i)))
      if ('items' in s) items = subAt(s.items, childPointer(pointer, 'items'))
    } else if (Array.isArray(s.items)) {
      prefix = s.items.map((x, i) => subAt(x, childPointer(pointer, 'items', i)))
      if ('additionalItems' in s) items = subAt(s.additionalItems, childPointer(pointer, 'additionalItems'))
    } else if ('items' in s) items = subAt(s.items, childPointer(pointer, 'items'))
    if ('unevaluatedItems' in s && s.unevaluatedItems !== true) {
      const simple = !['allOf', 'anyOf', 'oneOf', '$ref', 'if', 'contains', '$dynamicRef'].some((k) => k in s)
      if (!simple) throw new SchemaRefusal('unevaluatedItems', childPointer(pointer, 'unevaluatedItems'), 'with combinators or references')
      if (!('items' in s && !Array.isArray(s.items)) && !('additionalItems' in s && Array.isArray(s.items)))
        items = subAt(s.unevaluatedItems, childPointer(pointer, 'unevaluatedItems'))
    }
    const unique = s.uniqueItems === true ? childPointer(pointer, 'uniqueItems') : undefined
    return {prefix, items, minItems: count(s, 'minItems', pointer) ?? 0, maxItems: count(s, 'maxItems', pointer), unique}
  }

  private objectKeywords(s: Record<string, unknown>, pointer: string): ReturnType<typeof anyObj> {
    const props = new Map<string, Sub>()
    if (isPlainObject(s.properties))
      for (const [k, v] of Object.entries(s.properties)) props.set(k, subAt(v, childPointer(pointer, 'properties', k)))
    const required = new Set<string>(Array.isArray(s.required) ? (s.required.filter((x) => typeof x === 'string') as string[]) : [])
    if (s.required === true) throw new SchemaRefusal('required', childPointer(pointer, 'required'), 'draft 3 boolean required')
    let additional: Sub =
      'additionalProperties' in s ? subAt(s.additionalProperties, childPointer(pointer, 'additionalProperties')) : TRUE_SUB
    if ('unevaluatedProperties' in s && s.unevaluatedProperties !== true && !('additionalProperties' in s)) {
      const simple = !['allOf', 'anyOf', 'oneOf', '$ref', 'if', 'dependentSchemas', '$dynamicRef'].some((k) => k in s)
      if (!simple)
        throw new SchemaRefusal('unevaluatedProperties', childPointer(pointer, 'unevaluatedProperties'), 'with combinators or references')
      additional = subAt(s.unevaluatedProperties, childPointer(pointer, 'unevaluatedProperties'))
    }
    const patterns: PatternProp[] = []
    if (isPlainObject(s.patternProperties))
      for (const [k, v] of Object.entries(s.patternProperties)) {
        const p = childPointer(pointer, 'patternProperties', k)
        patterns.push({source: k, pointer: p, sub: subAt(v, p)})
      }
    return {
      props,
      required,
      additional,
      patterns,
      minProps: count(s, 'minProperties', pointer) ?? 0,
      maxProps: count(s, 'maxProperties', pointer),
      pointer,
    }
  }

  /** `not`, where its complement is expressible: types, scalar enums, `required`. */
  private not(d: Disj, schema: unknown, pointer: string): Disj {
    const n = this.normalize(located(schema, pointer))
    if (n.length === 0) return d
    const keys = isPlainObject(schema) ? Object.keys(schema).filter((k) => !ANNOTATIONS.has(k) || k === 'format') : []
    const only = (...ks: string[]): boolean => keys.length > 0 && keys.every((k) => ks.includes(k))
    if (isPlainObject(schema) && only('type')) {
      const ts = Array.isArray(schema.type) ? schema.type : [schema.type]
      if (ts.includes('integer') && !ts.includes('number') && d.some((c) => c.number && !c.number.integer))
        throw new SchemaRefusal('not', pointer, 'not integer (a number with a fraction) is not supported')
      const drop = (t: string): boolean => ts.includes(t) || ts.includes('any')
      return d
        .map((c) => ({
          ...c,
          null: c.null && !drop('null'),
          boolean: c.boolean && !drop('boolean'),
          number: drop('number') || drop('integer') ? undefined : c.number,
          string: drop('string') ? undefined : c.string,
          array: drop('array') ? undefined : c.array,
          object: drop('object') ? undefined : c.object,
        }))
        .filter((c) => c.null || c.boolean || c.number || c.string || c.array || c.object)
    }
    if (n.length === 1 && n[0]!.enum && (only('enum') || only('const'))) {
      if (d.every((c) => c.enum)) return d.map((c) => ({...c, enum: c.enum!.filter((v) => !this.valid(v, n[0]!))}))
    }
    if (
      isPlainObject(schema) &&
      (only('pattern') || only('pattern', 'type')) &&
      typeof schema.pattern === 'string' &&
      (schema.type ?? 'string') === 'string'
    ) {
      // {pattern} holds for every non-string, so its complement is the strings no dialect matches
      // ({type: string, pattern} also fails every non-string, which its complement then keeps)
      const anti = {source: schema.pattern, pointer: childPointer(pointer, 'pattern')}
      const others = schema.type === 'string'
      return d
        .map((c): Conj => {
          const string = c.string ? {...c.string, antiPatterns: [...(c.string.antiPatterns ?? []), anti]} : undefined
          return others
            ? {...c, string}
            : {...c, null: false, boolean: false, number: undefined, array: undefined, object: undefined, string}
        })
        .filter((c) => c.null || c.boolean || c.number || c.string || c.array || c.object)
    }
    if (isPlainObject(schema) && only('required') && Array.isArray(schema.required) && schema.required.length > 0) {
      const names = schema.required as string[]
      const out: Conj[] = []
      for (const c of d) {
        if (!c.object) continue
        for (const name of names) {
          if (c.object.required.has(name)) continue
          const props = new Map(c.object.props)
          props.set(name, {parts: [located(false, pointer)]})
          out.push({
            ...c,
            null: false,
            boolean: false,
            number: undefined,
            string: undefined,
            array: undefined,
            object: {...c.object, props},
            enum: c.enum,
          })
        }
      }
      return out
    }
    return intersectDisj(d, complementDisj(n, pointer, this.isFalse), pointer)
  }

  readonly isFalse = (x: Sub): boolean => x.parts.some((p) => p.schema === false) || this.normalizeSub(x).length === 0
}
