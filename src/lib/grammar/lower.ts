/**
 * Lowering: grammar IR (./ir.ts) → the native matcher's program (./program.ts). Besides the
 * layout, this is where a grammar is checked for what the matcher cannot run or would run wrong:
 *  - unknown rule names;
 *  - a start rule that matches nothing (alternatives that can never complete are pruned first, so
 *    every state the matcher reaches can still finish a document — what makes its masks exact);
 *  - left recursion, also through rules that can match the empty string: a pushdown automaton
 *    would expand it forever;
 *  - a repetition of something that can be empty (its iterations could be empty forever).
 * Each refusal is a GrammarError naming the rule.
 */
import {type CharSet, charSet} from './charset.js'
import type {Expr, Grammar} from './ir.js'
import {type Elem, ElemKind, PROGRAM_HEADER, PROGRAM_MAGIC, PROGRAM_VERSION} from './program.js'

export class GrammarError extends Error {
  constructor(
    message: string,
    readonly rule?: string,
  ) {
    super(message)
    this.name = 'GrammarError'
  }
}

type Alt = Elem[]
interface Rule {
  readonly name: string
  alts: Alt[]
}

const END: Elem = {kind: ElemKind.END, a: 0, b: 0, c: 0}

class Lowering {
  readonly rules: Rule[] = []
  readonly sets: CharSet[] = []
  private readonly setIds = new Map<string, number>()
  /** The same set object (front ends share them) or code point (literals) is looked up once. */
  private readonly setObjects = new WeakMap<CharSet, number>()
  private readonly codePoints = new Map<number, number>()
  private readonly ruleIds = new Map<string, number>()
  private readonly pending: Array<[number, Expr]> = []

  constructor(private readonly grammar: Grammar) {}

  named(name: string, from?: string): number {
    const known = this.ruleIds.get(name)
    if (known !== undefined) return known
    const expr = this.grammar.rules.get(name)
    if (!expr) throw new GrammarError(`rule "${name}" is not defined${from ? ` (used in "${from}")` : ''}`, name)
    const id = this.newRule(name)
    this.ruleIds.set(name, id)
    this.pending.push([id, expr])
    return id
  }

  run(): number {
    const start = this.named(this.grammar.start)
    while (this.pending.length > 0) {
      const [id, expr] = this.pending.pop()!
      this.rules[id]!.alts = this.alternatives(expr, this.rules[id]!.name)
    }
    return start
  }

  private newRule(name: string): number {
    this.rules.push({name, alts: []})
    return this.rules.length - 1
  }

  private set(given: CharSet): number {
    const known = this.setObjects.get(given)
    if (known !== undefined) return known
    // The engine takes merged ranges without surrogates only: normalise what a front end gave.
    const set = charSet(given)
    const key = set.map(([lo, hi]) => `${lo}-${hi}`).join(',')
    let id = this.setIds.get(key)
    if (id === undefined) {
      id = this.sets.length
      this.sets.push(set)
      this.setIds.set(key, id)
    }
    this.setObjects.set(given, id)
    return id
  }

  private codePoint(cp: number, owner: string): number {
    if (cp >= 0xd800 && cp <= 0xdfff) {
      throw new GrammarError(
        `a lone surrogate (U+${cp.toString(16).toUpperCase()}) in a literal of "${owner}" has no UTF-8 spelling`,
        owner,
      )
    }
    let id = this.codePoints.get(cp)
    if (id === undefined) {
      id = this.set([[cp, cp]])
      this.codePoints.set(cp, id)
    }
    return id
  }

  /** A rule of its own for a sub-expression (alternation inside a sequence, a repeated item). */
  private sub(expr: Expr, owner: string): number {
    if (expr.kind === 'ref') return this.named(expr.name, owner)
    const id = this.newRule(`${owner}/${this.rules.length}`)
    this.rules[id]!.alts = this.alternatives(expr, owner)
    return id
  }

  private alternatives(expr: Expr, owner: string): Alt[] {
    if (expr.kind === 'alt') return expr.items.flatMap((item) => this.alternatives(item, owner))
    return [this.sequence(expr, owner)]
  }

  /** The elements of an expression that is one alternative (an inner alternation becomes a rule). */
  private sequence(expr: Expr, owner: string, out: Elem[] = []): Elem[] {
    // One output array for the whole alternative: front ends nest sequences deeply, and flattening
    // them level by level copied each tail once per level.
    switch (expr.kind) {
      case 'chars':
        out.push({kind: ElemKind.CHARS, a: this.set(expr.set), b: 0, c: 0})
        break
      case 'literal':
        for (const ch of expr.text) out.push({kind: ElemKind.CHARS, a: this.codePoint(ch.codePointAt(0)!, owner), b: 0, c: 0})
        break
      case 'seq':
        for (const item of expr.items) this.sequence(item, owner, out)
        break
      case 'alt':
        out.push({kind: ElemKind.REF, a: this.sub(expr, owner), b: 0, c: 0})
        break
      case 'ref':
        out.push({kind: ElemKind.REF, a: this.named(expr.name, owner), b: 0, c: 0})
        break
      case 'repeat': {
        const {min, max} = expr
        if (
          !Number.isInteger(min) ||
          min < 0 ||
          (max !== undefined && (!Number.isInteger(max) || max < min)) ||
          min > 2 ** 30 ||
          (max ?? 0) > 2 ** 30
        ) {
          throw new GrammarError(
            `repetition bounds {${min},${max ?? ''}} in "${owner}" must be integers with 0 <= min <= max < 2^30`,
            owner,
          )
        }
        if (max === 0) break
        if (min === 1 && max === 1) this.sequence(expr.item, owner, out)
        else out.push({kind: ElemKind.REPEAT, a: this.sub(expr.item, owner), b: min, c: max ?? -1})
        break
      }
    }
    return out
  }
}

/** Which rules can complete at all (least fixpoint); then drop the alternatives that cannot. */
function prune(rules: Rule[], sets: CharSet[]): void {
  const productive = new Array<boolean>(rules.length).fill(false)
  const elemOk = (e: Elem): boolean =>
    e.kind === ElemKind.CHARS ? sets[e.a]!.length > 0 : e.kind === ElemKind.REF ? productive[e.a]! : e.b === 0 || productive[e.a]!
  for (let changed = true; changed;) {
    changed = false
    rules.forEach((r, i) => {
      if (!productive[i] && r.alts.some((alt) => alt.every(elemOk))) productive[i] = changed = true
    })
  }
  for (const r of rules) {
    // A repetition of something that can never complete is the empty string when min is 0.
    r.alts = r.alts.filter((alt) => alt.every(elemOk)).map((alt) => alt.filter((e) => e.kind !== ElemKind.REPEAT || productive[e.a]))
  }
}

function nullableRules(rules: Rule[]): boolean[] {
  const nullable = new Array<boolean>(rules.length).fill(false)
  const elemNullable = (e: Elem): boolean =>
    e.kind === ElemKind.CHARS ? false : e.kind === ElemKind.REF ? nullable[e.a]! : e.b === 0 || nullable[e.a]!
  for (let changed = true; changed;) {
    changed = false
    rules.forEach((r, i) => {
      if (!nullable[i] && r.alts.some((alt) => alt.every(elemNullable))) nullable[i] = changed = true
    })
  }
  return nullable
}

/** Refuse left recursion (a rule reachable from its own start without consuming) and empty-able repetitions. */
function checkRecursion(rules: Rule[]): void {
  const nullable = nullableRules(rules)
  // Every repetition, not only those at the left edge of an alternative: `"x" (y*)+` repeats
  // something empty as surely as `(y*)+` does.
  for (const r of rules) {
    for (const alt of r.alts) {
      for (const e of alt) {
        if (e.kind === ElemKind.REPEAT && nullable[e.a]) {
          throw new GrammarError(`rule "${rules[e.a]!.name}" can match the empty string and is repeated in "${r.name}"`, r.name)
        }
      }
    }
  }
  const leftEdges = rules.map((r) => {
    const out = new Set<number>()
    for (const alt of r.alts) {
      for (const e of alt) {
        if (e.kind === ElemKind.CHARS) break
        out.add(e.a)
        if (!(e.kind === ElemKind.REF ? nullable[e.a] : e.b === 0 || nullable[e.a])) break
      }
    }
    return out
  })
  // Iterative DFS with colours: a grey target is a cycle.
  const colour = new Uint8Array(rules.length)
  for (let root = 0; root < rules.length; root++) {
    if (colour[root]) continue
    const stack: Array<[number, Iterator<number>]> = [[root, leftEdges[root]![Symbol.iterator]()]]
    colour[root] = 1
    while (stack.length > 0) {
      const [node, it] = stack[stack.length - 1]!
      const next = it.next()
      if (next.done) {
        colour[node] = 2
        stack.pop()
        continue
      }
      if (colour[next.value] === 1) {
        throw new GrammarError(
          `rule "${rules[next.value]!.name}" is left-recursive (it can reach itself before matching a character)`,
          rules[next.value]!.name,
        )
      }
      if (colour[next.value] === 0) {
        colour[next.value] = 1
        stack.push([next.value, leftEdges[next.value]![Symbol.iterator]()])
      }
    }
  }
}

const elemKey = (e: Elem): string => `${e.kind},${e.a},${e.b},${e.c}`

/**
 * Left-factor every rule: alternatives that begin with the same element share it, and their tails
 * become a rule of their own (recursively), so `enum: [...60,000 strings]` is a trie the matcher
 * walks with a handful of stacks, not 60,000 of them. The language is unchanged (A → x α | x β is
 * A → x A', A' → α | β), and so are what can be reached without consuming input and what is
 * nullable, so the checks above still hold.
 */
function leftFactor(rules: Rule[]): void {
  const factor = (alts: Alt[], name: string): Alt[] => {
    const groups = new Map<string, Alt[]>()
    for (const alt of alts) {
      const key = alt.length === 0 ? '' : elemKey(alt[0]!)
      const g = groups.get(key)
      if (g) g.push(alt)
      else groups.set(key, [alt])
    }
    const out: Alt[] = []
    for (const [key, group] of groups) {
      if (key === '') {
        out.push([]) // the empty alternative, once
        continue
      }
      if (group.length === 1) {
        out.push(group[0]!)
        continue
      }
      // (Identical alternatives factor down to one empty tail.)
      const id = rules.length
      rules.push({name: `${name}'`, alts: []})
      rules[id]!.alts = factor(
        group.map((alt) => alt.slice(1)),
        `${name}'`,
      )
      out.push([group[0]![0]!, {kind: ElemKind.REF, a: id, b: 0, c: 0}])
    }
    return out
  }
  const n = rules.length
  for (let r = 0; r < n; r++) if (rules[r]!.alts.length > 1) rules[r]!.alts = factor(rules[r]!.alts, rules[r]!.name)
}

export interface LoweredGrammar {
  readonly program: Int32Array
  readonly rules: number
  readonly elements: number
}

/** Check and lower a grammar to the matcher's program. Throws GrammarError. */
export function lowerGrammar(grammar: Grammar): LoweredGrammar {
  const lowering = new Lowering(grammar)
  const start = lowering.run()
  const {rules, sets} = lowering
  prune(rules, sets)
  if (rules[start]!.alts.length === 0)
    throw new GrammarError(`the grammar matches nothing: rule "${grammar.start}" can never complete`, grammar.start)
  checkRecursion(rules)
  leftFactor(rules)

  const nRanges = sets.reduce((n, s) => n + s.length, 0)
  const nAlts = rules.reduce((n, r) => n + r.alts.length, 0)
  const nElems = rules.reduce((n, r) => n + r.alts.reduce((m, a) => m + a.length + 1, 0), 0)
  const size = PROGRAM_HEADER + sets.length + 1 + 2 * nRanges + rules.length + 1 + nAlts + 4 * nElems
  if (size > 2 ** 28) throw new GrammarError(`the grammar is too large (${size} program words)`)
  const p = new Int32Array(size)
  p.set([PROGRAM_MAGIC, PROGRAM_VERSION, sets.length, nRanges, rules.length, nAlts, nElems, start])
  let o = PROGRAM_HEADER
  let r = 0
  for (const s of sets) {
    p[o++] = r
    r += s.length
  }
  p[o++] = r
  for (const s of sets) {
    for (const [lo, hi] of s) {
      p[o++] = lo
      p[o++] = hi
    }
  }
  let a = 0
  for (const rule of rules) {
    p[o++] = a
    a += rule.alts.length
  }
  p[o++] = a
  let e = 0
  for (const rule of rules) {
    for (const alt of rule.alts) {
      p[o++] = e
      e += alt.length + 1
    }
  }
  for (const rule of rules) {
    for (const alt of rule.alts) {
      for (const el of alt) {
        p[o++] = el.kind
        p[o++] = el.a
        p[o++] = el.b
        p[o++] = el.c
      }
      p[o++] = END.kind
      o += 3 // END's operands are 0
    }
  }
  return {program: p, rules: rules.length, elements: nElems}
}
