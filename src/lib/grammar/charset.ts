/**
 * Sets of Unicode scalar values as sorted, disjoint, non-adjacent inclusive ranges: the one kind of
 * terminal the grammar IR has (a grammar walks a document code point by code point; the native
 * matcher decodes UTF-8 bytes into them). Surrogates (U+D800..U+DFFF) are never members: they are not
 * scalar values and have no UTF-8 encoding.
 */
export type CodePointRange = readonly [lo: number, hi: number]
export type CharSet = readonly CodePointRange[]

export const MAX_CODE_POINT = 0x10ffff
const SURROGATES: CodePointRange = [0xd800, 0xdfff]

/** Normalise any list of ranges: sorted, merged, surrogates removed. */
export function charSet(ranges: Iterable<CodePointRange>): CharSet {
  const sorted = [...ranges]
    .map(([lo, hi]): [number, number] => [Math.max(0, lo), Math.min(MAX_CODE_POINT, hi)])
    .filter(([lo, hi]) => lo <= hi)
    .sort((a, b) => a[0] - b[0])
  const merged: [number, number][] = []
  for (const [lo, hi] of sorted) {
    const last = merged[merged.length - 1]
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi)
    else merged.push([lo, hi])
  }
  return subtract(merged, [SURROGATES])
}

/** The set of the code points of `text`. */
export function charsOf(text: string): CharSet {
  return charSet([...text].map((c) => [c.codePointAt(0)!, c.codePointAt(0)!] as const))
}

export const ANY_CHAR: CharSet = charSet([[0, MAX_CODE_POINT]])

export function union(...sets: CharSet[]): CharSet {
  return charSet(sets.flat())
}

/** Every scalar value not in `set`. */
export function complement(set: CharSet): CharSet {
  return subtract(ANY_CHAR, set)
}

export function subtract(set: CharSet, remove: CharSet): CharSet {
  const out: [number, number][] = []
  for (const [lo0, hi] of set) {
    let lo = lo0
    for (const [rlo, rhi] of remove) {
      if (rhi < lo || rlo > hi) continue
      if (rlo > lo) out.push([lo, rlo - 1])
      lo = Math.max(lo, rhi + 1)
      if (lo > hi) break
    }
    if (lo <= hi) out.push([lo, hi])
  }
  return out
}

export function intersect(a: CharSet, b: CharSet): CharSet {
  return subtract(a, complement(b))
}

export function contains(set: CharSet, cp: number): boolean {
  let lo = 0
  let hi = set.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const [a, b] = set[mid]!
    if (cp < a) hi = mid - 1
    else if (cp > b) lo = mid + 1
    else return true
  }
  return false
}

export function isEmpty(set: CharSet): boolean {
  return set.length === 0
}
