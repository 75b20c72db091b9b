/**
 * JSON's lexical layer as grammar IR: whitespace, the escaped spelling of characters inside
 * strings, and unconstrained numbers. Everything the schema compiler builds over *decoded*
 * characters (string lengths, patterns, property names) is lifted to the serialized text here, so
 * that every legal spelling of a character (raw, short escape, `\uXXXX` in either hex case, a
 * surrogate-pair escape) is accepted and nothing else is.
 */
import {charSet, complement, intersect, isEmpty, subtract, type CharSet} from '../charset.js'
import {alt, chars, EMPTY, lit, NOTHING, oneOf, opt, ref, repeat, seq, star, type Expr} from '../ir.js'

/** Characters JSON allows unescaped inside a string: all but `"`, `\` and the C0 controls. */
export const RAW_STRING_CHARS: CharSet = complement(
  charSet([
    [0, 0x1f],
    [0x22, 0x22],
    [0x5c, 0x5c],
  ]),
)
const SHORT_ESCAPES: [number, string][] = [
  [0x22, '"'],
  [0x5c, '\\'],
  [0x2f, '/'],
  [0x08, 'b'],
  [0x0c, 'f'],
  [0x0a, 'n'],
  [0x0d, 'r'],
  [0x09, 't'],
]
export const DIGIT = chars(charSet([[0x30, 0x39]]))
export const NONZERO = chars(charSet([[0x31, 0x39]]))

/** One hex digit whose value lies in lo..hi, either case. */
function hexDigit(lo: number, hi: number): Expr {
  const ranges: [number, number][] = []
  if (lo <= 9) ranges.push([0x30 + lo, 0x30 + Math.min(hi, 9)])
  if (hi >= 10) {
    const a = Math.max(lo, 10) - 10
    const b = hi - 10
    ranges.push([0x61 + a, 0x61 + b], [0x41 + a, 0x41 + b])
  }
  return chars(charSet(ranges))
}

/** `n` hex digits spelling a value in lo..hi (a digit-by-digit range construction). */
export function hexRange(lo: number, hi: number, n: number): Expr {
  if (n === 0) return EMPTY
  const unit = 16 ** (n - 1)
  if (lo === 0 && hi === 16 ** n - 1) return repeat(hexDigit(0, 15), n, n)
  const dlo = Math.floor(lo / unit)
  const dhi = Math.floor(hi / unit)
  if (dlo === dhi) return seq(hexDigit(dlo, dlo), hexRange(lo % unit, hi % unit, n - 1))
  const parts: Expr[] = []
  const loFull = lo % unit === 0
  const hiFull = hi % unit === unit - 1
  const midLo = loFull ? dlo : dlo + 1
  const midHi = hiFull ? dhi : dhi - 1
  if (!loFull) parts.push(seq(hexDigit(dlo, dlo), hexRange(lo % unit, unit - 1, n - 1)))
  if (midLo <= midHi) parts.push(seq(hexDigit(midLo, midHi), repeat(hexDigit(0, 15), n - 1, n - 1)))
  if (!hiFull) parts.push(seq(hexDigit(dhi, dhi), hexRange(0, hi % unit, n - 1)))
  return alt(...parts)
}

const U = lit('\\u')

/** Surrogate-pair escapes `\uD8xx\uDCxx` for the supplementary-plane members of `set`. */
function surrogateEscapes(set: CharSet): Expr[] {
  const out: Expr[] = []
  for (const [lo0, hi0] of intersect(set, [[0x10000, 0x10ffff]])) {
    const lo = lo0 - 0x10000
    const hi = hi0 - 0x10000
    const hLo = lo >> 10
    const hHi = hi >> 10
    const pair = (h1: number, h2: number, l1: number, l2: number): Expr =>
      seq(U, hexRange(0xd800 + h1, 0xd800 + h2, 4), U, hexRange(0xdc00 + l1, 0xdc00 + l2, 4))
    if (hLo === hHi) {
      out.push(pair(hLo, hLo, lo & 0x3ff, hi & 0x3ff))
      continue
    }
    let a = hLo
    let b = hHi
    if ((lo & 0x3ff) !== 0) {
      out.push(pair(hLo, hLo, lo & 0x3ff, 0x3ff))
      a++
    }
    if ((hi & 0x3ff) !== 0x3ff) {
      out.push(pair(hHi, hHi, 0, hi & 0x3ff))
      b--
    }
    if (a <= b) out.push(pair(a, b, 0, 0x3ff))
  }
  return out
}

/**
 * Which escapes a string may use: `any` (every legal spelling), or `needed`: a printable ASCII
 * character only as itself, everything else as itself or escaped (so both JSON.stringify's and
 * Python's ensure_ascii spellings pass, but not `\u0061` for `a`).
 */
export type EscapePolicy = 'any' | 'needed'

/** Printable ASCII other than `"` and `\`: spelled only as themselves under the `needed` policy. */
const PLAIN_ASCII: CharSet = charSet([
  [0x20, 0x21],
  [0x23, 0x5b],
  [0x5d, 0x7e],
])

/** Every spelling, inside a JSON string, of one character out of `set` (decoded). */
export function escapedChar(set: CharSet, policy: EscapePolicy = 'any'): Expr {
  const parts: Expr[] = []
  const raw = intersect(set, RAW_STRING_CHARS)
  if (!isEmpty(raw)) parts.push(chars(raw))
  const escapable = policy === 'any' ? set : subtract(set, PLAIN_ASCII)
  const short = SHORT_ESCAPES.filter(([cp]) => isEmpty(intersect(escapable, [[cp, cp]])) === false).map(([, c]) => c)
  if (short.length > 0) parts.push(seq(lit('\\'), oneOf(short.join(''))))
  for (const [lo, hi] of intersect(escapable, [[0, 0xffff]])) parts.push(seq(U, hexRange(lo, hi, 4)))
  parts.push(...surrogateEscapes(escapable))
  return parts.length === 0 ? NOTHING : alt(...parts)
}

/**
 * Rules shared by one compilation: a named rule per distinct character set, so that the escape
 * alternatives of "any string character" exist once however many strings use it.
 */
export class Lexicon {
  readonly rules = new Map<string, Expr>()
  private readonly charRules = new Map<string, string>()
  constructor(
    readonly maxWs: number,
    readonly escapes: EscapePolicy = 'any',
  ) {}

  private readonly single = new Map<number, Expr>()

  /** The rule for one code point (cached: keys and literals spell the same characters again and again). */
  codePoint(cp: number): Expr {
    let e = this.single.get(cp)
    if (!e) {
      e = this.char(charSet([[cp, cp]]))
      this.single.set(cp, e)
    }
    return e
  }

  /** A reference to the rule for one escaped character of `set`. */
  char(set: CharSet): Expr {
    if (set.length === 1 && set[0]![0] === set[0]![1] && this.single.has(set[0]![0])) return this.single.get(set[0]![0])!
    const key = set.map(([a, b]) => `${a}-${b}`).join(',')
    let name = this.charRules.get(key)
    if (!name) {
      name = `char#${this.charRules.size}`
      this.charRules.set(key, name)
      this.rules.set(name, escapedChar(set, this.escapes))
    }
    return ref(name)
  }

  /** Inter-token whitespace (one shared rule). */
  get ws(): Expr {
    if (this.maxWs === 0) return EMPTY
    if (!this.rules.has('ws')) this.rules.set('ws', repeat(oneOf(' \t\n\r'), 0, this.maxWs))
    return ref('ws')
  }

  /** Every JSON spelling of the string value `text` (quotes included). */
  stringLiteral(text: string): Expr {
    return seq(lit('"'), ...[...text].map((c) => this.codePoint(c.codePointAt(0)!)), lit('"'))
  }

  /** Any JSON string. */
  get anyString(): Expr {
    if (!this.rules.has('string')) this.rules.set('string', seq(lit('"'), star(this.char(complement([]))), lit('"')))
    return ref('string')
  }

  /** Any JSON number (exponents included). */
  get anyNumber(): Expr {
    if (!this.rules.has('number')) this.rules.set('number', seq(integerText(false), fraction(), exponent()))
    return ref('number')
  }

  /** Any JSON value, as a recursive rule (it consumes `[` or `{` before recursing). */
  get anyValue(): Expr {
    if (!this.rules.has('value')) {
      this.rules.set('value', EMPTY)
      const v = ref('value')
      const ws = this.ws
      const member = seq(this.anyString, ws, lit(':'), ws, v)
      const array = seq(lit('['), ws, opt(seq(v, star(seq(ws, lit(','), ws, v)), ws)), lit(']'))
      const object = seq(lit('{'), ws, opt(seq(member, star(seq(ws, lit(','), ws, member)), ws)), lit('}'))
      this.rules.set('value', alt(lit('null'), lit('true'), lit('false'), this.anyNumber, this.anyString, array, object))
    }
    return ref('value')
  }
}

/** `-?(0|[1-9][0-9]*)`; `unsigned` drops the sign. */
export function integerText(unsigned: boolean): Expr {
  const body = alt(lit('0'), seq(NONZERO, star(DIGIT)))
  return unsigned ? body : seq(opt(lit('-')), body)
}
const fraction = (): Expr => opt(seq(lit('.'), repeat(DIGIT, 1, undefined)))
const exponent = (): Expr => opt(seq(oneOf('eE'), opt(oneOf('+-')), repeat(DIGIT, 1, undefined)))
