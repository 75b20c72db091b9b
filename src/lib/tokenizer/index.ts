/**
 * Tokenizers built from a model's GGUF metadata, reproducing llama.cpp: SentencePiece ('llama') and
 * byte-level BPE ('gpt2') vocabularies. See docs/tokenizer.md for the rules and the quirks kept.
 */
import type {GgufKv, GgufModelFiles} from '../gguf/index.js'
import {Tokenizer} from './tokenizer.js'
import {loadVocab} from './vocab.js'

export {TokenizerError, TokenizerErrorCode, type TokenizerErrorCodeValue} from './errors.js'
export {PRE_TOKENIZER_NAMES} from './pre-tokenizers.js'
export {encodePrompt, type PromptEncoding} from './prompt.js'
export {type SpecialSlot} from './special-ids.js'
export {StreamDecoder, type StreamDecoderOptions} from './stream.js'
export {TokenAttr, TokenType, type TokenTypeValue} from './token-attr.js'
export {type DecodeOptions, type EncodeOptions, Tokenizer} from './tokenizer.js'
export {type SpecialIds, TOKENIZER_KEYS, type TokenizerModel} from './vocab.js'

export interface CreateTokenizerOptions {
  /** Byte offset of each key in the file, so that refusals can point at it. */
  readonly offsets?: ReadonlyMap<string, number>
  /** The file the metadata came from, for messages. */
  readonly file?: string
}

function isModelFiles(x: GgufModelFiles | ReadonlyMap<string, GgufKv>): x is GgufModelFiles {
  return 'shards' in x && 'metadata' in x
}

/**
 * The tokenizer described by a model's metadata: a read model (readGgufModel) or its metadata map.
 * Refuses, by key and value, anything llama.cpp would not load or that we do not implement.
 */
export function createTokenizer(source: GgufModelFiles | ReadonlyMap<string, GgufKv>, options: CreateTokenizerOptions = {}): Tokenizer {
  if (isModelFiles(source)) {
    return new Tokenizer(
      loadVocab(source.metadata, {offsets: options.offsets ?? source.shards[0]?.kvOffsets ?? new Map(), file: options.file ?? source.path}),
    )
  }
  return new Tokenizer(loadVocab(source, {offsets: options.offsets ?? new Map(), file: options.file}))
}
