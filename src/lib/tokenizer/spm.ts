/**
 * SentencePiece-style tokenization of one text fragment, as llama.cpp's llm_tokenizer_spm does it:
 * split into characters, then repeatedly merge the adjacent pair whose concatenation is the
 * highest-scoring token (ties: the leftmost pair), then spell every remaining symbol that is not a
 * token with byte tokens <0xXX>. The caller has already added the prefix space and turned spaces into
 * U+2581 '▁'.
 */
import {quoted} from '../util/index.js'
import {TokenizerErrorCode, tokenizerError} from './errors.js'
import {mergeSymbols} from './merge.js'
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
  if (sym.length === 0) return
  const next = mergeSymbols<Bigram>(sym, before, (left, right) => {
    const merged = sym[left]! + sym[right]!
    const id = vocab.tokenToId.get(merged)
    return id === undefined ? undefined : {left, right, score: vocab.scores[id]!, size: merged.length}
  })

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
        `character ${quoted(s)} is not in the vocabulary, which has neither byte tokens for it nor an unknown token`,
      )
    }
  }
}
