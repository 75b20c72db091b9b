/**
 * ECMAScript regular expressions (JSON Schema `pattern`) compiled to grammar IR over decoded
 * characters, with the search semantics JSON Schema gives them: an unanchored pattern matches any
 * string that *contains* a match, so it becomes `.* body .*` unless `^`/`$` pin an end.
 *
 * Validators disagree on some classes (ECMAScript's `\d` is ASCII, Python's and Rust's are Unicode;
 * `.` excludes different line terminators). To never accept what one of them rejects, every class
 * has a narrow reading (what all of them accept) and a wide one (what any of them accepts): a
 * positive class is compiled narrow, and a negated class is the complement of the wide reading.
 * Constructs that are not regular or not portable (backreferences, lookaround, word boundaries,
 * `\p{..}`, anchors inside the pattern) are refused by name.
 */
import {ANY_CHAR, charSet, charsOf, complement, contains, intersect, union, type CharSet} from '../charset.js'
import {alt, chars, EMPTY, NOTHING, repeat, seq, star, type Expr} from '../ir.js'
import {SchemaRefusal} from './refusal.js'

type Node =
  | {t: 'set'; narrow: CharSet; wide: CharSet}
  | {t: 'seq'; items: Node[]}
  | {t: 'alt'; items: Node[]}
  | {t: 'rep'; item: Node; min: number; max: number | undefined}
  | {t: 'start'}
  | {t: 'end'}

const range = (a: number, b: number): CharSet => charSet([[a, b]])
const DIGITS = range(0x30, 0x39)
const WORD = charSet([
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
])
const JS_SPACE = charSet([
  [9, 13],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
])
const PY_SPACE = union(
  charSet([
    [9, 13],
    [0x1c, 0x20],
    [0x85, 0x85],
    [0xa0, 0xa0],
    [0x1680, 0x1680],
    [0x2000, 0x200a],
    [0x2028, 0x2029],
    [0x202f, 0x202f],
    [0x205f, 0x205f],
    [0x3000, 0x3000],
  ]),
)
const JS_DOT = complement(charsOf('\n\r\u2028\u2029'))
const PY_DOT = complement(charsOf('\n'))

const unicodeCache = new Map<string, CharSet>()
/** The code points a Unicode-aware RegExp matches (computed once per process). */
function unicodeSet(source: string): CharSet {
  let set = unicodeCache.get(source)
  if (set) return set
  const re = new RegExp(`^${source}$`, 'u')
  const ranges: [number, number][] = []
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp === 0xd800) cp = 0xe000
    if (re.test(String.fromCodePoint(cp))) {
      const last = ranges[ranges.length - 1]
      if (last && last[1] === cp - 1) last[1] = cp
      else ranges.push([cp, cp])
    }
  }
  set = charSet(ranges)
  unicodeCache.set(source, set)
  return set
}
const wideDigits = (): CharSet => union(DIGITS, unicodeSet('\\p{Nd}'))
const wideWord = (): CharSet => union(WORD, unicodeSet('[\\p{L}\\p{N}\\p{M}\\p{Pc}\\p{Alphabetic}\\u200c\\u200d]'))

function classEscape(c: string): {narrow: CharSet; wide: CharSet} | undefined {
  switch (c) {
    case 'd':
      return {
        narrow: DIGITS,
        get wide() {
          return wideDigits()
        },
      }
    case 'D':
      return {
        get narrow() {
          return complement(wideDigits())
        },
        wide: complement(DIGITS),
      }
    case 'w':
      return {
        narrow: WORD,
        get wide() {
          return wideWord()
        },
      }
    case 'W':
      return {
        get narrow() {
          return complement(wideWord())
        },
        wide: complement(WORD),
      }
    case 's':
      return {narrow: intersect(JS_SPACE, PY_SPACE), wide: union(JS_SPACE, PY_SPACE)}
    case 'S':
      return {narrow: complement(union(JS_SPACE, PY_SPACE)), wide: complement(intersect(JS_SPACE, PY_SPACE))}
  }
  return undefined
}

const single = (cp: number): Node => ({t: 'set', narrow: range(cp, cp), wide: range(cp, cp)})
const SYNTAX = '^$\\.*+?()[]{}|/-'

class Parser {
  private i = 0
  private readonly cps: number[]
  constructor(
    source: string,
    private readonly pointer: string,
  ) {
    this.cps = [...source].map((c) => c.codePointAt(0)!)
  }
  private refuse(why: string): never {
    throw new SchemaRefusal('pattern', this.pointer, why)
  }
  private peek(k = 0): string | undefined {
    const cp = this.cps[this.i + k]
    return cp === undefined ? undefined : String.fromCodePoint(cp)
  }
  private next(): string {
    const c = this.peek()
    if (c === undefined) this.refuse('unexpected end of pattern')
    this.i++
    return c
  }

  parse(): Node {
    const node = this.alt()
    if (this.i < this.cps.length) this.refuse(`unexpected '${this.peek()}'`)
    return node
  }

  private alt(): Node {
    const items = [this.seq()]
    while (this.peek() === '|') {
      this.i++
      items.push(this.seq())
    }
    return items.length === 1 ? items[0]! : {t: 'alt', items}
  }

  private seq(): Node {
    const items: Node[] = []
    for (let c = this.peek(); c !== undefined && c !== '|' && c !== ')'; c = this.peek()) {
      const atom = this.atom()
      items.push(this.quantified(atom))
    }
    return items.length === 1 ? items[0]! : {t: 'seq', items}
  }

  private quantified(atom: Node): Node {
    let q: [number, number | undefined] | undefined
    const c = this.peek()
    if (c === '*') q = [0, undefined]
    else if (c === '+') q = [1, undefined]
    else if (c === '?') q = [0, 1]
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(String.fromCodePoint(...this.cps.slice(this.i, this.i + 24)))
      if (m) {
        q = [Number(m[1]), m[2] === undefined ? Number(m[1]) : m[3] === '' ? undefined : Number(m[3])]
        this.i += m[0].length - 1
      }
    }
    if (!q) return atom
    this.i++
    if (this.peek() === '?') this.i++ // lazy: same language
    if (atom.t === 'start' || atom.t === 'end') this.refuse('a quantified anchor')
    if (q[1] !== undefined && q[0] > q[1]) this.refuse('a quantifier {n,m} with n > m')
    if (q[0] > 100000 || (q[1] ?? 0) > 100000) this.refuse('a quantifier over 100000')
    return {t: 'rep', item: atom, min: q[0], max: q[1]}
  }

  private atom(): Node {
    const c = this.next()
    switch (c) {
      case '^':
        return {t: 'start'}
      case '$':
        return {t: 'end'}
      case '.':
        return {t: 'set', narrow: JS_DOT, wide: PY_DOT}
      case '(': {
        if (this.peek() === '?') {
          const two = (this.peek(1) ?? '') + (this.peek(2) ?? '')
          if (this.peek(1) === ':') this.i += 2
          else if (this.peek(1) === '=' || this.peek(1) === '!' || two === '<=' || two === '<!') this.refuse('lookaround')
          else if (this.peek(1) === '<') {
            const end = this.cps.indexOf(0x3e, this.i)
            if (end < 0) this.refuse('an unterminated group name')
            this.i = end + 1
          } else this.refuse('a group modifier (?...)')
        }
        const inner = this.alt()
        if (this.next() !== ')') this.refuse('an unbalanced group')
        return inner.t === 'seq' || inner.t === 'alt' ? inner : {t: 'seq', items: [inner]}
      }
      case '[':
        return this.charClass()
      case '\\':
        return this.escape(false)
      case '*':
      case '+':
      case '?':
        return this.refuse(`a quantifier '${c}' with nothing to repeat`)
      case '{':
        if (/^[\d,]/.test(this.peek() ?? '')) this.refuse("a '{' that looks like a broken quantifier")
        return single(0x7b)
      case ')':
        return this.refuse("an unbalanced ')'")
      default:
        return single(c.codePointAt(0)!)
    }
  }

  private hex(n: number): number {
    let s = ''
    for (let k = 0; k < n; k++) s += this.next()
    if (!/^[0-9a-fA-F]+$/.test(s)) this.refuse(`a bad hex escape '${s}'`)
    return parseInt(s, 16)
  }

  /** After a backslash. `inClass`: `\b` is backspace there, and `-` is literal. */
  private escape(inClass: boolean): Node {
    const c = this.next()
    const cls = classEscape(c)
    if (cls) return {t: 'set', narrow: cls.narrow, wide: cls.wide}
    switch (c) {
      case 't':
        return single(9)
      case 'n':
        return single(10)
      case 'v':
        return single(11)
      case 'f':
        return single(12)
      case 'r':
        return single(13)
      case 'b':
        if (inClass) return single(8)
        return this.refuse('a word boundary \\b')
      case 'B':
        return this.refuse('a word boundary \\B')
      case '0':
        if (/^\d/.test(this.peek() ?? '')) this.refuse('an octal escape')
        return single(0)
      case 'x':
        return single(this.hex(2))
      case 'u': {
        if (this.peek() === '{') this.refuse('a \\u{...} escape (Unicode mode only)')
        const cp = this.hex(4)
        if (cp >= 0xd800 && cp <= 0xdbff && this.peek() === '\\' && this.peek(1) === 'u') {
          const save = this.i
          this.i += 2
          const lo = this.hex(4)
          if (lo >= 0xdc00 && lo <= 0xdfff) return single(0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00))
          this.i = save
        }
        if (cp >= 0xd800 && cp <= 0xdfff) this.refuse('a lone surrogate escape')
        return single(cp)
      }
      case 'c': {
        const l = this.next()
        if (!/^[A-Za-z]$/.test(l)) this.refuse('a bad \\c escape')
        return single(l.codePointAt(0)! % 32)
      }
      case 'k':
        return this.refuse('a named backreference')
      case 'p':
      case 'P':
        return this.refuse('a Unicode property escape')
    }
    if (/^[1-9]$/.test(c)) this.refuse('a backreference')
    if (SYNTAX.includes(c) || (inClass && c === '-')) return single(c.codePointAt(0)!)
    if (!/^[A-Za-z0-9]$/.test(c)) return single(c.codePointAt(0)!)
    return this.refuse(`an escape \\${c} whose meaning differs between regex dialects`)
  }

  private charClass(): Node {
    let negate = false
    if (this.peek() === '^') {
      negate = true
      this.i++
    }
    if (this.peek() === ']') this.refuse('an empty class [] (read differently by regex dialects)')
    let narrow: CharSet = []
    let wide: CharSet = []
    const item = (): Node => {
      const c = this.next()
      if (c === '\\') return this.escape(true)
      if (c === '[' && (this.peek() === ':' || this.peek() === '=' || this.peek() === '.')) this.refuse('a POSIX class')
      return single(c.codePointAt(0)!)
    }
    const point = (n: Node): number | undefined =>
      n.t === 'set' && n.narrow.length === 1 && n.narrow[0]![0] === n.narrow[0]![1] && n.wide.length === 1 ? n.narrow[0]![0] : undefined
    while (this.peek() !== ']') {
      if (this.peek() === undefined) this.refuse('an unterminated class')
      const a = item() as {t: 'set'; narrow: CharSet; wide: CharSet}
      let set = a
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.i++
        const b = item() as {t: 'set'; narrow: CharSet; wide: CharSet}
        const lo = point(a)
        const hi = point(b)
        if (lo === undefined || hi === undefined) this.refuse('a class range with a class escape at an end')
        if (lo > hi) this.refuse('a class range out of order')
        set = {t: 'set', narrow: range(lo, hi), wide: range(lo, hi)}
      }
      narrow = union(narrow, set.narrow)
      wide = union(wide, set.wide)
    }
    this.i++
    return negate ? {t: 'set', narrow: complement(wide), wide: complement(narrow)} : {t: 'set', narrow, wide}
  }
}

const hasAnchor = (n: Node): boolean =>
  n.t === 'start' || n.t === 'end' || ((n.t === 'seq' || n.t === 'alt') && n.items.some(hasAnchor)) || (n.t === 'rep' && hasAnchor(n.item))

/** Flat branches (lists of items) with every alternation that holds an anchor distributed out. */
function branches(n: Node, pointer: string): Node[][] {
  if (n.t === 'alt') return n.items.flatMap((i) => branches(i, pointer))
  if (n.t !== 'seq') return [[n]]
  let out: Node[][] = [[]]
  for (const item of n.items) {
    const parts = hasAnchor(item) && (item.t === 'seq' || item.t === 'alt') ? branches(item, pointer) : [[item]]
    out = out.flatMap((prefix) => parts.map((p) => [...prefix, ...p]))
    if (out.length > 64) throw new SchemaRefusal('pattern', pointer, 'too many anchored alternatives')
  }
  return out
}

function toIR(n: Node, pointer: string, wide: boolean): Expr {
  switch (n.t) {
    case 'set': {
      const set = wide ? n.wide : n.narrow
      return set.length === 0 ? NOTHING : chars(set)
    }
    case 'seq':
      return seq(...n.items.map((i) => toIR(i, pointer, wide)))
    case 'alt':
      return alt(...n.items.map((i) => toIR(i, pointer, wide)))
    case 'rep':
      return repeat(toIR(n.item, pointer, wide), n.min, n.max)
    default:
      throw new SchemaRefusal('pattern', pointer, 'an anchor inside the pattern')
  }
}

/**
 * The language of strings `source` matches somewhere in (JSON Schema's `pattern`), over decoded
 * code points. `wide`: the strings some dialect matches (Python's `$` also matches before a final
 * newline); otherwise the strings every dialect matches.
 */
export function compilePattern(source: string, pointer: string, wide = false): Expr {
  const ast = new Parser(source, pointer).parse()
  const any = star(chars(ANY_CHAR))
  const alts = branches(ast, pointer).map((items) => {
    let a = 0
    let b = items.length
    let anchoredStart = false
    let anchoredEnd = false
    while (a < b && items[a]!.t === 'start') {
      a++
      anchoredStart = true
    }
    while (b > a && items[b - 1]!.t === 'end') {
      b--
      anchoredEnd = true
    }
    const body = items.slice(a, b).map((i) => toIR(i, pointer, wide))
    return seq(anchoredStart ? EMPTY : any, ...body, anchoredEnd ? (wide ? repeat(chars(charsOf('\n')), 0, 1) : EMPTY) : any)
  })
  return alt(...alts)
}

/** Shortest and longest string lengths (code points) of a regular expression (no refs). */
export function lengthRange(e: Expr): [number, number | undefined] {
  switch (e.kind) {
    case 'chars':
      return [1, 1]
    case 'literal':
      return [[...e.text].length, [...e.text].length]
    case 'seq':
      return e.items
        .map(lengthRange)
        .reduce<[number, number | undefined]>(([a, b], [c, d]) => [a + c, b === undefined || d === undefined ? undefined : b + d], [0, 0])
    case 'alt': {
      if (e.items.length === 0) return [0, 0]
      const rs = e.items.map(lengthRange)
      return [Math.min(...rs.map((r) => r[0])), rs.some((r) => r[1] === undefined) ? undefined : Math.max(...rs.map((r) => r[1]!))]
    }
    case 'repeat': {
      const [a, b] = lengthRange(e.item)
      return [a * e.min, e.max === undefined ? (b === 0 ? 0 : undefined) : b === undefined ? (e.max === 0 ? 0 : undefined) : b * e.max]
    }
    case 'ref':
      throw new Error('lengthRange over a rule reference')
  }
}

/**
 * The strings of `e` whose length lies in min..max, when that is expressible by adjusting one
 * repetition (the common `^[a-z]+$` with `maxLength`); undefined when it is not.
 */
export function foldLength(e: Expr, min: number, max: number | undefined): Expr | undefined {
  const [a, b] = lengthRange(e)
  if (a >= min && (max === undefined || (b !== undefined && b <= max))) return e
  if (max !== undefined && a > max) return NOTHING
  if (b !== undefined && b < min) return NOTHING
  switch (e.kind) {
    case 'alt': {
      const parts = e.items.map((i) => foldLength(i, min, max))
      return parts.every((p) => p !== undefined) ? alt(...(parts as Expr[])) : undefined
    }
    case 'seq': {
      const ranges = e.items.map(lengthRange)
      const variable = ranges.map((r, i) => (r[0] === r[1] ? -1 : i)).filter((i) => i >= 0)
      if (variable.length !== 1) return undefined
      const v = variable[0]!
      const fixed = ranges.reduce((s, r, i) => (i === v ? s : s + r[0]), 0)
      const inner = foldLength(e.items[v]!, Math.max(0, min - fixed), max === undefined ? undefined : max - fixed)
      if (!inner) return undefined
      return seq(...e.items.map((it, i) => (i === v ? inner : it)))
    }
    case 'repeat': {
      const [l, h] = lengthRange(e.item)
      if (l !== h || l === 0) return undefined
      const lo = Math.max(e.min, Math.ceil(min / l))
      const hi = max === undefined ? e.max : Math.min(e.max ?? Infinity, Math.floor(max / l))
      return hi !== undefined && lo > hi ? NOTHING : repeat(e.item, lo, hi)
    }
    default:
      return undefined
  }
}

/** Does `text` (whole) belong to the regular expression `e` (no refs)? For filtering enum values. */
export function matchesRegular(e: Expr, text: string): boolean {
  const cps = [...text].map((c) => c.codePointAt(0)!)
  const ends = (x: Expr, from: Set<number>): Set<number> => {
    const out = new Set<number>()
    switch (x.kind) {
      case 'chars':
        for (const p of from) if (p < cps.length && contains(x.set, cps[p]!)) out.add(p + 1)
        return out
      case 'literal': {
        const l = [...x.text].map((c) => c.codePointAt(0)!)
        for (const p of from) if (l.every((c, k) => cps[p + k] === c)) out.add(p + l.length)
        return out
      }
      case 'seq':
        return x.items.reduce((s, i) => ends(i, s), from)
      case 'alt':
        for (const i of x.items) for (const p of ends(i, from)) out.add(p)
        return out
      case 'repeat': {
        let cur = from
        for (let k = 0; k < x.min && cur.size > 0; k++) cur = ends(x.item, cur)
        const seen = new Set(cur)
        for (let k = x.min; (x.max === undefined || k < x.max) && cur.size > 0; k++) {
          const nxt = new Set<number>()
          for (const p of ends(x.item, cur))
            if (!seen.has(p)) {
              seen.add(p)
              nxt.add(p)
            }
          cur = nxt
        }
        return seen
      }
      case 'ref':
        throw new Error('matchesRegular over a rule reference')
    }
  }
  return ends(e, new Set([0])).has(cps.length)
}

const patternCache = new Map<string, Expr>()
/** `compilePattern`, cached by source (patterns recur across properties and schemas). */
export function cachedPattern(source: string, pointer: string, wide = false): Expr {
  const key = (wide ? 'w:' : 'n:') + source
  let e = patternCache.get(key)
  if (!e) {
    e = compilePattern(source, pointer, wide)
    patternCache.set(key, e)
  }
  return e
}

/**
 * Does `text` contain a match of `source`, in every dialect? The narrow IR answers; where the host's
 * own RegExp disagrees, dialects disagree on this very string, and the schema's meaning is unclear.
 */
export function patternMatches(source: string, pointer: string, text: string): boolean {
  const narrow = matchesRegular(cachedPattern(source, pointer), text)
  if (narrow !== matchesRegular(cachedPattern(source, pointer, true), text))
    throw new SchemaRefusal('pattern', pointer, `regex dialects disagree on ${JSON.stringify(text)}`)
  let js: boolean | undefined
  try {
    js = new RegExp(source, 'u').test(text)
  } catch {
    js = undefined
  }
  if (js !== undefined && js !== narrow) throw new SchemaRefusal('pattern', pointer, `regex dialects disagree on ${JSON.stringify(text)}`)
  return narrow
}
