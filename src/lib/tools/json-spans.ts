/**
 * Where JSON values lie in a text, so a call's arguments can be passed on exactly as the model
 * wrote them (JSON.parse then JSON.stringify would turn `1e999` into null and round big integers).
 * The scanner finds spans only; whether a span is JSON is JSON.parse's to say.
 */

export interface Span {
  readonly start: number
  readonly end: number
}

export interface Member extends Span {
  readonly key: string
}

const isWs = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r'

export function skipWs(t: string, i: number): number {
  while (i < t.length && isWs(t[i])) i++
  return i
}

function stringEnd(t: string, i: number): number {
  for (i++; i < t.length; i++) {
    if (t[i] === '\\') i++
    else if (t[i] === '"') return i + 1
  }
  return -1
}

/** The end (exclusive) of the JSON value that starts at `i` (after whitespace), or -1. */
export function valueEnd(t: string, i: number): number {
  i = skipWs(t, i)
  if (i >= t.length) return -1
  if (t[i] === '"') return stringEnd(t, i)
  if (t[i] === '{' || t[i] === '[') {
    // Iterative, so no nesting depth can overflow the stack.
    let depth = 0
    while (i < t.length) {
      const c = t[i]!
      if (c === '"') {
        i = stringEnd(t, i)
        if (i < 0) return -1
        continue
      }
      if (c === '{' || c === '[') depth++
      else if (c === '}' || c === ']') {
        depth--
        if (depth === 0) return i + 1
      }
      i++
    }
    return -1
  }
  let j = i
  while (j < t.length && !isWs(t[j]) && t[j] !== ',' && t[j] !== ']' && t[j] !== '}') j++
  return j > i ? j : -1
}

/** The members of the object at `i`, each with its key and its value's span; undefined if it is not one. */
export function objectMembers(t: string, i: number): Member[] | undefined {
  i = skipWs(t, i)
  if (t[i] !== '{') return undefined
  const out: Member[] = []
  i = skipWs(t, i + 1)
  if (t[i] === '}') return out
  for (;;) {
    if (t[i] !== '"') return undefined
    const keyEnd = stringEnd(t, i)
    if (keyEnd < 0) return undefined
    const key = JSON.parse(t.slice(i, keyEnd)) as string
    i = skipWs(t, keyEnd)
    if (t[i] !== ':') return undefined
    const start = skipWs(t, i + 1)
    const end = valueEnd(t, start)
    if (end < 0) return undefined
    out.push({key, start, end})
    i = skipWs(t, end)
    if (t[i] === '}') return out
    if (t[i] !== ',') return undefined
    i = skipWs(t, i + 1)
  }
}

/** The elements of the array at `i`; undefined if it is not one. */
export function arrayElements(t: string, i: number): Span[] | undefined {
  i = skipWs(t, i)
  if (t[i] !== '[') return undefined
  const out: Span[] = []
  i = skipWs(t, i + 1)
  if (t[i] === ']') return out
  for (;;) {
    const start = i
    const end = valueEnd(t, start)
    if (end < 0) return undefined
    out.push({start, end})
    i = skipWs(t, end)
    if (t[i] === ']') return out
    if (t[i] !== ',') return undefined
    i = skipWs(t, i + 1)
  }
}
