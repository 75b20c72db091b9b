/**
 * Numbers with bounds, as a grammar over their decimal text. Comparison is exact decimal
 * comparison, built digit by digit (for each length of the integer part, the digits are compared
 * lexicographically against the bound padded to that length, tracking whether the prefix is still
 * equal to the lower and/or the upper bound).
 *
 * Policies, chosen so that the grammar never accepts what a validator comparing IEEE doubles would
 * reject:
 * - a bounded number has at most 15 digits in all (integer and fraction): distinct decimals of up to
 *   15 significant digits stay distinct and ordered as doubles, so exact and double comparison agree;
 * - a bounded number has no exponent; an unbounded one may have one;
 * - `integer` is spelled without fraction or exponent (`1.0` is an integer from draft 6 on, but it is
 *   rejected here: the safe side for every draft);
 * - `multipleOf` is honoured when it is 10^-k (at most k fraction digits), an integer with an integer
 *   type (a remainder automaton, or an enumeration when bounded and small), else refused.
 */
import {alt, chars, EMPTY, lit, NOTHING, opt, ref, repeat, seq, type Expr} from '../ir.js'
import {DIGIT, integerText, NONZERO} from './lexical.js'
import {charSet} from '../charset.js'

/** An exact decimal: sign, integer digits (no leading zeros, "0" for zero), fraction digits (no trailing zeros). */
export interface Decimal {
  readonly neg: boolean
  readonly int: string
  readonly frac: string
}

export function toDecimal(x: number): Decimal {
  if (!Number.isFinite(x)) throw new Error(`not a finite number: ${x}`)
  const s = Math.abs(x).toString()
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(s)
  if (!m) throw new Error(`unexpected number text ${s}`)
  let digits = m[1]! + (m[2] ?? '')
  let point = m[1]!.length + Number(m[3] ?? 0)
  if (point < 0) {
    digits = '0'.repeat(-point) + digits
    point = 0
  }
  if (point > digits.length) digits = digits + '0'.repeat(point - digits.length)
  const int = digits.slice(0, point).replace(/^0+/, '') || '0'
  const frac = digits.slice(point).replace(/0+$/, '')
  return {neg: x < 0 && !(int === '0' && frac === ''), int, frac}
}

export interface NumberBounds {
  lo?: number
  loExcl?: boolean
  hi?: number
  hiExcl?: boolean
  integer?: boolean
  /** Fraction digits allowed at most (multipleOf 10^-k); undefined: any. */
  maxFrac?: number
}

const MAX_DIGITS = 15
const digitRange = (a: number, b: number): Expr => chars(charSet([[0x30 + a, 0x30 + b]]))

/** Texts of non-negative numbers (no sign) with value in the bounds; lo/hi non-negative when present. */
function nonNegative(
  lo: Decimal | undefined,
  loExcl: boolean,
  hi: Decimal | undefined,
  hiExcl: boolean,
  integer: boolean,
  maxFrac: number,
): Expr {
  const parts: Expr[] = []
  const loLen = lo ? lo.int.length : 1
  const hiLen = hi ? Math.min(hi.int.length, MAX_DIGITS) : MAX_DIGITS
  const fracCap = (k: number): number => (integer ? 0 : Math.min(maxFrac, MAX_DIGITS - k))
  const freeFrac = (k: number): Expr => (fracCap(k) > 0 ? opt(seq(lit('.'), repeat(DIGIT, 1, fracCap(k)))) : EMPTY)
  // Lengths other than the bounds' own are free: any digits of that length.
  for (let k = loLen; k <= hiLen; k++) {
    const tightLo = lo !== undefined && lo.int.length === k && !(k === 1 && lo.int === '0' && lo.frac === '' && !loExcl)
    const tightHi = hi !== undefined && hi.int.length === k
    if (!tightLo && !tightHi && k > 1) {
      parts.push(seq(NONZERO, repeat(DIGIT, k - 1, k - 1), freeFrac(k)))
      continue
    }
    parts.push(tight(k, tightLo ? lo : undefined, loExcl, tightHi ? hi : undefined, hiExcl, fracCap(k)))
  }
  return alt(...parts)
}

/** Numbers whose integer part has exactly k digits, compared digit by digit with the tight bounds. */
function tight(k: number, lo: Decimal | undefined, loExcl: boolean, hi: Decimal | undefined, hiExcl: boolean, fracCap: number): Expr {
  const a = lo ? lo.int.padStart(k, '0') + lo.frac : ''
  const b = hi ? hi.int.padStart(k, '0') + hi.frac : ''
  const digitAt = (s: string, i: number): number => (i < s.length ? s.charCodeAt(i) - 48 : 0)
  const tailZero = (s: string, i: number): boolean => i >= s.length || /^0*$/.test(s.slice(i))
  const total = k + fracCap
  const memo = new Map<string, Expr>()
  // The text from digit position `pos` on (pos < k: integer digits; pos >= k: fraction digits).
  const from = (pos: number, tl: boolean, th: boolean): Expr => {
    const key = `${pos},${tl},${th}`
    const hit = memo.get(key)
    if (hit) return hit
    const parts: Expr[] = []
    const canEnd = (pos === k || pos > k) && (!tl || (!loExcl && tailZero(a, pos))) && (!th || !hiExcl || !tailZero(b, pos))
    if (canEnd) parts.push(EMPTY)
    if (pos < total) {
      const dlo = tl ? digitAt(a, pos) : pos === 0 && k > 1 ? 1 : 0
      const dhi = th ? digitAt(b, pos) : 9
      const next = (d1: number, d2: number, ntl: boolean, nth: boolean): void => {
        if (d1 > d2) return
        const rest = from(pos + 1, ntl, nth)
        parts.push(seq(digitRange(d1, d2), rest))
      }
      if (dlo <= dhi) {
        if (tl && th && dlo === dhi) next(dlo, dlo, true, true)
        else {
          if (tl) next(dlo, dlo, true, false)
          if (th) next(dhi, dhi, false, true)
          next(tl ? dlo + 1 : dlo, th ? dhi - 1 : dhi, false, false)
        }
      }
    }
    let body = parts.length === 0 ? NOTHING : alt(...parts)
    if (pos === k && pos < total) {
      // the fraction starts with '.', and needs at least one digit: split "end here" from "'.' digits"
      const digits = parts.filter((p) => p !== EMPTY)
      body = alt(...(canEnd ? [EMPTY] : []), ...(digits.length > 0 ? [seq(lit('.'), alt(...digits))] : []))
      if (!canEnd && digits.length === 0) body = NOTHING
    } else if (pos > k && !tl && !th) {
      body = alt(EMPTY, repeat(DIGIT, 1, total - pos))
      if (pos >= total) body = EMPTY
    }
    memo.set(key, body)
    return body
  }
  return from(0, lo !== undefined, hi !== undefined)
}

/** A grammar for the JSON numbers within the bounds (see the module comment for the policies). */
export function boundedNumber(b: NumberBounds, _pointer: string): Expr {
  const integer = b.integer ?? false
  const maxFrac = b.maxFrac ?? MAX_DIGITS
  if (b.lo === undefined && b.hi === undefined) {
    if (integer) return integerText(false)
    if (b.maxFrac !== undefined) return seq(integerText(false), b.maxFrac > 0 ? opt(seq(lit('.'), repeat(DIGIT, 1, b.maxFrac))) : EMPTY)
    return seq(
      integerText(false),
      opt(seq(lit('.'), repeat(DIGIT, 1, undefined))),
      opt(
        seq(
          chars(
            charSet([
              [0x45, 0x45],
              [0x65, 0x65],
            ]),
          ),
          opt(alt(lit('+'), lit('-'))),
          repeat(DIGIT, 1, undefined),
        ),
      ),
    )
  }
  const lo = b.lo !== undefined ? toDecimal(b.lo) : undefined
  const hi = b.hi !== undefined ? toDecimal(b.hi) : undefined
  // no number within the bounds: this branch is empty (the whole schema, if nothing else, is refused)
  if (b.lo !== undefined && b.hi !== undefined && (b.lo > b.hi || (b.lo === b.hi && (b.loExcl || b.hiExcl)))) return NOTHING
  const parts: Expr[] = []
  const loExcl = b.loExcl ?? false
  const hiExcl = b.hiExcl ?? false
  // x >= 0 side: value in [max(lo, 0), hi]
  if (hi === undefined || !hi.neg) {
    const l = lo === undefined || lo.neg ? undefined : lo
    parts.push(nonNegative(l, l ? loExcl : false, hi, hiExcl, integer, maxFrac))
  }
  // x <= 0 side: "-" then |x| in [max(-hi, 0), -lo]; "-0" spells zero, so it follows zero's membership
  if (lo === undefined || lo.neg || (lo.int === '0' && lo.frac === '' && !loExcl)) {
    const l = hi !== undefined && hi.neg ? {...hi, neg: false} : undefined
    const h = lo !== undefined ? {...lo, neg: false} : undefined
    const zeroIn =
      (b.lo === undefined || b.lo < 0 || (b.lo === 0 && !loExcl)) && (b.hi === undefined || b.hi > 0 || (b.hi === 0 && !hiExcl))
    if (l) parts.push(seq(lit('-'), nonNegative(l, hiExcl, h, loExcl, integer, maxFrac)))
    else parts.push(seq(lit('-'), nonNegative(zeroIn ? undefined : {neg: false, int: '0', frac: ''}, !zeroIn, h, loExcl, integer, maxFrac)))
  }
  return alt(...parts)
}

/** Integers that are multiples of `m` (no bounds): a remainder automaton, one rule per remainder. */
export function multipleOfInteger(m: number, rules: Map<string, Expr>): Expr {
  const name = (r: number): string => `mult${m}#${r}`
  if (!rules.has(name(0))) {
    for (let r = 0; r < m; r++) {
      const parts: Expr[] = r === 0 ? [EMPTY] : []
      for (let d = 0; d <= 9; d++) parts.push(seq(digitRange(d, d), ref(name((r * 10 + d) % m))))
      rules.set(name(r), alt(...parts))
    }
  }
  const body = alt(lit('0'), alt(...Array.from({length: 9}, (_, i) => seq(digitRange(i + 1, i + 1), ref(name((i + 1) % m))))))
  return seq(opt(lit('-')), body)
}
