/**
 * The tokenizer of one model: text ↔ token ids the way llama.cpp's llama_tokenize and
 * llama_detokenize do it, for SentencePiece ('llama') and byte-level BPE ('gpt2') vocabularies.
 */
import {bpeTokenize} from './bpe.js'
import {type DetokenizeOptions, detokenize, PieceTable} from './detokenize.js'
import {partitionSpecial} from './partition.js'
import {spmTokenize} from './spm.js'
import {StreamDecoder, type StreamDecoderOptions} from './stream.js'
import {TokenAttr} from './token-attr.js'
import {utf8Decode, wellFormed} from './utf8.js'
import type {SpecialIds, TokenizerModel, Vocab} from './vocab.js'

export interface EncodeOptions {
  /** Add BOS (and EOS) as the model asks (tokenizer.ggml.add_bos_token / add_eos_token). Default false. */
  readonly addSpecial?: boolean
  /** Match control tokens written in the text ("<|im_start|>", "<s>"). Default false: they are plain text. */
  readonly parseSpecial?: boolean
}

export type DecodeOptions = DetokenizeOptions

export class Tokenizer {
  readonly model: TokenizerModel
  /** `tokenizer.ggml.pre` (BPE only; undefined for SPM, or when the file has none and llama.cpp's "default" applies). */
  readonly pre: string | undefined
  readonly vocabSize: number
  readonly bos: number | undefined
  readonly eos: number | undefined
  readonly eot: number | undefined
  readonly eom: number | undefined
  readonly unk: number | undefined
  /** Every special id llama.cpp tracks (bos, eos, eot, eom, unk, sep, pad, mask, fim*). */
  readonly special: SpecialIds
  /** Tokens that end generation (llama.cpp's special_eog_ids). */
  readonly eogTokens: ReadonlySet<number>
  readonly addBos: boolean
  readonly addEos: boolean
  readonly addSpacePrefix: boolean

  private readonly pieces: PieceTable
  private readonly bpeCache = new Map<string, readonly number[]>()

  constructor(private readonly vocab: Vocab) {
    this.model = vocab.model
    this.pre = vocab.preName
    this.vocabSize = vocab.tokens.length
    this.special = vocab.special
    this.bos = vocab.special.bos
    this.eos = vocab.special.eos
    this.eot = vocab.special.eot
    this.eom = vocab.special.eom
    this.unk = vocab.special.unk
    this.eogTokens = vocab.eog
    this.addBos = vocab.addBos
    this.addEos = vocab.addEos
    this.addSpacePrefix = vocab.addSpacePrefix
    this.pieces = new PieceTable(vocab)
  }

  /** llama_tokenize(text, add_special, parse_special). A lone surrogate in `text` is read as U+FFFD. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const {addSpecial = false, parseSpecial = false} = options
    const v = this.vocab
    const out: number[] = []
    if (addSpecial && v.addBos) out.push(v.special.bos!)
    // SentencePiece: a fragment gets the prefix space when it starts the text or follows a special token.
    let afterSpecial = true
    for (const fragment of partitionSpecial(wellFormed(text), v, parseSpecial)) {
      if ('token' in fragment) {
        out.push(fragment.token)
        afterSpecial = true
        continue
      }
      if (v.model === 'llama') {
        const spaced = v.addSpacePrefix && afterSpecial ? ` ${fragment.text}` : fragment.text
        spmTokenize(spaced.replaceAll(' ', '\u2581'), v, out)
      } else {
        bpeTokenize(fragment.text, v, this.bpeCache, out)
      }
      afterSpecial = false
    }
    if (addSpecial && v.addEos) out.push(v.special.eos!)
    return out
  }

  /** llama_detokenize(ids, remove_special, unparse_special) as a string (invalid UTF-8 becomes U+FFFD). */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    return utf8Decode(this.decodeBytes(ids, options))
  }

  /** llama_detokenize as raw bytes (random models emit byte tokens that are not valid UTF-8). */
  decodeBytes(ids: readonly number[], options: DecodeOptions = {}): Uint8Array {
    return detokenize(this.vocab, this.pieces, ids, options)
  }

  /** The piece of one token as llama_token_to_piece gives it (special tokens rendered unless `special` is false). */
  pieceBytes(id: number, options: {special?: boolean} = {}): Uint8Array {
    this.pieces.check(id, 'token')
    return this.pieces.piece(id, options.special ?? true).slice()
  }

  /** pieceBytes as a string; a piece that is part of a character (a byte token) becomes U+FFFD. */
  piece(id: number, options: {special?: boolean} = {}): string {
    return utf8Decode(this.pieceBytes(id, options))
  }

  /** The token's text as the vocabulary spells it ("▁the", "Ġthe", "<0x0A>"). */
  tokenText(id: number): string {
    this.pieces.check(id, 'token')
    return this.vocab.tokens[id]!
  }

  /** The id of the token spelled exactly `text`, if any. */
  tokenId(text: string): number | undefined {
    return this.vocab.tokenToId.get(text)
  }

  /** The token's attribute bits (TokenAttr), after llama.cpp's load-time overrides (llama_vocab_get_attr). */
  tokenAttributes(id: number): number {
    this.pieces.check(id, 'token')
    return this.vocab.attrs[id]!
  }

  isEog(id: number): boolean {
    return this.vocab.eog.has(id)
  }

  /** Control (and unknown) tokens render as nothing unless asked for. */
  isControl(id: number): boolean {
    this.pieces.check(id, 'token')
    return (this.vocab.attrs[id]! & (TokenAttr.control | TokenAttr.unknown)) !== 0
  }

  /** A detokenizer for generation: push ids one by one, get only complete UTF-8 text back. */
  createStreamDecoder(options: StreamDecoderOptions = {}): StreamDecoder {
    return new StreamDecoder(this.pieces, options)
  }
}
