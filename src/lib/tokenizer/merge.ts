import {Heap} from './heap.js'

/** A candidate merge of adjacent symbols `left` and `right`; `size` is the merged text's length. */
export interface MergeCandidate {
  readonly left: number
  readonly right: number
  /** A popped candidate whose symbols no longer add up to this length is stale and skipped. */
  readonly size: number
}

/**
 * The bigram-merge loop llama.cpp's SPM and BPE tokenizers share: the symbols form a linked list,
 * candidate pairs wait in a priority queue ordered by `before`, and `candidate(l, r)` says whether
 * symbols l and r may merge (and with what priority). Merges happen in `sym` in place; the returned
 * `next` links the surviving symbols, from index 0 to -1.
 */
export function mergeSymbols<T extends MergeCandidate>(
  sym: string[],
  before: (a: T, b: T) => boolean,
  candidate: (left: number, right: number) => T | undefined,
): Int32Array {
  const n = sym.length
  const prev = new Int32Array(n)
  const next = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    prev[i] = i - 1
    next[i] = i + 1 < n ? i + 1 : -1
  }
  const queue = new Heap<T>(before)
  const tryAdd = (left: number, right: number) => {
    if (left < 0 || right < 0) return
    const c = candidate(left, right)
    if (c) queue.push(c)
  }
  for (let i = 1; i < n; i++) tryAdd(i - 1, i)
  for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
    const l = sym[b.left]!
    const r = sym[b.right]!
    if (l.length === 0 || r.length === 0 || l.length + r.length !== b.size) continue
    sym[b.left] = l + r
    sym[b.right] = ''
    const after = next[b.right]!
    next[b.left] = after
    if (after >= 0) prev[after] = b.left
    tryAdd(prev[b.left]!, b.left)
    tryAdd(b.left, after)
  }
  return next
}
