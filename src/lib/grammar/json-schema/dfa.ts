/**
 * Deterministic automata over code points, built from the regular part of the IR (what
 * ./regex.ts produces): what patterns need beyond alternation and repetition. Complement ("a key
 * that matches no patternProperties pattern", `not: {pattern}`), intersection (two patterns on one
 * string) and difference with a finite set (a pattern key that is not a known property name) are
 * exact on DFAs, and a DFA becomes a right-linear grammar: one rule per state, each consuming a
 * character before the next rule, so never left recursive. Sizes are capped; past the cap the
 * caller refuses.
 */
import {ANY_CHAR, complement, contains, intersect, type CharSet, charSet, isEmpty} from '../charset.js'
import {alt, EMPTY, ref, seq, type Expr} from '../ir.js'

export interface Dfa {
  /** transitions[state]: disjoint (set, target) pairs */
  readonly transitions: readonly (readonly [CharSet, number])[][]
  readonly accepting: readonly boolean[]
}

export class TooLarge extends Error {}
const MAX_NFA = 20000
const MAX_DFA = 4000

interface Nfa {
  eps: number[][]
  edges: [CharSet, number][][]
}

function buildNfa(e: Expr): {nfa: Nfa; start: number; end: number} {
  const nfa: Nfa = {eps: [], edges: []}
  const state = (): number => {
    if (nfa.eps.length > MAX_NFA) throw new TooLarge('automaton too large')
    nfa.eps.push([])
    nfa.edges.push([])
    return nfa.eps.length - 1
  }
  // a fragment from s to a fresh end state
  const frag = (x: Expr, s: number): number => {
    switch (x.kind) {
      case 'chars': {
        const t = state()
        if (x.set.length > 0) nfa.edges[s]!.push([x.set, t])
        return t
      }
      case 'literal': {
        let at = s
        for (const c of x.text) {
          const t = state()
          const cp = c.codePointAt(0)!
          nfa.edges[at]!.push([[[cp, cp]], t])
          at = t
        }
        return at
      }
      case 'seq':
        return x.items.reduce((at, i) => frag(i, at), s)
      case 'alt': {
        const t = state()
        for (const i of x.items) {
          const a = state()
          nfa.eps[s]!.push(a)
          nfa.eps[frag(i, a)]!.push(t)
        }
        return t
      }
      case 'repeat': {
        let at = s
        for (let k = 0; k < x.min; k++) at = frag(x.item, at)
        if (x.max === undefined) {
          const loop = state()
          nfa.eps[at]!.push(loop)
          const back = frag(x.item, loop)
          nfa.eps[back]!.push(loop)
          return loop
        }
        const t = state()
        for (let k = x.min; k < x.max; k++) {
          nfa.eps[at]!.push(t)
          at = frag(x.item, at)
        }
        nfa.eps[at]!.push(t)
        return t
      }
      case 'ref':
        throw new Error('automaton over a rule reference')
    }
  }
  const start = state()
  const end = frag(e, start)
  return {nfa, start, end}
}

/** Split the code points by which of `sets` they belong to: the classes a subset's moves partition into. */
function partition(moves: [CharSet, number][]): [CharSet, number[]][] {
  const cuts = new Set<number>([0, 0x110000])
  for (const [set] of moves) for (const [lo, hi] of set) cuts.add(lo).add(hi + 1)
  const points = [...cuts].sort((a, b) => a - b)
  const byTarget = new Map<string, [number, number][]>()
  const targetsOf = new Map<string, number[]>()
  for (let i = 0; i + 1 < points.length; i++) {
    const lo = points[i]!
    const hi = points[i + 1]! - 1
    const ts = [
      ...new Set(moves.filter(([set]) => contains(set, lo) || (lo >= 0xd800 && lo <= 0xdfff && contains(set, hi))).map(([, t]) => t)),
    ].sort((a, b) => a - b)
    if (ts.length === 0) continue
    const key = ts.join(',')
    if (!byTarget.has(key)) {
      byTarget.set(key, [])
      targetsOf.set(key, ts)
    }
    byTarget.get(key)!.push([lo, hi])
  }
  return [...byTarget].map(([k, ranges]) => [charSet(ranges), targetsOf.get(k)!])
}

export function toDfa(e: Expr): Dfa {
  const {nfa, start, end} = buildNfa(e)
  const closure = (states: number[]): number[] => {
    const seen = new Set(states)
    const stack = [...states]
    while (stack.length > 0)
      for (const t of nfa.eps[stack.pop()!]!)
        if (!seen.has(t)) {
          seen.add(t)
          stack.push(t)
        }
    return [...seen].sort((a, b) => a - b)
  }
  const ids = new Map<string, number>()
  const sets: number[][] = []
  const transitions: [CharSet, number][][] = []
  const accepting: boolean[] = []
  const id = (states: number[]): number => {
    const key = states.join(',')
    let n = ids.get(key)
    if (n === undefined) {
      if (sets.length >= MAX_DFA) throw new TooLarge('automaton too large')
      n = sets.length
      ids.set(key, n)
      sets.push(states)
      transitions.push([])
      accepting.push(states.includes(end))
    }
    return n
  }
  id(closure([start]))
  for (let i = 0; i < sets.length; i++) {
    const moves = sets[i]!.flatMap((s) => nfa.edges[s]!)
    for (const [set, targets] of partition(moves)) transitions[i]!.push([set, id(closure(targets))])
  }
  return {transitions, accepting}
}

/** The same language's complement (over all strings). */
export function complementDfa(d: Dfa): Dfa {
  const n = d.transitions.length
  const transitions = d.transitions.map((ts) => {
    const covered = ts.reduce<CharSet>((acc, [s]) => [...acc, ...s], [])
    const rest = complement(charSet(covered))
    return isEmpty(rest) ? [...ts] : [...ts, [rest, n] as [CharSet, number]]
  })
  transitions.push([[ANY_CHAR, n]])
  return {transitions, accepting: [...d.accepting.map((a) => !a), true]}
}

/** Strings in both (accept = both) or in `a` but not `b` (accept = a and not b). */
export function productDfa(a: Dfa, b: Dfa, mode: 'and' | 'minus'): Dfa {
  const bt = complementDfa(b) // total, so every move of `a` has a partner; its last state is the dead one
  const bAccept = (s: number): boolean => s < b.accepting.length && b.accepting[s]!
  const ids = new Map<string, number>()
  const pairs: [number, number][] = []
  const transitions: [CharSet, number][][] = []
  const accepting: boolean[] = []
  const id = (x: number, y: number): number => {
    const key = `${x},${y}`
    let n = ids.get(key)
    if (n === undefined) {
      if (pairs.length >= MAX_DFA) throw new TooLarge('automaton too large')
      n = pairs.length
      ids.set(key, n)
      pairs.push([x, y])
      transitions.push([])
      accepting.push(a.accepting[x]! && (mode === 'and' ? bAccept(y) : !bAccept(y)))
    }
    return n
  }
  id(0, 0)
  for (let i = 0; i < pairs.length; i++) {
    const [x, y] = pairs[i]!
    for (const [s1, t1] of a.transitions[x]!)
      for (const [s2, t2] of bt.transitions[y]!) {
        const s = intersect(s1, s2)
        if (!isEmpty(s)) transitions[i]!.push([s, id(t1, t2)])
      }
  }
  return {transitions, accepting}
}

/** A DFA for exactly the given strings (a trie). */
export function finiteDfa(words: string[]): Dfa {
  const transitions: [CharSet, number][][] = [[]]
  const accepting = [false]
  for (const w of words) {
    let at = 0
    for (const c of w) {
      const cp = c.codePointAt(0)!
      let next = transitions[at]!.find(([s]) => contains(s, cp))?.[1]
      if (next === undefined) {
        next = transitions.length
        transitions.push([])
        accepting.push(false)
        transitions[at]!.push([[[cp, cp]], next])
      }
      at = next
    }
    accepting[at] = true
  }
  return {transitions, accepting}
}

/** Can the automaton accept anything? */
export function dfaEmpty(d: Dfa): boolean {
  const seen = new Set([0])
  const stack = [0]
  while (stack.length > 0) {
    const s = stack.pop()!
    if (d.accepting[s]) return false
    for (const [, t] of d.transitions[s]!)
      if (!seen.has(t)) {
        seen.add(t)
        stack.push(t)
      }
  }
  return true
}

/**
 * The DFA as grammar rules named `${base}@state`, each character through `char` (the lexicon's
 * escaped spellings), the accepting states followed by `end`. Returns the start reference.
 */
export function dfaRules(d: Dfa, base: string, rules: Map<string, Expr>, char: (s: CharSet) => Expr, end: Expr = EMPTY): Expr {
  // states that cannot reach acceptance are dropped
  const live = new Set<number>()
  for (let changed = true; changed;) {
    changed = false
    d.transitions.forEach((ts, s) => {
      if (!live.has(s) && (d.accepting[s] || ts.some(([, t]) => live.has(t)))) {
        live.add(s)
        changed = true
      }
    })
  }
  const name = (s: number): string => `${base}@${s}`
  for (const s of live) {
    const parts: Expr[] = d.accepting[s] ? [end] : []
    for (const [set, t] of d.transitions[s]!) if (live.has(t)) parts.push(seq(char(set), ref(name(t))))
    rules.set(name(s), alt(...parts))
  }
  return live.has(0) ? ref(name(0)) : alt()
}
