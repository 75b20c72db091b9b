/**
 * Loading a vocabulary from GGUF metadata: read and check every `tokenizer.*` key, then derive what
 * llama.cpp derives at load time (llama_vocab::impl::load) — defaults per tokenizer model, special
 * ids, attributes forced by token text, the end-of-generation set, the special-token match order.
 * Every refusal names the key and the value; nothing is repaired silently. The one rewrite llama.cpp
 * itself makes (an empty token becomes "[EMPTY_<id>]") is reproduced and documented.
 */
import {type GgufKv, GgufMetadata, GgufValueType, isGgufArray, valueTypeName} from '../gguf/index.js'
import {printable, quoted} from '../util/index.js'
import {metadataError, type MetadataSource, TokenizerErrorCode} from './errors.js'
import {type PreTokenizer, PRE_TOKENIZER_NAMES, preTokenizerByName} from './pre-tokenizers.js'
import {
  ABSENT_IDS,
  ALWAYS_RENDERED_TEXTS,
  DETECT_BY_TEXT,
  EOG_FIM_SLOTS,
  EOG_TEXTS,
  SPECIAL_ID_KEYS,
  SPECIAL_SLOTS,
  type SpecialSlot,
} from './special-ids.js'
import {ATTR_OF_TYPE, ATTR_SPECIAL, TokenAttr} from './token-attr.js'

export const TOKENIZER_KEYS = {
  model: 'tokenizer.ggml.model',
  pre: 'tokenizer.ggml.pre',
  tokens: 'tokenizer.ggml.tokens',
  scores: 'tokenizer.ggml.scores',
  tokenType: 'tokenizer.ggml.token_type',
  merges: 'tokenizer.ggml.merges',
  addBos: 'tokenizer.ggml.add_bos_token',
  addEos: 'tokenizer.ggml.add_eos_token',
  addSep: 'tokenizer.ggml.add_sep_token',
  addSpacePrefix: 'tokenizer.ggml.add_space_prefix',
} as const

export type TokenizerModel = 'llama' | 'gpt2'

/** Tokenizer models llama.cpp knows and we do not implement: refused by name (exit 5). */
const UNSUPPORTED_MODELS: ReadonlyMap<string, string> = new Map([
  ['bert', 'WordPiece (BERT)'],
  ['t5', 'Unigram (T5)'],
  ['rwkv', 'RWKV'],
  ['plamo2', 'PLaMo-2'],
  ['gemma4', 'Gemma 4 SentencePiece-style BPE'],
  ['hybriddna', 'hybrid DNA k-mer'],
  ['whitespace', 'whitespace BPE'],
  ['no_vocab', 'no vocabulary'],
  ['none', 'no vocabulary'],
])

interface ModelRules {
  /** llama.cpp's special ids when the file names none (before the out-of-vocabulary check). */
  readonly defaults: Partial<Record<SpecialSlot, number>>
  readonly addSpacePrefix: boolean
  readonly addBos: boolean
  readonly addEos: boolean
}

const MODEL_RULES: Record<TokenizerModel, ModelRules> = {
  llama: {defaults: {bos: 1, eos: 2, unk: 0}, addSpacePrefix: true, addBos: true, addEos: false},
  gpt2: {defaults: {bos: 11, eos: 11}, addSpacePrefix: false, addBos: false, addEos: false},
}

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/

export type SpecialIds = Readonly<Record<SpecialSlot, number | undefined>>

export interface Vocab {
  readonly model: TokenizerModel
  /** `tokenizer.ggml.pre` as written (gpt2 only); undefined when absent (llama.cpp then uses "default"). */
  readonly preName: string | undefined
  readonly pre: PreTokenizer | undefined
  /** Token texts by id ("[EMPTY_<id>]" where the file has an empty string, as llama.cpp does). */
  readonly tokens: readonly string[]
  readonly scores: Float32Array
  /** TokenAttr bits by id, after llama.cpp's load-time overrides. */
  readonly attrs: Uint16Array
  readonly tokenToId: ReadonlyMap<string, number>
  /** BPE merges: "left right" → rank (the line index; the first of duplicate lines wins). */
  readonly mergeRanks: ReadonlyMap<string, number>
  readonly special: SpecialIds
  readonly addBos: boolean
  readonly addEos: boolean
  readonly addSpacePrefix: boolean
  readonly ignoreMerges: boolean
  readonly cleanSpaces: boolean
  readonly eog: ReadonlySet<number>
  /** Ids matched in the text before tokenizing, longest text (in UTF-8 bytes) first, then lowest id. */
  readonly specialTokens: readonly number[]
  /** SPM byte fallback: byte → id of "<0xXX>" (or of the one-character token), -1 when the vocabulary has neither. */
  readonly byteTokens: Int32Array
}

/** Read and check the `tokenizer.*` metadata of a model. */
export function loadVocab(kvs: ReadonlyMap<string, GgufKv>, source: MetadataSource): Vocab {
  const meta = new GgufMetadata(kvs, source.offsets, source.file)
  const fail = (code: Parameters<typeof metadataError>[0], key: string, detail: string) => metadataError(code, source, key, detail)

  const modelName = meta.string(TOKENIZER_KEYS.model)
  if (modelName !== 'llama' && modelName !== 'gpt2') {
    const known = UNSUPPORTED_MODELS.get(modelName)
    throw fail(
      TokenizerErrorCode.unsupported,
      TOKENIZER_KEYS.model,
      known
        ? `tokenizer model '${printable(modelName)}' (${known}) is not supported; supported: 'llama' (SentencePiece), 'gpt2' (byte-level BPE)`
        : `unknown tokenizer model '${printable(modelName)}'; supported: 'llama' (SentencePiece), 'gpt2' (byte-level BPE)`,
    )
  }
  const model: TokenizerModel = modelName
  const rules = MODEL_RULES[model]

  let preName: string | undefined
  let pre: PreTokenizer | undefined
  if (model === 'gpt2') {
    preName = meta.stringOr(TOKENIZER_KEYS.pre, undefined)
    pre = preTokenizerByName(preName ?? 'default')
    if (!pre) {
      throw fail(
        TokenizerErrorCode.unsupported,
        TOKENIZER_KEYS.pre,
        `pre-tokenizer '${printable(preName ?? '')}' is not supported; supported: ${PRE_TOKENIZER_NAMES.map((n) => `'${n}'`).join(', ')}`,
      )
    }
  }

  const tokens = readTokens(meta, fail)
  const n = tokens.length
  const tokenToId = new Map<string, number>()
  tokens.forEach((t, id) => {
    const prev = tokenToId.get(t)
    if (prev !== undefined)
      throw fail(TokenizerErrorCode.badVocab, TOKENIZER_KEYS.tokens, `duplicate token ${quoted(t)} at ids ${prev} and ${id}`)
    tokenToId.set(t, id)
  })
  const scores = readScores(kvs, n, fail)
  const attrs = readAttrs(meta, n, fail)
  tokens.forEach((t, id) => {
    if (attrs[id]! & TokenAttr.byte && !BYTE_TOKEN.test(t)) {
      throw fail(
        TokenizerErrorCode.badVocab,
        TOKENIZER_KEYS.tokenType,
        `token ${id} ${quoted(t)} has type byte (6) but is not spelled <0xXX>`,
      )
    }
  })
  const mergeRanks = model === 'gpt2' ? readMerges(meta, fail) : new Map<string, number>()

  // Flags: the model's defaults, then the pre-tokenizer's, then the file's keys.
  const addSpacePrefix = meta.boolOr(TOKENIZER_KEYS.addSpacePrefix, rules.addSpacePrefix)
  const addBos = meta.boolOr(TOKENIZER_KEYS.addBos, pre ? pre.addBos : rules.addBos)
  const addEos = meta.boolOr(TOKENIZER_KEYS.addEos, rules.addEos)
  const addSep = meta.boolOr(TOKENIZER_KEYS.addSep, false)

  // Special ids: a default outside the vocabulary is dropped (llama.cpp "disabling"); a key overrides it.
  const special = Object.fromEntries(SPECIAL_SLOTS.map((slot) => [slot, undefined])) as Record<SpecialSlot, number | undefined>
  for (const [slot, id] of Object.entries(rules.defaults) as Array<[SpecialSlot, number]>) {
    if (slot === 'bos' && pre?.noDefaultBos) continue
    if (id < n) special[slot] = id
  }
  for (const [key, slot] of SPECIAL_ID_KEYS) {
    if (!meta.has(key)) continue
    const id = meta.integer(key)
    if (ABSENT_IDS.has(id)) continue
    if (id < 0 || id >= n) throw fail(TokenizerErrorCode.badSpecialToken, key, `token id ${id} is outside the vocabulary (${n} tokens)`)
    special[slot] = id
  }

  const needs: ReadonlyArray<readonly [boolean, string, SpecialSlot, string]> = [
    [addBos, TOKENIZER_KEYS.addBos, 'bos', 'tokenizer.ggml.bos_token_id'],
    [addEos, TOKENIZER_KEYS.addEos, 'eos', 'tokenizer.ggml.eos_token_id'],
    [addSep, TOKENIZER_KEYS.addSep, 'sep', 'tokenizer.ggml.seperator_token_id'],
  ]
  for (const [on, key, slot, idKey] of needs) {
    if (on && special[slot] === undefined) throw fail(TokenizerErrorCode.badSpecialToken, key, `is true, but ${idKey} is not set`)
  }

  // Slots filled from the token text (first listed text present); the token found becomes a control token.
  for (const [slot, texts] of DETECT_BY_TEXT) {
    if (special[slot] !== undefined) continue
    const id = texts.map((t) => tokenToId.get(t)).find((x) => x !== undefined)
    if (id !== undefined) {
      special[slot] = id
      attrs[id] = attrs[id]! | TokenAttr.control
    }
  }

  // llama.cpp: a control token whose text contains "unused" is marked unused (e.g. Gemma's <unused12>).
  tokens.forEach((t, id) => {
    if (attrs[id]! & TokenAttr.control && t.includes('unused')) attrs[id] = attrs[id]! | TokenAttr.unused
  })

  const eog = new Set<number>()
  for (const slot of EOG_FIM_SLOTS) {
    const id = special[slot]
    if (id !== undefined) eog.add(id)
  }
  tokens.forEach((t, id) => {
    if (EOG_TEXTS.has(t)) {
      eog.add(id)
      attrs[id] = attrs[id]! | TokenAttr.control
    }
    if (ALWAYS_RENDERED_TEXTS.has(t)) attrs[id] = TokenAttr.userDefined
  })
  for (const slot of ['eos', 'eot', 'eom'] as const) {
    const id = special[slot]
    if (id !== undefined) eog.add(id)
  }
  dropEogExceptions(eog, tokens, attrs)

  const specialTokens = specialMatchOrder(tokens, attrs)
  applyNameRules(meta, preName, tokenToId, attrs, specialTokens, fail)

  const cleanSpaces = pre ? pre.cleanSpaces : false
  return {
    model,
    preName,
    pre,
    tokens,
    scores,
    attrs,
    tokenToId,
    mergeRanks,
    special,
    addBos,
    addEos,
    addSpacePrefix,
    ignoreMerges: pre?.ignoreMerges ?? false,
    cleanSpaces,
    eog,
    specialTokens,
    byteTokens: byteFallbackTable(tokenToId),
  }
}

type Fail = (code: Parameters<typeof metadataError>[0], key: string, detail: string) => Error

function readTokens(meta: GgufMetadata, fail: Fail): string[] {
  const raw = meta.stringArray(TOKENIZER_KEYS.tokens)
  if (raw.length === 0) throw fail(TokenizerErrorCode.badVocab, TOKENIZER_KEYS.tokens, 'the vocabulary is empty')
  // llama.cpp: "empty token at index i" is replaced by "[EMPTY_i]" (with a warning) so that it can never match text.
  return raw.map((t, i) => (t.length === 0 ? `[EMPTY_${i}]` : t))
}

function readScores(kvs: ReadonlyMap<string, GgufKv>, n: number, fail: Fail): Float32Array {
  const kv = kvs.get(TOKENIZER_KEYS.scores)
  if (!kv) return new Float32Array(n)
  const key = TOKENIZER_KEYS.scores
  if (!isGgufArray(kv.value)) throw fail(TokenizerErrorCode.badVocab, key, `expected an array of f32, found ${valueTypeName(kv.type)}`)
  const {itemType, items} = kv.value
  // llama.cpp accepts f32 or i32 scores.
  if (itemType !== GgufValueType.FLOAT32 && itemType !== GgufValueType.INT32) {
    throw fail(TokenizerErrorCode.badVocab, key, `expected an array of f32 (or i32), found an array of ${valueTypeName(itemType)}`)
  }
  if (items.length !== n) throw fail(TokenizerErrorCode.badVocab, key, `has ${items.length} items but ${TOKENIZER_KEYS.tokens} has ${n}`)
  const scores = Float32Array.from(items as Float32Array | Int32Array)
  const bad = scores.findIndex((s) => Number.isNaN(s))
  if (bad >= 0) throw fail(TokenizerErrorCode.badVocab, key, `score of token ${bad} is NaN`)
  return scores
}

function readAttrs(meta: GgufMetadata, n: number, fail: Fail): Uint16Array {
  const attrs = new Uint16Array(n)
  if (!meta.has(TOKENIZER_KEYS.tokenType)) return attrs.fill(TokenAttr.normal)
  const types = meta.array(TOKENIZER_KEYS.tokenType, GgufValueType.INT32).items as Int32Array
  if (types.length !== n) {
    throw fail(TokenizerErrorCode.badVocab, TOKENIZER_KEYS.tokenType, `has ${types.length} items but ${TOKENIZER_KEYS.tokens} has ${n}`)
  }
  for (let id = 0; id < n; id++) {
    const attr = ATTR_OF_TYPE[types[id]!]
    if (attr === undefined) {
      throw fail(
        TokenizerErrorCode.badVocab,
        TOKENIZER_KEYS.tokenType,
        `token ${id} has type ${types[id]}, not one of 0..6 (undefined, normal, unknown, control, user defined, unused, byte)`,
      )
    }
    attrs[id] = attr
  }
  return attrs
}

/**
 * Merge lines are "left right", split at the first space after the first character (llama.cpp's
 * `find(' ', 1)`, so a left part may itself start with a space). A line without such a space, or with
 * nothing after it, is refused; llama.cpp would register an empty pair. Lines are kept as map keys:
 * byte-level symbols never contain a raw space, so "left right" names exactly one pair.
 */
function readMerges(meta: GgufMetadata, fail: Fail): Map<string, number> {
  if (!meta.has(TOKENIZER_KEYS.merges))
    throw fail(TokenizerErrorCode.badMerges, TOKENIZER_KEYS.merges, 'is required for a gpt2 (BPE) tokenizer and is missing')
  const lines = meta.stringArray(TOKENIZER_KEYS.merges)
  const ranks = new Map<string, number>()
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const space = line.indexOf(' ', 1)
    if (space < 0 || space === line.length - 1) {
      throw fail(TokenizerErrorCode.badMerges, TOKENIZER_KEYS.merges, `line ${i} ${quoted(line)} is not "left right"`)
    }
    if (!ranks.has(line)) ranks.set(line, i)
  }
  return ranks
}

/** llama.cpp's workarounds that take tokens back out of the end-of-generation set. */
function dropEogExceptions(eog: Set<number>, tokens: readonly string[], attrs: Uint16Array): void {
  const inEog = (text: string) => [...eog].find((id) => tokens[id] === text)
  // o200k_harmony (gpt-oss) and solar-open: "<|end|>" ends a message, not the generation.
  const end = inEog('<|end|>')
  const ret = inEog('<|return|>') !== undefined
  const call = inEog('<|call|>') !== undefined || inEog('<|calls|>') !== undefined
  const flush = inEog('<|flush|>') !== undefined
  if (end !== undefined && ((ret && call) || (call && flush))) {
    eog.delete(end)
    attrs[end] = TokenAttr.userDefined
  }
  // gemma4 and paddleocr: "</s>" is not an end of generation when "<|tool_response>" is.
  const s = inEog('</s>')
  if (s !== undefined && inEog('<|tool_response>') !== undefined) {
    eog.delete(s)
    attrs[s] = TokenAttr.normal
  }
}

/** cache_special_tokens: control, user-defined and unknown tokens, longest UTF-8 text first (ties: lowest id). */
function specialMatchOrder(tokens: readonly string[], attrs: Uint16Array): number[] {
  const ids: number[] = []
  attrs.forEach((a, id) => {
    if (a & ATTR_SPECIAL) ids.push(id)
  })
  const bytes = new Map(ids.map((id) => [id, Buffer.byteLength(tokens[id]!, 'utf8')]))
  return ids.sort((a, b) => bytes.get(b)! - bytes.get(a)! || a - b)
}

/** Per-model attribute rules llama.cpp applies by model, pre-tokenizer or architecture name. */
function applyNameRules(
  meta: GgufMetadata,
  preName: string | undefined,
  tokenToId: ReadonlyMap<string, number>,
  attrs: Uint16Array,
  specialTokens: readonly number[],
  fail: Fail,
): void {
  const name = meta.stringOr('general.name', '').toLowerCase()
  const arch = meta.stringOr('general.architecture', '')
  const pre = preName ?? ''
  const has = (s: string, subs: readonly string[]) => subs.some((x) => s.includes(x))
  const set = (text: string, attr: number, on: boolean, required: boolean) => {
    const id = tokenToId.get(text)
    if (id === undefined) {
      // llama.cpp looks these up with token_to_id.at() and fails with "_Map_base::at".
      if (required)
        throw fail(
          TokenizerErrorCode.badVocab,
          'general.name',
          `'${printable(name)}' is treated as Phi-3, which requires the token ${quoted(text)}; the vocabulary has none`,
        )
      return
    }
    attrs[id] = on ? attrs[id]! | attr : attrs[id]! & ~attr
  }
  if (has(pre, ['jina-v2-de', 'jina-v2-es', 'jina-v2-code']) || has(arch, ['nomic-bert-moe', 'jina-bert-v3'])) {
    set('<mask>', TokenAttr.lstrip, true, false)
  } else if (has(name, ['phi-3', 'phi3'])) {
    for (const id of specialTokens) attrs[id] = attrs[id]! | TokenAttr.rstrip
    set('</s>', TokenAttr.rstrip, true, true)
    for (const t of ['<unk>', '<s>', '<|endoftext|>']) set(t, TokenAttr.rstrip, false, true)
  } else if (has(name, ['modern-bert'])) {
    set('[MASK]', TokenAttr.lstrip, true, false)
  }
}

/** SPM byte fallback (llama_vocab::byte_to_token): "<0xXX>" with upper-case hex, else the one-character token. */
function byteFallbackTable(tokenToId: ReadonlyMap<string, number>): Int32Array {
  const table = new Int32Array(256).fill(-1)
  for (let b = 0; b < 256; b++) {
    const hex = b.toString(16).toUpperCase().padStart(2, '0')
    const id = tokenToId.get(`<0x${hex}>`) ?? (b < 0x80 ? tokenToId.get(String.fromCharCode(b)) : undefined)
    if (id !== undefined) table[b] = id
  }
  return table
}
