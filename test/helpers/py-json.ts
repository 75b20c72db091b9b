/**
 * Python's `json.dumps` default serialization (separators ", " and ": ", ensure_ascii escaping,
 * float repr), so grammars are judged on the spelling Python tools and many models emit as well as
 * on JSON.stringify's. Integral numbers are written as Python ints (JSON cannot tell 1 from 1.0 once
 * parsed in JavaScript).
 */
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

function pyFloat(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return String(x)
  const [mant, expS] = x.toExponential().split('e') as [string, string]
  const e = Number(expS)
  if (e >= -4 && e < 16) {
    const s = String(x)
    return s.includes('.') || s.includes('e') ? s : s + '.0'
  }
  return `${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`
}

export function pyDumps(v: unknown): string {
  if (v === null) return 'null'
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) >= 1e16 ? BigInt(v).toString() : pyFloat(v)
  if (typeof v === 'string') return pyString(v)
  if (Array.isArray(v)) return '[' + v.map(pyDumps).join(', ') + ']'
  return (
    '{' +
    Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => pyString(k) + ': ' + pyDumps(x))
      .join(', ') +
    '}'
  )
}
