// Outside fact: llama.cpp itself (node-llama-cpp 3.22.1, llama.cpp v0.5.0), live, on SentencePiece
// vocabularies: stories260K's (real), and stories260K's extended with control and user-defined tokens
// carried by tiny random models of our writer, named so that llama.cpp's Phi-3 rule applies or not.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, it} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel, type LlamaModel} from 'node-llama-cpp'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import {type GgufKv, GgufValueType, isGgufArray, readGgufModel, writeGguf} from '../../../src/lib/gguf/index.js'
import {createTokenizer, TokenizerError, TokenizerErrorCode, TokenType} from '../../../src/lib/tokenizer/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'
import {LLAMA_CPP_ONLY_POOL, MIXED_SAMPLES, MIXED_TEXT, randomTexts} from './mixed-text.js'

let llama: Llama | undefined
let skipReason: string | false = hasShared() ? false : NO_SHARED_REASON
const dir = mkdtempSync(join(tmpdir(), 'runner-tok-spm-'))

before(async () => {
  if (skipReason) return
  try {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  } catch (e) {
    skipReason = `node-llama-cpp has no usable prebuilt binary here: ${e instanceof Error ? e.message : String(e)}`
  }
})
after(() => rmSync(dir, {recursive: true, force: true}))

/** stories260K's tokenizer keys with extra tokens appended (text, token_type). */
async function extendedVocab(path: string, extra: ReadonlyArray<readonly [string, number]>): Promise<void> {
  const src = readGgufModel(sharedPath('models', 'stories260K.gguf'))
  const kvs = src.kvs
    .filter((kv) => kv.key.startsWith('tokenizer.'))
    .map((kv): GgufKv => {
      if (typeof kv.value !== 'object' || !isGgufArray(kv.value)) return kv
      const items = kv.value.items
      switch (kv.key) {
        case 'tokenizer.ggml.tokens':
          return {...kv, value: {itemType: GgufValueType.STRING, items: [...(items as string[]), ...extra.map(([t]) => t)]}}
        case 'tokenizer.ggml.scores':
          return {
            ...kv,
            value: {itemType: GgufValueType.FLOAT32, items: Float32Array.from([...(items as Float32Array), ...extra.map(() => 0)])},
          }
        case 'tokenizer.ggml.token_type':
          return {
            ...kv,
            value: {itemType: GgufValueType.INT32, items: Int32Array.from([...(items as Int32Array), ...extra.map(([, type]) => type)])},
          }
        default:
          return kv
      }
    })
  await writeGguf(path, {kvs, tensors: []})
}

async function tinyModel(name: string, tokenizerFrom: string): Promise<string> {
  const out = join(dir, `${name}.gguf`)
  await makeTestModel(out, {
    arch: 'llama',
    nEmbd: 8,
    nLayer: 1,
    nHead: 2,
    nHeadKv: 1,
    nFf: 16,
    nCtx: 64,
    type: 'f32',
    seed: 1n,
    tokenizerFrom,
    name,
  })
  return out
}

function compare(model: LlamaModel, path: string, texts: readonly string[]): number {
  const tok = createTokenizer(readGgufModel(path))
  let n = 0
  for (const text of texts) {
    for (const parseSpecial of [false, true]) {
      const ids = Array.from(model.tokenize(text, parseSpecial))
      assert.deepEqual(tok.encode(text, {parseSpecial}), ids, `${JSON.stringify(text)} parseSpecial=${parseSpecial}`)
      assert.equal(
        tok.decode(ids, {unparseSpecial: parseSpecial}),
        model.detokenize(ids, parseSpecial),
        `detokenize ${JSON.stringify(text)}`,
      )
      n++
    }
  }
  return n
}

const SPECIAL_TEXTS = [
  '<s>hello</s> world',
  'a<|end|>   b <|endoftext|>\n\nc',
  '<tool>call</tool> x <tool>',
  '  <|end|>',
  '<unk> and <s><s> twice',
  'x<|end|>',
]

describe('SentencePiece against llama.cpp, live', {skip: skipReason}, () => {
  it('stories260K: random strings, mixed text, plain and special parsing, detokenize', async (t) => {
    if (!llama) return t.skip(skipReason || 'no llama')
    const path = sharedPath('models', 'stories260K.gguf')
    const model = await llama.loadModel({modelPath: path, vocabOnly: true})
    try {
      const n = compare(model, path, [
        ...MIXED_SAMPLES,
        MIXED_TEXT,
        ...SPECIAL_TEXTS,
        ...randomTexts(5005, 400, 40, {extra: LLAMA_CPP_ONLY_POOL}),
      ])
      t.diagnostic(`${n} tokenizations matched`)
    } finally {
      await model.dispose()
    }
  })

  it('control and user-defined tokens: user-defined ones are split out even without parse_special', async (t) => {
    if (!llama) return t.skip(skipReason || 'no llama')
    const vocab = join(dir, 'extended.gguf')
    await extendedVocab(vocab, [
      ['<|endoftext|>', TokenType.control],
      ['<|end|>', TokenType.control],
      ['<tool>', TokenType.userDefined],
      ['</tool>', TokenType.userDefined],
    ])
    const path = await tinyModel('runner-test-extended', vocab)
    const model = await llama.loadModel({modelPath: path, vocabOnly: true})
    try {
      compare(model, path, [...SPECIAL_TEXTS, ...randomTexts(6006, 100, 30, {extra: ['<|end|>', '<tool>', '</tool>']})])
      const tok = createTokenizer(readGgufModel(path))
      assert.equal(tok.eot, tok.tokenId('<|end|>'))
      assert.deepEqual(
        [...tok.eogTokens].sort((a, b) => a - b),
        [2, tok.tokenId('<|endoftext|>'), tok.tokenId('<|end|>')].sort((a, b) => a! - b!),
      )
    } finally {
      await model.dispose()
    }
  })

  it('a model named like Phi-3 strips spaces after its special tokens (RSTRIP), as llama.cpp does', async (t) => {
    if (!llama) return t.skip(skipReason || 'no llama')
    const vocab = join(dir, 'phi.gguf')
    await extendedVocab(vocab, [
      ['<|endoftext|>', TokenType.control],
      ['<|end|>', TokenType.control],
    ])
    const path = await tinyModel('phi3-runner-test', vocab)
    const model = await llama.loadModel({modelPath: path, vocabOnly: true})
    try {
      compare(model, path, SPECIAL_TEXTS)
      const tok = createTokenizer(readGgufModel(path))
      // "<|end|>   b": the spaces after <|end|> are dropped before "b" is tokenized.
      assert.deepEqual(tok.encode('<|end|>   b', {parseSpecial: true}), tok.encode('<|end|>b', {parseSpecial: true}))
    } finally {
      await model.dispose()
    }
  })

  it('a model named like Phi-3 without <|endoftext|> fails in llama.cpp and is refused by us', async (t) => {
    if (!llama) return t.skip(skipReason || 'no llama')
    const path = await tinyModel('phi3-no-endoftext', sharedPath('models', 'stories260K.gguf'))
    await assert.rejects(llama.loadModel({modelPath: path, vocabOnly: true}))
    assert.throws(
      () => createTokenizer(readGgufModel(path)),
      (e: unknown) =>
        e instanceof TokenizerError &&
        e.code === TokenizerErrorCode.badVocab &&
        e.field === 'general.name' &&
        /<\|endoftext\|>/.test(e.message),
    )
  })
})
