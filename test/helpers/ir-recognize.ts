/**
 * A second, deliberately simple recognizer for the grammar IR (src/lib/grammar/ir.ts): an Earley
 * parser over code points, written without the native matcher's data structures, for tests of the
 * front ends (JSON Schema, GBNF) that must not depend on the matcher they will feed, and as a
 * differential check of that matcher. Slow on purpose-less long inputs; fine for test documents.
 */
import {contains, type CharSet} from '../../src/lib/grammar/charset.js'
import type {Expr, Grammar} from '../../src/lib/grammar/ir.js'

type Sym = {t: CharSet} | {n: number}
interface Prod {
  lhs: number
  rhs: Sym[]
}

class Normalizer {
  readonly prods: Prod[] = []
  private readonly ruleIds = new Map<string, number>()
  private next = 0
  constructor(private readonly grammar: Grammar) {}

  rule(name: string): number {
    let id = this.ruleIds.get(name)
    if (id !== undefined) return id
    const expr = this.grammar.rules.get(name)
    if (!expr) throw new Error(`unknown rule ${name}`)
    id = this.fresh()
    this.ruleIds.set(name, id)
    this.prods.push({lhs: id, rhs: [this.sym(expr)]})
    return id
  }

  private fresh(): number {
    return this.next++
  }

  private nt(alternatives: Sym[][]): Sym {
    const id = this.fresh()
    for (const rhs of alternatives) this.prods.push({lhs: id, rhs})
    return {n: id}
  }

  sym(e: Expr): Sym {
    switch (e.kind) {
      case 'chars':
        return {t: e.set}
      case 'literal':
        return this.nt([[...e.text].map((c) => ({t: [[c.codePointAt(0)!, c.codePointAt(0)!] as const]}))])
      case 'seq':
        return this.nt([e.items.map((i) => this.sym(i))])
      case 'alt':
        return this.nt(e.items.map((i) => [this.sym(i)]))
      case 'ref':
        return {n: this.rule(e.name)}
      case 'repeat': {
        const x = this.sym(e.item)
        let tail: Sym
        if (e.max === undefined) {
          const id = this.fresh()
          this.prods.push({lhs: id, rhs: [x, {n: id}]}, {lhs: id, rhs: []})
          tail = {n: id}
        } else {
          tail = this.nt([[]])
          for (let k = 0; k < e.max - e.min; k++) tail = this.nt([[], [x, tail]])
        }
        return this.nt([[...Array.from({length: e.min}, () => x), tail]])
      }
    }
  }
}

/** Does `text` (whole) belong to the grammar's language? */
export function recognizes(grammar: Grammar, text: string): boolean {
  return prefixState(grammar, text).complete
}

/** Is `text` a prefix of some sentence (viable), and is it a sentence itself (complete)? */
export function prefixState(grammar: Grammar, text: string): {viable: boolean; complete: boolean} {
  const norm = new Normalizer(grammar)
  const start = norm.rule(grammar.start)
  const prods = norm.prods
  const byLhs = new Map<number, number[]>()
  prods.forEach((p, i) => byLhs.set(p.lhs, [...(byLhs.get(p.lhs) ?? []), i]))
  const nullable = new Set<number>()
  for (let changed = true; changed;) {
    changed = false
    for (const p of prods) {
      if (!nullable.has(p.lhs) && p.rhs.every((s) => 'n' in s && nullable.has(s.n))) {
        nullable.add(p.lhs)
        changed = true
      }
    }
  }
  type Item = [prod: number, dot: number, origin: number]
  const cps = [...text].map((c) => c.codePointAt(0)!)
  const sets: Item[][] = []
  const keys: Set<string>[] = []
  const add = (k: number, item: Item): void => {
    const key = item.join(',')
    if (keys[k]!.has(key)) return
    keys[k]!.add(key)
    sets[k]!.push(item)
  }
  for (let k = 0; k <= cps.length; k++) {
    sets.push([])
    keys.push(new Set())
  }
  for (const p of byLhs.get(start) ?? []) add(0, [p, 0, 0])
  for (let k = 0; k <= cps.length; k++) {
    const set = sets[k]!
    for (let i = 0; i < set.length; i++) {
      const [p, dot, origin] = set[i]!
      const rhs = prods[p]!.rhs
      if (dot === rhs.length) {
        const lhs = prods[p]!.lhs
        for (const [q, d, o] of sets[origin]!) {
          const s = prods[q]!.rhs[d]
          if (s && 'n' in s && s.n === lhs) add(k, [q, d + 1, o])
        }
        continue
      }
      const s = rhs[dot]!
      if ('n' in s) {
        for (const q of byLhs.get(s.n) ?? []) add(k, [q, 0, k])
        if (nullable.has(s.n)) add(k, [p, dot + 1, origin])
      } else if (k < cps.length && contains(s.t, cps[k]!)) {
        add(k + 1, [p, dot + 1, origin])
      }
    }
    if (set.length === 0) return {viable: false, complete: false}
  }
  const last = sets[cps.length]!
  const complete = last.some(([p, dot, origin]) => origin === 0 && prods[p]!.lhs === start && dot === prods[p]!.rhs.length)
  return {viable: last.length > 0, complete}
}
