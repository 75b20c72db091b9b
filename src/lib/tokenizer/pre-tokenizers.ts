/**
 * The BPE pre-tokenizers: how text is cut into words before merges run, keyed by the GGUF's
 * `tokenizer.ggml.pre` exactly as llama.cpp (llama-vocab.cpp, llm_tokenizer_bpe) names them. Each entry
 * is a list of regexes applied in turn: every piece from the previous regex is split again, and the
 * stretches between matches are kept as pieces of their own (unicode_regex_split).
 *
 * The regexes are llama.cpp's strings, with one translation: `\s` / `\S` become `\p{White_Space}` /
 * `\P{White_Space}`. llama.cpp's whitespace is the Unicode White_Space set (its custom splitters read
 * it from unicode-data, and its std::regex path maps every non-ASCII whitespace to \v first); JS `\s`
 * differs on U+0085 (not matched) and U+FEFF (matched). JS lookahead handles `\s+(?!\S)` directly.
 * llama.cpp runs the gpt2 and llama3 regexes through hand-written splitters that implement the same
 * language; the qwen2 one goes through std::regex on a "collapsed" copy of the text where each
 * non-ASCII character stands for its category, which again is the same language as a Unicode regex.
 */

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
const LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const DEFAULT = ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2, '\\p{N}+', '[0-9][0-9][0-9]']

/** llama.cpp regex source → a JS RegExp with the same language (see the file comment). */
function compile(source: string): RegExp {
  return new RegExp(source.replaceAll('\\s', '\\p{White_Space}').replaceAll('\\S', '\\P{White_Space}'), 'gu')
}

export interface PreTokenizer {
  /** llama.cpp's pre-tokenizer type this name maps to (LLAMA_VOCAB_PRE_TYPE_*), lower case. */
  readonly type: 'default' | 'llama3' | 'dbrx' | 'chatglm4' | 'gpt2' | 'qwen2' | 'starcoder'
  readonly regexes: readonly RegExp[]
  /** A word that is already a token is emitted whole, without merges (tokenizer.json `ignore_merges`). */
  readonly ignoreMerges: boolean
  /** add_bos default when `tokenizer.ggml.add_bos_token` is absent. */
  readonly addBos: boolean
  /** Detokenize removes spaces before punctuation and some contractions (clean_up_tokenization_spaces). */
  readonly cleanSpaces: boolean
  /** chatglm4 has no BOS unless the file names one. */
  readonly noDefaultBos: boolean
}

type Family = Omit<PreTokenizer, 'cleanSpaces'>

const FAMILY = {
  default: {type: 'default', regexes: DEFAULT.map(compile), ignoreMerges: false, addBos: false, noDefaultBos: false},
  llama3: {type: 'llama3', regexes: [compile(LLAMA3)], ignoreMerges: true, addBos: true, noDefaultBos: false},
  dbrx: {type: 'dbrx', regexes: [compile(LLAMA3)], ignoreMerges: false, addBos: false, noDefaultBos: false},
  chatglm4: {type: 'chatglm4', regexes: [compile(LLAMA3)], ignoreMerges: false, addBos: false, noDefaultBos: true},
  gpt2: {type: 'gpt2', regexes: [compile(GPT2)], ignoreMerges: false, addBos: false, noDefaultBos: false},
  qwen2: {type: 'qwen2', regexes: [compile(QWEN2)], ignoreMerges: false, addBos: false, noDefaultBos: false},
  starcoder: {type: 'starcoder', regexes: [compile('\\p{N}'), compile(GPT2)], ignoreMerges: false, addBos: false, noDefaultBos: false},
} as const satisfies Record<string, Family>

/** `tokenizer.ggml.pre` value → family and llama.cpp's clean_spaces for that name. */
const NAMES: ReadonlyArray<readonly [string, Family, boolean]> = [
  ['default', FAMILY.default, true],
  ['llama3', FAMILY.llama3, true],
  ['llama-v3', FAMILY.llama3, true],
  ['llama-bpe', FAMILY.llama3, true],
  ['falcon3', FAMILY.llama3, true],
  ['falcon-h1', FAMILY.llama3, true],
  ['pixtral', FAMILY.llama3, true],
  ['midm-2.0', FAMILY.llama3, true],
  ['lfm2', FAMILY.llama3, true],
  ['dbrx', FAMILY.dbrx, true],
  ['smaug-bpe', FAMILY.dbrx, true],
  ['glm4', FAMILY.chatglm4, true],
  ['chatglm-bpe', FAMILY.chatglm4, true],
  ['gpt-2', FAMILY.gpt2, true],
  ['phi-2', FAMILY.gpt2, true],
  ['gigachat', FAMILY.gpt2, true],
  ['a.x-4.0', FAMILY.gpt2, true],
  ['mellum', FAMILY.gpt2, true],
  ['mpt', FAMILY.gpt2, true],
  ['olmo', FAMILY.gpt2, true],
  ['jais', FAMILY.gpt2, true],
  ['exaone4', FAMILY.gpt2, true],
  ['trillion', FAMILY.gpt2, false],
  ['granite-docling', FAMILY.gpt2, false],
  ['qwen2', FAMILY.qwen2, false],
  ['deepseek-r1-qwen', FAMILY.qwen2, false],
  ['stablelm2', FAMILY.qwen2, true],
  ['megrez', FAMILY.qwen2, true],
  ['starcoder', FAMILY.starcoder, true],
  ['refact', FAMILY.starcoder, true],
  ['codeshell', FAMILY.starcoder, true],
  ['exaone', FAMILY.starcoder, true],
  ['minerva-7b', FAMILY.starcoder, true],
  ['command-r', FAMILY.starcoder, false],
  ['smollm', FAMILY.starcoder, false],
]

const BY_NAME: ReadonlyMap<string, PreTokenizer> = new Map(NAMES.map(([name, family, cleanSpaces]) => [name, {...family, cleanSpaces}]))

/** The pre-tokenizer named by `tokenizer.ggml.pre`, or undefined when we do not implement it. */
export function preTokenizerByName(name: string): PreTokenizer | undefined {
  return BY_NAME.get(name)
}

/** Every `tokenizer.ggml.pre` value we accept (for messages and docs). */
export const PRE_TOKENIZER_NAMES: readonly string[] = NAMES.map(([name]) => name)

/** Split text into words: each regex in turn splits every piece, keeping the gaps between matches. */
export function preTokenize(text: string, regexes: readonly RegExp[]): string[] {
  let pieces = text.length > 0 ? [text] : []
  for (const re of regexes) {
    const next: string[] = []
    for (const piece of pieces) {
      let last = 0
      for (const m of piece.matchAll(re)) {
        if (m.index > last) next.push(piece.slice(last, m.index))
        next.push(m[0])
        last = m.index + m[0].length
      }
      if (last < piece.length) next.push(piece.slice(last))
    }
    pieces = next
  }
  return pieces
}
