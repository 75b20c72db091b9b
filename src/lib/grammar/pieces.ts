/**
 * A grammar written as a sequence of pieces: literal text, JSON values valid against a schema, free
 * text in which a marker never occurs, choices and repeats. Tool calls are this shape (a wrapper of
 * literal text around each function's arguments, whose schema is the function's), so the servers
 * describe a call syntax as data (src/lib/tools) and this one front end compiles it. The spec is
 * JSON, so a constraint made of pieces hashes and replays like any other source.
 */
import {ANY_CHAR, charsOf, complement} from './charset.js'
import {grammarRefused} from './constraint.js'
import type {Expr, Grammar} from './ir.js'
import {alt, chars, EMPTY, lit, NOTHING, ref, repeat, seq} from './ir.js'
import {compileJsonSchema, type JsonSchemaOptions, SchemaRefusal} from './json-schema/index.js'

export type Piece =
  | {readonly literal: string}
  /** A JSON value the schema validates (what the JSON Schema front end accepts, nothing more). */
  | {readonly schema: unknown; readonly at?: string; readonly options?: JsonSchemaOptions}
  | {readonly oneOf: readonly (readonly Piece[])[]}
  | {readonly repeat: readonly Piece[]; readonly min: number; readonly max?: number; readonly separator?: string}
  /** Any text (possibly empty) in which `marker` does not occur. */
  | {readonly textWithout: string}
  /** Any text that does not begin with one of these characters (possibly empty). */
  | {readonly textNotStartingWith: string}

export interface PiecesSpec {
  readonly pieces: readonly Piece[]
}

/** Rename every rule of a compiled schema under `prefix`, so several schemas share one grammar. */
function renamed(expr: Expr, prefix: string): Expr {
  switch (expr.kind) {
    case 'ref':
      return ref(prefix + expr.name)
    case 'seq':
    case 'alt':
      return {kind: expr.kind, items: expr.items.map((e) => renamed(e, prefix))}
    case 'repeat':
      return {...expr, item: renamed(expr.item, prefix)}
    default:
      return expr
  }
}

/**
 * Strings without `marker`: the states of a matcher of the marker (how much of it the text ends
 * with), each a rule; a transition that would complete the marker is absent, and every state may end.
 */
function textWithout(marker: string, rules: Map<string, Expr>, name: string): Expr {
  const m = [...marker]
  const distinct = [...new Set(m)]
  const others = complement(charsOf(distinct.join('')))
  // The longest suffix of `matched + c` that is a prefix of the marker.
  const next = (state: number, c: string): number => {
    const text = [...m.slice(0, state), c]
    for (let k = Math.min(text.length, m.length); k > 0; k--) {
      if (text.slice(text.length - k).join('') === m.slice(0, k).join('')) return k
    }
    return 0
  }
  for (let state = 0; state < m.length; state++) {
    const moves: Expr[] = [EMPTY, seq(chars(others), ref(`${name}/0`))]
    for (const c of distinct) {
      const to = next(state, c)
      if (to < m.length) moves.push(seq(lit(c), ref(`${name}/${to}`)))
    }
    rules.set(`${name}/${state}`, alt(...moves))
  }
  return ref(`${name}/0`)
}

/** Compile a pieces spec to a grammar; a schema the JSON Schema front end refuses is refused naming where it came from. */
export function piecesGrammar(spec: PiecesSpec): Grammar {
  const rules = new Map<string, Expr>()
  let counter = 0
  const build = (pieces: readonly Piece[]): Expr => seq(...pieces.map(one))
  const one = (p: Piece): Expr => {
    const k = counter++
    if ('literal' in p) return p.literal.length === 0 ? EMPTY : lit(p.literal)
    if ('schema' in p) {
      let g: Grammar
      try {
        g = compileJsonSchema(p.schema, p.options)
      } catch (error) {
        if (error instanceof SchemaRefusal) throw grammarRefused(p.at ?? 'the JSON schema', error.message)
        throw error
      }
      const prefix = `p${k}:`
      for (const [name, expr] of g.rules) rules.set(prefix + name, renamed(expr, prefix))
      return ref(prefix + g.start)
    }
    if ('oneOf' in p) return p.oneOf.length === 0 ? NOTHING : alt(...p.oneOf.map(build))
    if ('repeat' in p) {
      const item = build(p.repeat)
      const sep = p.separator ? lit(p.separator) : EMPTY
      if (p.max === 0) return EMPTY
      // item (sep item){min-1, max-1}, optional as a whole when min is 0.
      const rest = repeat(seq(sep, item), Math.max(0, p.min - 1), p.max === undefined ? undefined : p.max - 1)
      const some = seq(item, rest)
      return p.min === 0 ? alt(EMPTY, some) : some
    }
    if ('textWithout' in p) return textWithout(p.textWithout, rules, `t${k}`)
    const first = complement(charsOf(p.textNotStartingWith))
    return alt(EMPTY, seq(chars(first), repeat(chars(ANY_CHAR), 0, undefined)))
  }
  rules.set('root', build(spec.pieces))
  return {rules, start: 'root'}
}
