/** "Did you mean ...?": the candidates nearest a mistyped word, by edit distance (a transposition counts as one edit). */

function distance(a: string, b: string): number {
  const d: number[][] = Array.from({length: a.length + 1}, (_, i) =>
    Array.from({length: b.length + 1}, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1)
      d[i]![j] = v
    }
  return d[a.length]![b.length]!
}

/** The closest candidates (at most 3, best first) within a third of the word's length (at least 2 edits), or a candidate the word is a prefix of. */
export function didYouMean(word: string, candidates: readonly string[]): string[] {
  const w = word.toLowerCase()
  const limit = Math.max(2, Math.floor(w.length / 3))
  return [...new Set(candidates)]
    .map((c) => ({c, d: c.toLowerCase().startsWith(w) && w.length >= 2 ? 0.5 : distance(w, c.toLowerCase())}))
    .filter((x) => x.d <= limit)
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .slice(0, 3)
    .map((x) => x.c)
}
