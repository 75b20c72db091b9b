// Small synthetic vocabularies as GGUF metadata maps, for the rule and refusal tests.
import {type GgufKv, GgufValueType} from '../../../src/lib/gguf/index.js'
import {TokenType} from '../../../src/lib/tokenizer/index.js'

export const str = (key: string, value: string): GgufKv => ({key, type: GgufValueType.STRING, value})
export const u32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.UINT32, value})
export const i32 = (key: string, value: number): GgufKv => ({key, type: GgufValueType.INT32, value})
export const bool = (key: string, value: boolean): GgufKv => ({key, type: GgufValueType.BOOL, value})
export const strings = (key: string, items: string[]): GgufKv => ({
  key,
  type: GgufValueType.ARRAY,
  value: {itemType: GgufValueType.STRING, items},
})
export const f32s = (key: string, items: number[]): GgufKv => ({
  key,
  type: GgufValueType.ARRAY,
  value: {itemType: GgufValueType.FLOAT32, items: Float32Array.from(items)},
})
export const i32s = (key: string, items: number[]): GgufKv => ({
  key,
  type: GgufValueType.ARRAY,
  value: {itemType: GgufValueType.INT32, items: Int32Array.from(items)},
})

export function kvMap(kvs: readonly GgufKv[]): Map<string, GgufKv> {
  return new Map(kvs.map((kv) => [kv.key, kv]))
}

/** Replace (or add, or with `undefined` remove) keys of a map. */
export function withKeys(base: ReadonlyMap<string, GgufKv>, changes: ReadonlyArray<GgufKv | [string, undefined]>): Map<string, GgufKv> {
  const m = new Map(base)
  for (const c of changes) {
    if (Array.isArray(c)) m.delete(c[0])
    else m.set(c.key, c)
  }
  return m
}

export interface SpmToken {
  readonly text: string
  readonly score?: number
  readonly type?: number
}

/**
 * A SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens (unless `bytes` is false), then `pieces`.
 * Ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces in order.
 */
export function spmVocab(pieces: readonly SpmToken[], options: {bytes?: boolean; extra?: readonly GgufKv[]} = {}): Map<string, GgufKv> {
  const all: SpmToken[] = [
    {text: '<unk>', type: TokenType.unknown},
    {text: '<s>', type: TokenType.control},
    {text: '</s>', type: TokenType.control},
    ...(options.bytes === false
      ? []
      : Array.from({length: 256}, (_, b) => ({text: `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, type: TokenType.byte}))),
    ...pieces,
  ]
  return kvMap([
    str('tokenizer.ggml.model', 'llama'),
    strings(
      'tokenizer.ggml.tokens',
      all.map((t) => t.text),
    ),
    f32s(
      'tokenizer.ggml.scores',
      all.map((t) => t.score ?? 0),
    ),
    i32s(
      'tokenizer.ggml.token_type',
      all.map((t) => t.type ?? TokenType.normal),
    ),
    u32('tokenizer.ggml.bos_token_id', 1),
    u32('tokenizer.ggml.eos_token_id', 2),
    u32('tokenizer.ggml.unknown_token_id', 0),
    ...(options.extra ?? []),
  ])
}

/** GPT-2's byte alphabet as token texts, byte order (ids 0..255). */
export function byteAlphabet(): string[] {
  const self = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  let n = 0
  return Array.from({length: 256}, (_, b) => String.fromCharCode(self(b) ? b : 256 + n++))
}

/**
 * A byte-level BPE vocabulary: the 256 byte characters (ids 0..255, unless `alphabet` is false), then
 * `tokens`, with `merges` in rank order.
 */
export function bpeVocab(
  tokens: readonly string[],
  merges: readonly string[],
  options: {pre?: string; alphabet?: boolean; types?: readonly number[]; extra?: readonly GgufKv[]} = {},
): Map<string, GgufKv> {
  const all = [...(options.alphabet === false ? [] : byteAlphabet()), ...tokens]
  const types = all.map((_, i) => options.types?.[i - (all.length - tokens.length)] ?? TokenType.normal)
  return kvMap([
    str('tokenizer.ggml.model', 'gpt2'),
    str('tokenizer.ggml.pre', options.pre ?? 'gpt-2'),
    strings('tokenizer.ggml.tokens', all),
    i32s('tokenizer.ggml.token_type', types),
    strings('tokenizer.ggml.merges', [...merges]),
    ...(options.extra ?? []),
  ])
}
