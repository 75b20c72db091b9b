/**
 * SentencePiece-style tokenization of one text fragment, as llama.cpp's llm_tokenizer_spm does it:
 * split into characters, then repeatedly merge the adjacent pair whose concatenation is the
 * highest-scoring token (ties: the leftmost pair), then spell every remaining symbol that is not a
 * token with byte tokens <0xXX>. The caller has already added the prefix space and turned spaces into
 * U+2581 '▁'.
 */
import {TokenizerErrorCode, tokenizerError} from './errors.js'
import {Heap} from './heap.js'
import {utf8Encode} from './utf8.js'
import type {Vocab} from './vocab.js'

interface Bigram {
  readonly left: number
  readonly right: number
  readonly score: number
  /** Length of the merged text; a popped bigram whose symbols no longer add up to it is stale. */
  readonly size: number
}

// llm_bigram_spm::comparator: highest score first, then the leftmost.
const before = (a: Bigram, b: Bigram) => a.score > b.score || (a.score === b.score && a.left < b.left)

export function spmTokenize(text: string, vocab: Vocab, out: number[]): void {
  const sym = Array.from(text)
  const n = sym.length
  if (n === 0) return
  const prev = new Int32Array(n)
  const next = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    prev[i] = i - 1
    next[i] = i + 1 < n ? i + 1 : -1
  }

  const queue = new Heap<Bigram>(before)
  const tryAdd = (left: number, right: number) => {
    if (left < 0 || right < 0) return
    const merged = sym[left]! + sym[right]!
    const id = vocab.tokenToId.get(merged)
    if (id === undefined) return
    queue.push({left, right, score: vocab.scores[id]!, size: merged.length})
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

  for (let i = 0; i !== -1; i = next[i]!) {
    const s = sym[i]!
    const id = vocab.tokenToId.get(s)
    if (id !== undefined) {
      out.push(id)
      continue
    }
    // Merges only ever build tokens, so this is one character that is not a token: spell its bytes.
    const bytes = utf8Encode(s)
    if (bytes.every((byte) => vocab.byteTokens[byte]! >= 0)) {
      for (const byte of bytes) out.push(vocab.byteTokens[byte]!)
    } else if (vocab.special.unk !== undefined) {
      // llama.cpp throws here (token_to_id.at); SentencePiece without byte fallback writes <unk>.
      out.push(vocab.special.unk)
    } else {
      throw tokenizerError(
        TokenizerErrorCode.unencodable,
        'text',
        `character ${JSON.stringify(s)} is not in the vocabulary, which has neither byte tokens for it nor an unknown token`,
      )
    }
  }
}
