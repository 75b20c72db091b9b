/**
 * The checks a parsed GBNF grammar must pass before it is a Grammar, as llama.cpp makes them
 * (llama_grammar_parser::parse and llama_grammar_init_impl): every referenced rule is defined, the
 * start rule exists, and no rule is left-recursive. Left recursion is refused because a matcher that
 * walks rules top-down (llama.cpp's, and ours) would expand such a rule forever without reading a
 * character. Our check is exact where llama.cpp's is an approximation: a rule counts as nullable when
 * it can derive the empty string by any route, so `a ::= b a "x"` with `b ::= [x]*` is refused too.
 * We also refuse a rule defined twice (llama.cpp silently keeps the last definition, which hides typos).
 */
import type {Expr} from '../ir.js'
import {errorAt, type ParsedGbnf} from './parser.js'

/** Can `e` match the empty string, given the rules known to be nullable? */
function nullable(e: Expr, rules: ReadonlySet<string>): boolean {
  switch (e.kind) {
    case 'chars':
      return false
    case 'literal':
      return e.text === ''
    case 'seq':
      return e.items.every((i) => nullable(i, rules))
    case 'alt':
      return e.items.some((i) => nullable(i, rules))
    case 'ref':
      return rules.has(e.name)
    case 'repeat':
      return e.min === 0 || nullable(e.item, rules)
  }
}

/** The rules `e` may enter before consuming any character. */
function leftRefs(e: Expr, nullableRules: ReadonlySet<string>, out: Set<string>): Set<string> {
  switch (e.kind) {
    case 'ref':
      out.add(e.name)
      break
    case 'seq':
      for (const item of e.items) {
        leftRefs(item, nullableRules, out)
        if (!nullable(item, nullableRules)) break
      }
      break
    case 'alt':
      for (const item of e.items) leftRefs(item, nullableRules, out)
      break
    case 'repeat':
      if (e.max !== 0) leftRefs(e.item, nullableRules, out)
      break
    default:
  }
  return out
}

function nullableRules(rules: ReadonlyMap<string, Expr>): Set<string> {
  const out = new Set<string>()
  for (let changed = true; changed;) {
    changed = false
    for (const [name, expr] of rules) {
      if (!out.has(name) && nullable(expr, out)) {
        out.add(name)
        changed = true
      }
    }
  }
  return out
}

/** A left-recursive cycle as the list of rules around it (first = last), or undefined. */
export function findLeftRecursion(rules: ReadonlyMap<string, Expr>): string[] | undefined {
  const empty = nullableRules(rules)
  const edges = new Map([...rules].map(([name, expr]) => [name, [...leftRefs(expr, empty, new Set())]]))
  const done = new Set<string>()
  const path: string[] = []
  const onPath = new Set<string>()
  const visit = (name: string): string[] | undefined => {
    if (onPath.has(name)) return [...path.slice(path.indexOf(name)), name]
    if (done.has(name)) return undefined
    path.push(name)
    onPath.add(name)
    for (const next of edges.get(name) ?? []) {
      const cycle = visit(next)
      if (cycle) return cycle
    }
    path.pop()
    onPath.delete(name)
    done.add(name)
    return undefined
  }
  for (const name of rules.keys()) {
    const cycle = visit(name)
    if (cycle) return cycle
  }
  return undefined
}

/** The rules by name, after every check; throws GrammarSyntaxError naming the offending rule. */
export function checkGbnf(text: string, parsed: ParsedGbnf, start: string): Map<string, Expr> {
  const rules = new Map<string, Expr>()
  const definedAt = new Map<string, number>()
  for (const rule of parsed.rules) {
    const first = definedAt.get(rule.name)
    if (first !== undefined) {
      const {line} = errorAt(text, first, '')
      throw errorAt(text, rule.at, `rule '${rule.name}' is defined twice (first at line ${line})`)
    }
    definedAt.set(rule.name, rule.at)
    rules.set(rule.name, rule.expr)
  }
  for (const ref of parsed.refs) {
    if (!rules.has(ref.name)) throw errorAt(text, ref.at, `undefined rule '${ref.name}'`)
  }
  if (!rules.has(start)) {
    throw errorAt(text, 0, `the grammar does not define its start rule '${start}'`)
  }
  const cycle = findLeftRecursion(rules)
  if (cycle) {
    const name = cycle[0]!
    const route = cycle.length > 2 ? ` (${cycle.join(' → ')})` : ''
    throw errorAt(text, definedAt.get(name)!, `left recursion: rule '${name}' can reach itself without consuming input${route}`)
  }
  return rules
}
