/**
 * Token ids → bytes, as llama.cpp's token_to_piece and detokenize produce them. Pieces are bytes
 * because a byte token holds part of a character; strings are made only at the edge.
 */
import {byteLevelCharToByte} from './byte-level.js'
import {TokenizerErrorCode, tokenizerError} from './errors.js'
import {ATTR_HIDDEN, TokenAttr} from './token-attr.js'
import {ByteBuffer, utf8Encode} from './utf8.js'
import type {Vocab} from './vocab.js'

const EMPTY = new Uint8Array(0)
const SPACE = 0x20

export interface DetokenizeOptions {
  /** Drop a leading BOS when the model adds one, and a trailing EOS when it adds one (llama.cpp remove_special). */
  readonly removeSpecial?: boolean
  /** Render control and unknown tokens as their text instead of nothing (llama.cpp unparse_special). */
  readonly unparseSpecial?: boolean
}

/** Token pieces, computed once per id on first use (llama.cpp caches them all at load; 150k would cost ~100 ms). */
export class PieceTable {
  private readonly cache: Array<Uint8Array | undefined>

  constructor(private readonly vocab: Vocab) {
    this.cache = new Array<Uint8Array | undefined>(vocab.tokens.length)
  }

  /** Check that `id` is a token id; `field` names it in the refusal. */
  check(id: number, field: string): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocab.tokens.length) {
      throw tokenizerError(
        TokenizerErrorCode.badTokenId,
        field,
        `${id} is not a token id (the vocabulary has ${this.vocab.tokens.length} tokens)`,
      )
    }
  }

  /** llama_token_to_piece(id, lstrip 0, special): control and unknown tokens are empty unless `special`. */
  piece(id: number, special: boolean): Uint8Array {
    if (!special && this.vocab.attrs[id]! & ATTR_HIDDEN) return EMPTY
    let p = this.cache[id]
    if (p === undefined) {
      p = computePiece(this.vocab, id)
      this.cache[id] = p
    }
    return p
  }
}

function computePiece(vocab: Vocab, id: number): Uint8Array {
  const attr = vocab.attrs[id]!
  const text = vocab.tokens[id]!
  if (attr & (ATTR_HIDDEN | TokenAttr.userDefined)) return utf8Encode(text)
  if (attr & TokenAttr.normal) return vocab.model === 'llama' ? utf8Encode(text.replaceAll('\u2581', ' ')) : byteLevelDecode(text)
  // The vocabulary loader checked that byte tokens are spelled <0xXX>.
  if (attr & TokenAttr.byte) return Uint8Array.of(Number.parseInt(text.slice(3, 5), 16))
  // Undefined and unused tokens render as nothing (llama.cpp falls through to 0 bytes).
  return EMPTY
}

/**
 * A byte-level token's text → its bytes. A character outside the byte alphabet is written the way
 * llama.cpp's llama_decode_text writes it: "[UNK_BYTE_0x<hex of its UTF-8>" + the whole token + "]".
 */
function byteLevelDecode(text: string): Uint8Array {
  const out: number[] = []
  for (const ch of text) {
    const b = byteLevelCharToByte(ch)
    if (b !== undefined) {
      out.push(b)
      continue
    }
    const hex = Array.from(utf8Encode(ch), (x) => x.toString(16).padStart(2, '0')).join('')
    out.push(...utf8Encode(`[UNK_BYTE_0x${hex}${text}]`))
  }
  return Uint8Array.from(out)
}

/** llama_detokenize: pieces concatenated, one leading space of the first piece dropped when the model adds a space prefix, then clean-up. */
export function detokenize(vocab: Vocab, pieces: PieceTable, ids: readonly number[], options: DetokenizeOptions = {}): Uint8Array {
  ids.forEach((id, i) => pieces.check(id, `ids[${i}]`))
  let removeSpace = vocab.addSpacePrefix
  let start = 0
  let end = ids.length
  if (options.removeSpecial && vocab.addBos && end > 0 && ids[0] === vocab.special.bos) {
    removeSpace = false
    start = 1
  }
  if (options.removeSpecial && vocab.addEos && end > start && ids[end - 1] === vocab.special.eos) end--
  const buf = new ByteBuffer()
  for (let i = start; i < end; i++) {
    const piece = pieces.piece(ids[i]!, options.unparseSpecial ?? false)
    // The first token is stripped even when it renders as nothing: a BOS "uses up" the strip.
    buf.push(piece, removeSpace && piece[0] === SPACE ? 1 : 0)
    removeSpace = false
  }
  const bytes = buf.view()
  return vocab.cleanSpaces ? cleanSpaces(bytes) : bytes.slice()
}

// ASCII: ' ? ! . , t d s m l r v e
const [QUOTE, Q, BANG, DOT, COMMA, T, D, S, M, L, R, V, E] = [
  0x27, 0x3f, 0x21, 0x2e, 0x2c, 0x74, 0x64, 0x73, 0x6d, 0x6c, 0x72, 0x76, 0x65,
] as const

/**
 * llama.cpp's clean_up_tokenization_spaces, three in-place passes over the bytes, ported literally
 * (the second pass writes a NUL over the space it skips, which later comparisons see):
 * " ?" " !" " ." " ," lose the space; " ' " becomes "'"; " 's" " 'm" " 're" " 've" lose the space.
 */
export function cleanSpaces(input: Uint8Array): Uint8Array {
  const text = input.slice()
  let total = text.length

  const total1 = total
  total = total ? 1 : 0
  for (let i = 1; i < total1; ++i) {
    const x = text[i]!
    if (text[i - 1] === SPACE && (x === Q || x === BANG || x === DOT || x === COMMA)) total--
    text[total++] = x
  }

  const total2 = total
  total = total ? 1 : 0
  for (let i = 1; i < total2; ++i) {
    const x = text[i]!
    if (x === QUOTE && i + 1 < total2 && text[i - 1] === SPACE && text[i + 1] === SPACE) {
      total--
      text[++i] = 0
    }
    text[total++] = x
  }

  const total3 = total
  total = total ? 1 : 0
  for (let i = 1; i < total3; ++i) {
    const x = text[i]!
    if (text[i - 1] === SPACE && x === QUOTE && i + 1 < total3) {
      const x1 = text[i + 1]!
      if (x1 === T || x1 === D) {
        // " 't", " 'd" keep their space
      } else if (x1 === S || x1 === M) {
        total--
      } else if (i + 2 < total3) {
        const x2 = text[i + 2]!
        if (x1 === L && x2 === L) {
          // " 'll" keeps its space
        } else if ((x1 === R && x2 === E) || (x1 === V && x2 === E)) {
          total--
        }
      }
    }
    text[total++] = x
  }
  return text.slice(0, total)
}
