// POST /v1/embeddings through the clients people point at a local server: the official `openai`
// SDK (its default path asks for base64 and decodes it itself; explicit "float" and "base64" too),
// the Vercel AI SDK's embed/embedMany over @ai-sdk/openai-compatible, and LangChain's
// OpenAIEmbeddings. The vectors must be bitwise the library call's (src/lib/embed) and the CLI's
// (`runner embed`, spawned from dist/: build first), whose agreement with llama.cpp is
// test/differential/embeddings.test.ts. The route shares slots with generations through the scheduler.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {createOpenAICompatible} from '@ai-sdk/openai-compatible'
import {OpenAIEmbeddings} from '@langchain/openai'
import {embed as aiEmbed, embedMany} from 'ai'
import OpenAI from 'openai'

import {embed} from '../../src/lib/embed/index.js'
import {Model, Session} from '../../src/lib/engine/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'
import {postRaw, startTestServer, type TestServer, waitIdle} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const MODEL = 'stories260K'
const N_CTX = 128
const TEXTS = ['Once upon a time, there was a little girl named Lily.', 'The cat sat on the mat.', 'She liked to play with her red ball.']

/** Bytes of a vector as float32, for bitwise comparison of what each client hands back. */
const f32bits = (v: ArrayLike<number>) => Buffer.from(Float32Array.from(v).buffer)

async function refused(promise: Promise<unknown>, status: number, param: string | null, code?: string): Promise<string> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an OpenAI APIError, got ${String(error)}`)
    assert.equal(error.status, status, error.message)
    assert.equal(error.param, param, error.message)
    if (code !== undefined) assert.equal(error.code, code, error.message)
    return error.message
  }
  assert.fail(`expected HTTP ${status}, but the request succeeded`)
}

describe('POST /v1/embeddings', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  /** The library call's vectors and token counts on a context like a slot's (nCtx, 1 thread, F16 KV). */
  let expected: {vectors: Float32Array[]; tokens: number[]}
  before(async () => {
    t = await startTestServer({modelPath: STORIES, parallel: 1, nCtx: N_CTX, threadsPerSlot: 1})
    const model = await Model.load(STORIES)
    const ctx = await model.createContext({nCtx: N_CTX, threads: 1, kvType: 'f16'})
    const r = await embed(new Session(ctx), TEXTS)
    expected = {vectors: r.embeddings, tokens: r.tokenCounts}
    ctx.dispose()
    model.dispose()
  })
  after(async () => t?.close())

  const same = (got: ReadonlyArray<ArrayLike<number>>, what: string) => {
    assert.equal(got.length, TEXTS.length, `${what}: one vector per input`)
    got.forEach((v, i) => assert.ok(f32bits(v).equals(f32bits(expected.vectors[i]!)), `${what}: input ${i} differs from the library call`))
  }

  test('the openai SDK: its default (base64, decoded by the SDK), explicit float and explicit base64 give the library’s vectors', async () => {
    const byDefault = await t.client.embeddings.create({model: MODEL, input: TEXTS})
    assert.equal(byDefault.object, 'list')
    assert.equal(byDefault.model, MODEL)
    assert.deepEqual(
      byDefault.data.map((d) => [d.object, d.index]),
      TEXTS.map((_, i) => ['embedding', i]),
    )
    same(
      byDefault.data.map((d) => d.embedding),
      'SDK default',
    )
    const total = expected.tokens.reduce((a, b) => a + b, 0)
    assert.deepEqual(byDefault.usage, {prompt_tokens: total, total_tokens: total})

    const float = await t.client.embeddings.create({model: MODEL, input: TEXTS, encoding_format: 'float'})
    assert.ok(Array.isArray(float.data[0]!.embedding) && typeof float.data[0]!.embedding[0] === 'number')
    same(
      float.data.map((d) => d.embedding),
      'float',
    )

    const b64 = await t.client.embeddings.create({model: MODEL, input: TEXTS, encoding_format: 'base64'})
    const decoded = b64.data.map((d) => {
      assert.equal(typeof d.embedding, 'string', 'explicit base64 is handed back as the string')
      const bytes = Buffer.from(d.embedding as unknown as string, 'base64')
      assert.equal(bytes.length, 4 * 64)
      return Array.from({length: bytes.length / 4}, (_, i) => bytes.readFloatLE(4 * i))
    })
    same(decoded, 'base64 (little-endian float32)')

    const one = await t.client.embeddings.create({model: MODEL, input: TEXTS[1]!, dimensions: 64, user: 'u-1'})
    assert.ok(f32bits(one.data[0]!.embedding).equals(f32bits(expected.vectors[1]!)), 'a lone string; dimensions = n_embd and user accepted')
  })

  test('token ids in: a list of ids and lists of ids embed those tokens as they are', async () => {
    const model = await Model.load(STORIES)
    const ids = TEXTS.map((x) => model.tokenizer.encode(x, {addSpecial: true}))
    model.dispose()
    const lists = await t.client.embeddings.create({model: MODEL, input: ids, encoding_format: 'float'})
    same(
      lists.data.map((d) => d.embedding),
      'lists of token ids',
    )
    const flat = await t.client.embeddings.create({model: MODEL, input: ids[2]!, encoding_format: 'float'})
    assert.ok(f32bits(flat.data[0]!.embedding).equals(f32bits(expected.vectors[2]!)))
    assert.equal(flat.usage.prompt_tokens, ids[2]!.length)
  })

  test('refusals name the field: empty input, too long input[i], dimensions, bad ids, unknown fields, the model', async () => {
    const c = t.client
    await refused(c.embeddings.create({model: MODEL, input: ''}), 400, 'input')
    await refused(c.embeddings.create({model: MODEL, input: ['ok', '']}), 400, 'input[1]')
    await refused(c.embeddings.create({model: MODEL, input: []}), 400, 'input')
    await refused(c.embeddings.create({model: MODEL, input: [[1, 2], []]}), 400, 'input[1]')
    const long = 'Once upon a time there was a little girl. '.repeat(20)
    const msg = await refused(c.embeddings.create({model: MODEL, input: ['ok', long]}), 400, 'input[1]', 'context_length_exceeded')
    assert.match(msg, /input\[1\] has \d+ tokens, more than the context of 128/)
    const dims = await refused(c.embeddings.create({model: MODEL, input: 'x', dimensions: 32}), 400, 'dimensions', 'unsupported_value')
    assert.match(dims, /64 dimensions/)
    await refused(c.embeddings.create({model: MODEL, input: [[1, 512]]}), 400, 'input[0]')
    await refused(c.embeddings.create({model: MODEL, input: [1, -2]}), 400, 'input[1]')
    await refused(c.embeddings.create({model: 'text-embedding-3-small', input: 'x'}), 404, 'model', 'model_not_found')
    const unknown = await postRaw(t.url, '/v1/embeddings', JSON.stringify({model: MODEL, input: 'x', embd_normalize: 2}))
    assert.deepEqual([unknown.status, unknown.body.error.param, unknown.body.error.code], [400, 'embd_normalize', 'unknown_parameter'])
    const format = await postRaw(t.url, '/v1/embeddings', JSON.stringify({model: MODEL, input: 'x', encoding_format: 'int8'}))
    assert.deepEqual([format.status, format.body.error.param], [400, 'encoding_format'])
    const missing = await postRaw(t.url, '/v1/embeddings', JSON.stringify({model: MODEL}))
    assert.deepEqual([missing.status, missing.body.error.param, missing.body.error.code], [400, 'input', 'missing_required_parameter'])
  })

  test('the Vercel AI SDK: embed and embedMany over @ai-sdk/openai-compatible', async () => {
    const provider = createOpenAICompatible({name: 'runner', baseURL: `${t.url}/v1`})
    const model = provider.embeddingModel(MODEL)
    const many = await embedMany({model, values: TEXTS, maxRetries: 0})
    same(many.embeddings, 'embedMany')
    assert.equal(
      many.usage.tokens,
      expected.tokens.reduce((a, b) => a + b, 0),
    )
    const one = await aiEmbed({model, value: TEXTS[0]!, maxRetries: 0})
    assert.ok(f32bits(one.embedding).equals(f32bits(expected.vectors[0]!)))
    assert.equal(one.usage.tokens, expected.tokens[0])
  })

  test('LangChain OpenAIEmbeddings: embedDocuments and embedQuery', async () => {
    const embeddings = new OpenAIEmbeddings({model: MODEL, apiKey: 'unused', maxRetries: 0, configuration: {baseURL: `${t.url}/v1`}})
    same(await embeddings.embedDocuments(TEXTS), 'embedDocuments')
    assert.ok(f32bits(await embeddings.embedQuery(TEXTS[2]!)).equals(f32bits(expected.vectors[2]!)))
  })

  test('the CLI gives the same vectors: --json, and the plain lines', async () => {
    const args = ['embed', '-m', STORIES, '-c', String(N_CTX), '-t', '1', ...TEXTS.flatMap((x) => ['-p', x])]
    const json = await runCliAsync([...args, '--json'])
    assert.equal(json.status, 0, json.stderr)
    same(JSON.parse(json.stdout) as number[][], 'runner embed --json')
    const plain = await runCliAsync(['embed', '-m', STORIES, '-c', String(N_CTX), '-t', '2', '-b', '3', ...TEXTS.flatMap((x) => ['-p', x])])
    assert.equal(plain.status, 0, plain.stderr)
    same(
      plain.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' ').map(Number)),
      'runner embed (2 threads, batch 3)',
    )
  })

  test('on the one slot an embedding waits for a generation and leaves a cache the next generation uses truthfully', async () => {
    const chat = {model: MODEL, messages: [{role: 'user' as const, content: 'Tell me a story.'}], max_tokens: 24, temperature: 0}
    const alone = (await t.client.chat.completions.create(chat)).choices[0]!.message.content
    const [generated, embedded] = await Promise.all([
      t.client.chat.completions.create(chat),
      t.client.embeddings.create({model: MODEL, input: TEXTS, encoding_format: 'float'}),
    ])
    assert.equal(generated.choices[0]!.message.content, alone)
    same(
      embedded.data.map((d) => d.embedding),
      'beside a generation',
    )
    // The slot now caches the last input's tokens; a generation after it is the same as before.
    assert.equal((await t.client.chat.completions.create(chat)).choices[0]!.message.content, alone)
    await waitIdle(t.url)
  })

  test('/v1/capabilities lists the route and what embeddings are', async () => {
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {
      embeddings: {dimensions: number; pooling: string; pooling_source: string; encoding_formats: string[]}
      routes: Array<{method: string; path: string}>
    }
    assert.deepEqual([caps.embeddings.dimensions, caps.embeddings.pooling, caps.embeddings.pooling_source], [64, 'mean', 'default'])
    assert.deepEqual(caps.embeddings.encoding_formats, ['float', 'base64'])
    assert.ok(caps.routes.some((r) => r.method === 'POST' && r.path === '/v1/embeddings'))
  })
})
