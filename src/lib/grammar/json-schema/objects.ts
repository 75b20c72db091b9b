/**
 * Object schemas. JSON objects are unordered, but a grammar accepting every order of n properties
 * needs a state per subset of them. Policy: up to ANY_ORDER_MAX (7) known properties (`properties`
 * plus `required` names not in it) are accepted in any order, each at most once; with more, they are
 * accepted in schema definition order (each optional one skippable), and a valid object written in
 * another order is rejected (a validation error, never an acceptance of an invalid one). Additional
 * properties go anywhere in the first mode (at the end under `maxProperties`), after the known ones
 * in the second. Keys are accepted in every escape spelling; an additional key can spell no known
 * name (the key language is "any string but these", built over decoded characters from a trie), so
 * no known key appears twice. Under `minProperties`, additional members count as one at most:
 * they may repeat one another's key (a grammar cannot tell), so two of them may parse as one;
 * `maxProperties` counts every member (duplicates only lower the real count). */
import {ANY_CHAR, charsOf, complement, union, type CharSet} from '../charset.js'
import {alt, EMPTY, lit, NOTHING, opt, ref, repeat, seq, star, type Expr} from '../ir.js'
import type {Context} from './context.js'
import {propSchema} from './intersect.js'
import {isTrueSub, type ObjC, type PatternProp, type Sub, subKey} from './model.js'
import {cachedPattern} from './regex.js'
import {complementDfa, type Dfa, dfaEmpty, dfaRules, finiteDfa, productDfa, toDfa, TooLarge} from './dfa.js'
import {SchemaRefusal} from './refusal.js'

/** Strings (decoded) not in `names`, as key grammar: a rule per trie node. */
const keyCache = new WeakMap<Map<string, Expr>, Map<string, Expr>>()

function keyNotIn(names: string[], ctx: Context): Expr {
  if (names.length === 0) return ctx.lex.anyString
  // objects with the same property names (common after allOf/$ref) share one key grammar
  let cache = keyCache.get(ctx.rules)
  if (!cache) keyCache.set(ctx.rules, (cache = new Map()))
  const cacheKey = JSON.stringify([...names].sort())
  const hit = cache.get(cacheKey)
  if (hit) return hit
  const made = buildKeyNotIn(names, ctx)
  cache.set(cacheKey, made)
  return made
}

function buildKeyNotIn(names: string[], ctx: Context): Expr {
  interface Node {
    end: boolean
    next: Map<number, Node>
  }
  const root: Node = {end: false, next: new Map()}
  for (const n of names) {
    let at = root
    for (const c of n) {
      const cp = c.codePointAt(0)!
      let nx = at.next.get(cp)
      if (!nx) at.next.set(cp, (nx = {end: false, next: new Map()}))
      at = nx
    }
    at.end = true
  }
  const base = ctx.fresh('key')
  const anyTail = star(ctx.lex.char(ANY_CHAR))
  let id = 0
  const build = (node: Node): Expr => {
    const name = `${base}@${id++}`
    const parts: Expr[] = node.end ? [] : [lit('"')]
    const edges: CharSet = union(...[...node.next.keys()].map((cp) => charsOf(String.fromCodePoint(cp))))
    for (const [cp, child] of node.next) parts.push(seq(ctx.lex.codePoint(cp), build(child)))
    parts.push(seq(ctx.lex.char(complement(edges)), anyTail, lit('"')))
    ctx.rules.set(name, alt(...parts))
    return ref(name)
  }
  return seq(lit('"'), build(root))
}

export function compileObject(o: ObjC, ctx: Context, _pointer: string): Expr {
  if (o.maxProps !== undefined && o.minProps > o.maxProps) return NOTHING
  const names = [...o.props.keys(), ...[...o.required].filter((k) => !o.props.has(k))]
  const ws = ctx.lex.ws
  const comma = seq(ws, lit(','), ws)
  const member = (key: Expr, value: Sub): Expr => seq(key, ws, lit(':'), ws, ctx.sub(value))
  let unsatisfiable = false
  const known = names.map((k) => {
    const s = propSchema(o, k)
    // a required property that admits no value makes this object (branch) unsatisfiable
    if (o.required.has(k) && ctx.isFalse(s)) unsatisfiable = true
    return {name: k, required: o.required.has(k), member: ctx.isFalse(s) ? undefined : member(ctx.lex.stringLiteral(k), s)}
  })
  if (unsatisfiable) return NOTHING
  const extra = additionalMember(o, names, ctx, member)
  if (known.length <= ANY_ORDER_MAX) return anyOrder(o, known, extra, ctx)
  const counting = o.minProps > 0 || o.maxProps !== undefined
  const cap = Math.max(o.minProps, (o.maxProps ?? 0) + 1)
  const base = ctx.fresh('obj')
  // state: i known properties decided, `first` (nothing written yet), c members written
  const state = (i: number, first: boolean, c: number): Expr => {
    const cc = counting ? Math.min(c, cap) : 0
    const name = `${base}@${i},${first ? 1 : 0},${cc}`
    if (ctx.rules.has(name)) return ref(name)
    ctx.rules.set(name, NOTHING)
    let body: Expr
    if (o.maxProps !== undefined && cc > o.maxProps) body = NOTHING
    else if (i < known.length) {
      const k = known[i]!
      const parts: Expr[] = []
      if (k.member) parts.push(seq(first ? EMPTY : comma, k.member, state(i + 1, false, cc + 1)))
      if (!k.required) parts.push(state(i + 1, first, cc))
      body = alt(...parts)
    } else body = closing(o, extra, first, cc, ctx)
    ctx.rules.set(name, body)
    return ref(name)
  }
  return seq(lit('{'), ws, state(0, true, 0), lit('}'))
}

/** Up to this many known properties are accepted in any order (2^n states); more, in definition order. */
export const ANY_ORDER_MAX = 7

interface Known {
  name: string
  required: boolean
  member: Expr | undefined
}

/** After the known properties: the additional ones (bounded by maxProperties), then whitespace before `}`. */
function closing(o: ObjC, extra: Expr | undefined, first: boolean, count: number, ctx: Context): Expr {
  const ws = ctx.lex.ws
  const comma = seq(ws, lit(','), ws)
  const room = o.maxProps === undefined ? undefined : o.maxProps - count
  // additional members guarantee one more distinct key however many there are (they may repeat one
  // another, never a known key): enough to make up for one missing under minProperties, no more
  const needOne = count < o.minProps
  if (count + 1 < o.minProps || (needOne && (!extra || room === 0))) return NOTHING
  if (!extra || room === 0) return first ? EMPTY : ws
  const more = (least: number): Expr => repeat(seq(comma, extra), least, room === undefined ? undefined : room - (first ? 1 : 0))
  if (first) return needOne ? seq(extra, more(0), ws) : opt(seq(extra, more(0), ws))
  return seq(repeat(seq(comma, extra), needOne ? 1 : 0, room), ws)
}

/**
 * Known properties in any order: a state per set of properties already written (each at most
 * once), additional members interleaved anywhere (or, under min/maxProperties, at the end).
 */
function anyOrder(o: ObjC, known: Known[], extra: Expr | undefined, ctx: Context): Expr {
  const ws = ctx.lex.ws
  const comma = seq(ws, lit(','), ws)
  const base = ctx.fresh('objset')
  const requiredMask = known.reduce((m, k, i) => (k.required ? m | (1 << i) : m), 0)
  const popcount = (m: number): number => (m === 0 ? 0 : (m & 1) + popcount(m >>> 1))
  const state = (mask: number, first: boolean): Expr => {
    const name = `${base}@${mask},${first ? 1 : 0}`
    if (ctx.rules.has(name)) return ref(name)
    ctx.rules.set(name, NOTHING)
    const n = popcount(mask)
    const parts: Expr[] = []
    const sep = first ? EMPTY : comma
    if (o.maxProps === undefined || n < o.maxProps)
      known.forEach((k, i) => {
        if (k.member && !(mask & (1 << i))) parts.push(seq(sep, k.member, state(mask | (1 << i), false)))
      })
    const interleave = o.maxProps === undefined && o.minProps === 0
    if (extra && interleave) parts.push(seq(sep, extra, state(mask, false)))
    if ((mask & requiredMask) === requiredMask) parts.push(interleave ? (first ? EMPTY : ws) : closing(o, extra, first, n, ctx))
    ctx.rules.set(name, alt(...parts))
    return ref(name)
  }
  return seq(lit('{'), ws, state(0, true), lit('}'))
}

/**
 * One additional member (key not a known name), or undefined when none is allowed. With
 * patternProperties: a key every regex dialect matches to a pattern takes that pattern's schema; a
 * key no dialect matches takes additionalProperties; a key the dialects disagree on is excluded.
 */
function additionalMember(o: ObjC, names: string[], ctx: Context, member: (key: Expr, value: Sub) => Expr): Expr | undefined {
  const addFalse = ctx.isFalse(o.additional)
  const same = (s: Sub): boolean => subKey(s) === subKey(o.additional) || (isTrueSub(s) && isTrueSub(o.additional))
  if (o.patterns.length === 0 || (!addFalse && o.patterns.every((p) => same(p.sub)))) {
    return addFalse ? undefined : member(keyNotIn(names, ctx), o.additional)
  }
  const p0 = o.patterns[0]!
  try {
    // patterns with the same schema are one pattern; different schemas must not share a key
    const groups = new Map<string, PatternProp[]>()
    for (const p of o.patterns) groups.set(subKey(p.sub), [...(groups.get(subKey(p.sub)) ?? []), p])
    const lang = (ps: PatternProp[], wide: boolean): Dfa => toDfa(alt(...ps.map((p) => cachedPattern(p.source, p.pointer, wide))))
    const list = [...groups.values()]
    const wides = list.map((g) => lang(g, true))
    for (let i = 0; i < list.length; i++)
      for (let j = i + 1; j < list.length; j++)
        if (!dfaEmpty(productDfa(wides[i]!, wides[j]!, 'and')))
          throw new SchemaRefusal('patternProperties', list[j]![0]!.pointer, 'patterns with different schemas may match the same key')
    const known = finiteDfa(names)
    const quote = lit('"')
    const key = (d: Dfa): Expr =>
      seq(
        quote,
        dfaRules(productDfa(d, known, 'minus'), ctx.fresh('pkey'), ctx.rules, (set) => ctx.lex.char(set), quote),
      )
    const members = list.map((g) => member(key(lang(g, false)), g[0]!.sub))
    if (!addFalse) {
      const anyWide = toDfa(alt(...o.patterns.map((p) => cachedPattern(p.source, p.pointer, true))))
      members.push(member(key(complementDfa(anyWide)), o.additional))
    }
    return alt(...members)
  } catch (e) {
    if (e instanceof TooLarge) throw new SchemaRefusal('patternProperties', p0.pointer, 'the key automaton is too large')
    throw e
  }
}
