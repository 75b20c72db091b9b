/** Human renderings shared by commands. */
/**
 * Decode tokens per second of a generation of n tokens that took decodeMs after the prompt: the first
 * token comes from the prompt's logits, so n tokens are n - 1 forward steps (llama-bench counts tg
 * the same way). Null below two tokens: one token says nothing about decode speed.
 */
export function decodeRate(nTokens: number, decodeMs: number): number | null {
  if (nTokens < 2 || !(decodeMs > 0)) return null
  return Math.round((10000 * (nTokens - 1)) / decodeMs) / 10
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[u]}`
}

/** 292352 → "292.4K", 1100048384 → "1.10B". */
export function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)}M`
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`
  return String(n)
}

/** Left-aligned two-column table, one row per pair. */
export function formatRows(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...rows.map(([k]) => k.length))
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')
}
