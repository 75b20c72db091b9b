import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'

/** The stable codes of every tokenizer refusal, one place so that docs and tests can list them. */
export const TokenizerErrorCode = {
  /** A tokenizer model or pre-tokenizer we do not implement (`bert`, `t5`, an unknown `tokenizer.ggml.pre`). Exit 5. */
  unsupported: 'TOKENIZER_UNSUPPORTED',
  /** The vocabulary arrays are missing, empty, of different lengths, or hold a bad value. Exit 3. */
  badVocab: 'TOKENIZER_BAD_VOCAB',
  /** `tokenizer.ggml.merges` is missing for a BPE vocabulary or holds a line that is not "left right". Exit 3. */
  badMerges: 'TOKENIZER_BAD_MERGES',
  /** A special-token id outside the vocabulary, or add_bos/add_eos without the token. Exit 3. */
  badSpecialToken: 'TOKENIZER_BAD_SPECIAL_TOKEN',
  /** Text that the vocabulary cannot spell (no byte token, no unknown token). Exit 3. */
  unencodable: 'TOKENIZER_UNENCODABLE',
  /** A token id given to decode that is not in the vocabulary. Exit 1. */
  badTokenId: 'TOKENIZER_BAD_TOKEN_ID',
} as const

export type TokenizerErrorCodeValue = (typeof TokenizerErrorCode)[keyof typeof TokenizerErrorCode]

/** Where a metadata value came from, so that a refusal can name the file and the byte offset of its key. */
export interface MetadataSource {
  readonly offsets: ReadonlyMap<string, number>
  readonly file: string | undefined
}

export class TokenizerError extends RunnerError {
  /** The metadata key (or other field) that was refused, e.g. `tokenizer.ggml.bos_token_id`. */
  readonly field: string

  constructor(code: TokenizerErrorCodeValue, field: string, message: string, exitCode: ExitCodeValue) {
    super(code, message, exitCode)
    this.name = 'TokenizerError'
    this.field = field
  }
}

const EXIT: Record<TokenizerErrorCodeValue, ExitCodeValue> = {
  TOKENIZER_UNSUPPORTED: ExitCode.unsupported,
  TOKENIZER_BAD_VOCAB: ExitCode.invalidModel,
  TOKENIZER_BAD_MERGES: ExitCode.invalidModel,
  TOKENIZER_BAD_SPECIAL_TOKEN: ExitCode.invalidModel,
  TOKENIZER_UNENCODABLE: ExitCode.invalidModel,
  TOKENIZER_BAD_TOKEN_ID: ExitCode.failure,
}

/** A refusal of a metadata key: "file: key at byte N: detail". */
export function metadataError(code: TokenizerErrorCodeValue, source: MetadataSource, key: string, detail: string): TokenizerError {
  const at = source.offsets.get(key)
  const shown = printable(key)
  const where = `${source.file ? `${printable(source.file, {max: 1000})}: ` : ''}${shown}${at === undefined ? '' : ` at byte ${at}`}`
  return new TokenizerError(code, shown, `${where}: ${detail}`, EXIT[code])
}

/** A refusal that is not about one metadata key (encode/decode input). */
export function tokenizerError(code: TokenizerErrorCodeValue, field: string, detail: string): TokenizerError {
  return new TokenizerError(code, printable(field), `${printable(field)}: ${detail}`, EXIT[code])
}
