/**
 * Byte-level BPE tokenization of one text fragment, as llama.cpp's llm_tokenizer_bpe does it: cut the
 * text into words with the pre-tokenizer, spell each word's UTF-8 bytes in GPT-2's byte alphabet,
 * then repeatedly merge the adjacent pair with the lowest merge rank (ties: the leftmost pair). With
 * ignore_merges (llama3), a word that is already a token is emitted whole.
 */
import {quoted} from '../util/index.js'
import {byteLevelEncode} from './byte-level.js'
import {TokenizerErrorCode, tokenizerError} from './errors.js'
import {mergeSymbols} from './merge.js'
import {preTokenize} from './pre-tokenizers.js'
import {utf8Encode} from './utf8.js'
import type {Vocab} from './vocab.js'

interface Bigram {
  readonly left: number
  readonly right: number
  readonly rank: number
  /** Length of the merged text; a popped bigram whose symbols no longer add up to it is stale. */
  readonly size: number
}

// llm_bigram_bpe::comparator: lowest rank first, then the leftmost.
const before = (a: Bigram, b: Bigram) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left)

/** Words repeat; their ids are remembered up to this many distinct words per tokenizer. */
const WORD_CACHE_LIMIT = 50_000

export function bpeTokenize(text: string, vocab: Vocab, cache: Map<string, readonly number[]>, out: number[]): void {
  const regexes = vocab.pre?.regexes ?? []
  for (const word of preTokenize(text, regexes)) {
    const encoded = byteLevelEncode(utf8Encode(word))
    let ids = cache.get(encoded)
    if (ids === undefined) {
      ids = bpeWord(encoded, vocab)
      if (cache.size < WORD_CACHE_LIMIT) cache.set(encoded, ids)
    }
    for (const id of ids) out.push(id)
  }
}

function bpeWord(word: string, vocab: Vocab): number[] {
  if (vocab.ignoreMerges) {
    const id = vocab.tokenToId.get(word)
    if (id !== undefined) return [id]
  }
  // Every character of the byte alphabet is one UTF-16 unit, so one symbol per unit.
  const sym = word.split('')
  const next = mergeSymbols<Bigram>(sym, before, (left, right) => {
    const l = sym[left]!
    const r = sym[right]!
    const rank = vocab.mergeRanks.get(`${l} ${r}`)
    return rank === undefined ? undefined : {left, right, rank, size: l.length + r.length}
  })

  const ids: number[] = []
  for (let i = 0; i !== -1; i = next[i]!) {
    const s = sym[i]!
    const id = vocab.tokenToId.get(s)
    if (id !== undefined) {
      ids.push(id)
      continue
    }
    // llama.cpp looks up each UTF-8 byte of the symbol as a one-byte token and silently drops the
    // ones it cannot find (every non-ASCII character of the byte alphabet). Dropping input is not
    // something we do quietly: spell what llama.cpp would spell, refuse when it would drop.
    for (const ch of s) {
      const one = ch.charCodeAt(0) < 0x80 ? vocab.tokenToId.get(ch) : undefined
      if (one === undefined) {
        throw tokenizerError(
          TokenizerErrorCode.unencodable,
          'text',
          `the BPE symbol ${quoted(s)} is not a token and its byte ${quoted(ch)} has no token of its own (the vocabulary lacks part of the byte alphabet)`,
        )
      }
      ids.push(one)
    }
  }
  return ids
}
