/**
 * Streaming detokenization: one token at a time, text out only when it is whole. A token can end in
 * the middle of a character (byte tokens: "🙂" is four of them), so bytes that begin a valid UTF-8
 * sequence are held until the sequence completes. Bytes that can never become valid (a stray
 * continuation byte, a sequence cut short by the next lead byte) come out as U+FFFD as soon as that is
 * certain, exactly where a one-shot UTF-8 decode of all the bytes would put it (WHATWG decoder, maximal
 * subparts). end() flushes: a sequence still incomplete then becomes one U+FFFD. So the concatenation
 * of every push() and end() equals decoding all the pieces' bytes at once.
 *
 * Pieces are llama.cpp's per-token pieces (token_to_piece); whole-sequence decode additionally strips
 * the first token's prefix space and applies clean_up_tokenization_spaces, which a stream cannot undo.
 */
import type {PieceTable} from './detokenize.js'

export interface StreamDecoderOptions {
  /** Render control and unknown tokens as their text (default false: they render as nothing). */
  readonly unparseSpecial?: boolean
  /**
   * Drop one leading space from the first token's piece, as decode() does for SentencePiece models.
   * Default false: a continuation after a prompt keeps its spaces.
   */
  readonly stripLeadingSpace?: boolean
}

export class StreamDecoder {
  private readonly utf8 = new TextDecoder('utf-8', {ignoreBOM: true})
  private stripNext: boolean

  constructor(
    private readonly pieces: PieceTable,
    private readonly options: StreamDecoderOptions = {},
  ) {
    this.stripNext = options.stripLeadingSpace ?? false
  }

  /** Add one token; returns the text that is now complete (often '', never a partial character). */
  push(id: number): string {
    this.pieces.check(id, 'token')
    const piece = this.pieces.piece(id, this.options.unparseSpecial ?? false)
    const bytes = this.stripNext && piece[0] === 0x20 ? piece.subarray(1) : piece
    this.stripNext = false
    return this.utf8.decode(bytes, {stream: true})
  }

  /** Flush what is held; an incomplete sequence becomes U+FFFD. The decoder then starts afresh. */
  end(): string {
    this.stripNext = this.options.stripLeadingSpace ?? false
    return this.utf8.decode()
  }
}
