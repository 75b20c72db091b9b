/**
 * JSON text as it was written: a parser that keeps each number's own spelling (JavaScript's
 * JSON.parse turns Python's `12345.0`, which draft 4 validators reject as an integer, into `12345`),
 * and two serializers of its values: JSON.stringify's compact style, and Python's json.dumps
 * default (separators ", " and ": ", ensure_ascii escaping). Numbers are written as spelled.
 */
export class RawNumber {
  constructor(readonly text: string) {}
}
export type RawJson = null | boolean | RawNumber | string | RawJson[] | {[k: string]: RawJson}

export function parseRaw(text: string): RawJson {
  let i = 0
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++
  }
  const value = (): RawJson => {
    ws()
    const c = text[i]
    if (c === '{') {
      i++
      const out: {[k: string]: RawJson} = {}
      ws()
      if (text[i] === '}') return (i++, out)
      for (;;) {
        ws()
        const k = value() as string
        ws()
        i++ // ':'
        out[k] = value()
        ws()
        if (text[i++] === '}') return out
      }
    }
    if (c === '[') {
      i++
      const out: RawJson[] = []
      ws()
      if (text[i] === ']') return (i++, out)
      for (;;) {
        out.push(value())
        ws()
        if (text[i++] === ']') return out
      }
    }
    if (c === '"') {
      const start = i
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++
      i++
      return JSON.parse(text.slice(start, i)) as string
    }
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400))
    if (!m) throw new Error(`bad JSON at ${i}`)
    i += m[0].length
    if (m[0] === 'true' || m[0] === 'false' || m[0] === 'null') return JSON.parse(m[0]) as RawJson
    return new RawNumber(m[0])
  }
  const v = value()
  ws()
  if (i !== text.length) throw new Error('trailing text')
  return v
}

function pyString(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const ch = s[i]!
    if (ch === '"') out += '\\"'
    else if (ch === '\\') out += '\\\\'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (ch === '\t') out += '\\t'
    else if (ch === '\b') out += '\\b'
    else if (ch === '\f') out += '\\f'
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0')
    else out += ch
  }
  return out + '"'
}

/** JSON.stringify's spelling (numbers as written). */
export function jsStringify(v: RawJson): string {
  if (v instanceof RawNumber) return v.text
  if (v === null || typeof v !== 'object') return JSON.stringify(v)
  if (Array.isArray(v)) return '[' + v.map(jsStringify).join(',') + ']'
  return (
    '{' +
    Object.entries(v)
      .map(([k, x]) => JSON.stringify(k) + ':' + jsStringify(x))
      .join(',') +
    '}'
  )
}

/** Python json.dumps' default spelling (numbers as written). */
export function pyDumps(v: RawJson): string {
  if (v instanceof RawNumber) return v.text
  if (v === null || typeof v === 'boolean') return JSON.stringify(v)
  if (typeof v === 'string') return pyString(v)
  if (Array.isArray(v)) return '[' + v.map(pyDumps).join(', ') + ']'
  return (
    '{' +
    Object.entries(v)
      .map(([k, x]) => pyString(k) + ': ' + pyDumps(x))
      .join(', ') +
    '}'
  )
}
