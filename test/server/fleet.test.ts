// Several models behind one server (src/lib/server/fleet.ts), checked through the real clients
// (`openai`, `ollama`) against llama.cpp's greedy continuations of each file (shared/reference):
// each request is answered by the model it names, whichever else is loaded; models load on first
// use, keep_alive as Ollama documents it (0: unload after the request, a duration: expires_at, -1:
// stays), --max-models unloads the least recently used idle model, the unload and load routes, a
// model that cannot load answers with the reason while the others serve, and loading and unloading
// two models over and over while clients stream leaves the process's memory where it started; a
// model whose signature does not verify under the server's key (openssl's) answers 409.
import assert from 'node:assert/strict'
import {copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import {Ollama} from 'ollama'
import OpenAI from 'openai'

import {signModel} from '../../src/lib/signing/index.js'
import {HAS_OPENSSL, NO_OPENSSL_REASON, opensslEcKeys, opensslFingerprint} from '../helpers/openssl.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'
import {makeSlowModel} from '../helpers/slow-model.js'
import {metric, startTestServer, type TestServer} from './helpers.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON

interface Greedy {
  prompt: string
  prompt_ids: number[]
  ids: number[]
  text: string
}
const greedyOf = (name: string) =>
  (JSON.parse(readFileSync(sharedPath('reference', `${name}.json`), 'utf8')) as {greedy: Greedy[]}).greedy[0]!

/** The file and llama.cpp's greedy continuation of each model the tests serve. */
const MODELS = {
  stories: {file: () => sharedPath('models', 'stories260K.gguf'), ref: () => greedyOf('stories260K')},
  llama: {file: () => sharedPath('fixtures', 'llama.gguf'), ref: () => greedyOf('llama')},
  qwen2: {file: () => sharedPath('fixtures', 'qwen2.gguf'), ref: () => greedyOf('qwen2')},
} as const
type Id = keyof typeof MODELS

const N = 12

/** A greedy completion of the model's reference prompt (as token ids) through the openai client; its text must start llama.cpp's. */
async function answersAsLlamaCpp(client: OpenAI, id: Id, stream = false): Promise<void> {
  const ref = MODELS[id].ref()
  let text = ''
  if (stream) {
    const s = await client.completions.create({model: id, prompt: ref.prompt_ids, max_tokens: N, temperature: 0, stream: true})
    for await (const chunk of s) {
      assert.equal(chunk.model, id)
      text += chunk.choices[0]?.text ?? ''
    }
  } else {
    const r = await client.completions.create({model: id, prompt: ref.prompt_ids, max_tokens: N, temperature: 0})
    assert.equal(r.model, id)
    assert.equal(r.usage?.completion_tokens, N)
    text = r.choices[0]!.text
  }
  assert.ok(text.length > 0)
  assert.ok(ref.text.startsWith(text), `${id}: ${JSON.stringify(text)} is not a prefix of llama.cpp's ${JSON.stringify(ref.text)}`)
}

interface ListedModel {
  id: string
  state: string
  in_flight: number
  expires_at?: string
  last_error?: {message: string; code: string}
}

async function states(url: string): Promise<Record<string, string>> {
  const list = (await (await fetch(`${url}/v1/models`)).json()) as {data: ListedModel[]}
  return Object.fromEntries(list.data.map((m) => [m.id, m.state]))
}

/** Unloads run after the response: wait for the state the test expects. */
async function until(url: string, id: string, state: string): Promise<void> {
  const t0 = Date.now()
  while ((await states(url))[id] !== state) {
    if (Date.now() - t0 > 10_000) throw new Error(`${id} is ${(await states(url))[id]}, not ${state}, after 10 s`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const two = () => [`stories=${MODELS.stories.file()}`, `llama=${MODELS.llama.file()}`]

describe('serving several models', {skip: SKIP}, () => {
  let t: TestServer
  let ollama: Ollama
  before(async () => {
    t = await startTestServer({models: two(), nCtx: 128, threadsPerSlot: 1})
    ollama = new Ollama({host: t.url})
  })
  after(async () => t?.close())

  test("nothing loads until asked; each request gets its model's answer (llama.cpp's greedy text); /api/ps and /health follow", async () => {
    assert.deepEqual(await states(t.url), {stories: 'unloaded', llama: 'unloaded'})
    assert.deepEqual((await ollama.ps()).models, [])
    await answersAsLlamaCpp(t.client, 'stories')
    assert.deepEqual(await states(t.url), {stories: 'loaded', llama: 'unloaded'})
    await answersAsLlamaCpp(t.client, 'llama', true)
    await answersAsLlamaCpp(t.client, 'stories', true)
    assert.deepEqual(await states(t.url), {stories: 'loaded', llama: 'loaded'})
    const ps = await ollama.ps()
    assert.deepEqual(ps.models.map((m) => m.name).sort(), ['llama:latest', 'stories:latest'])
    // Ollama's default keep_alive, 5 minutes from the last request.
    for (const m of ps.models) {
      const left = new Date(m.expires_at).getTime() - Date.now()
      assert.ok(left > 4 * 60_000 && left <= 5 * 60_000, `${m.name} expires in ${left} ms`)
      assert.ok(m.size > statBytes(m.name.startsWith('llama') ? 'llama' : 'stories'), 'the size counts the file and the KV caches')
    }
    const tags = await ollama.list()
    assert.deepEqual(
      tags.models.map((m) => m.name),
      ['stories:latest', 'llama:latest'],
    )
    const health = (await (await fetch(`${t.url}/health`)).json()) as {models: {loaded: string[]; loading: string[]}}
    assert.deepEqual(health.models.loaded.sort(), ['llama', 'stories'])
    assert.equal(await metric(t.url, 'runner_models_loaded'), 2)
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {models: ListedModel[]; models_policy: {max_models: number}}
    assert.deepEqual(
      caps.models.map((m) => [m.id, m.state]),
      [
        ['stories', 'loaded'],
        ['llama', 'loaded'],
      ],
    )
    assert.equal(caps.models_policy.max_models, 3)
  })

  test('keep_alive as Ollama takes it: 0 unloads after the request, a duration moves expires_at, -1 keeps the model', async () => {
    const ref = MODELS.llama.ref()
    const g = await ollama.generate({
      model: 'llama',
      prompt: ref.prompt,
      raw: true,
      keep_alive: 0,
      options: {temperature: 0, num_predict: N},
    })
    assert.ok(ref.text.startsWith(g.response))
    await until(t.url, 'llama', 'unloaded')
    assert.deepEqual(
      (await ollama.ps()).models.map((m) => m.name),
      ['stories:latest'],
    )
    assert.equal(await metric(t.url, 'runner_model_unloads_total', '{reason="keep_alive"}'), 1)

    // Ollama's load_duration: the wait for the load this request caused; 0 once loaded.
    const loading = await ollama.generate({model: 'llama', prompt: ref.prompt, raw: true, keep_alive: '1h', options: {num_predict: 2}})
    assert.ok(loading.load_duration > 0 && loading.load_duration < loading.total_duration, String(loading.load_duration))
    const hour = (await ollama.ps()).models.find((m) => m.name === 'llama:latest')!
    const left = new Date(hour.expires_at).getTime() - Date.now()
    assert.ok(left > 59 * 60_000 && left <= 60 * 60_000, `expires in ${left} ms`)
    const warm = await ollama.generate({model: 'llama', prompt: ref.prompt, raw: true, keep_alive: -1, options: {num_predict: 2}})
    assert.equal(warm.load_duration, 0)
    const forever = (await ollama.ps()).models.find((m) => m.name === 'llama:latest')!
    assert.ok(new Date(forever.expires_at).getFullYear() > 9000, forever.expires_at as unknown as string)

    // Ollama's empty request with keep_alive 0: "unload".
    const unloaded = await ollama.generate({model: 'llama', prompt: '', keep_alive: 0})
    assert.equal(unloaded.done_reason, 'unload')
    await until(t.url, 'llama', 'unloaded')
  })

  test("Anthropic's client: models.list pages through every model with its state; messages name theirs", async () => {
    const a = new Anthropic({baseURL: t.url, apiKey: 'unused', maxRetries: 0})
    const all = await a.models.list()
    assert.deepEqual(
      all.data.map((m) => m.id),
      ['stories', 'llama'],
    )
    const first = await a.models.list({limit: 1})
    assert.deepEqual([first.data.map((m) => m.id), first.has_more, first.last_id], [['stories'], true, 'stories'])
    const next = await a.models.list({limit: 1, after_id: 'stories'})
    assert.deepEqual([next.data.map((m) => m.id), next.has_more], [['llama'], false])
    const msg = await a.messages.create({model: 'llama', max_tokens: 4, temperature: 0, messages: [{role: 'user', content: 'Hi'}]})
    assert.equal(msg.model, 'llama')
    assert.equal(msg.usage.output_tokens, 4)
    const info = await a.models.retrieve('llama')
    assert.equal((info as unknown as {state: string}).state, 'loaded')
    assert.ok((info.max_input_tokens ?? 0) > 0)
  })

  test('POST /v1/models/{id}/load and /unload; a missing or unknown model is refused naming what is served', async () => {
    const load = await fetch(`${t.url}/v1/models/llama/load`, {method: 'POST'})
    assert.equal(load.status, 200)
    assert.equal(((await load.json()) as ListedModel).state, 'loaded')
    const unload = await fetch(`${t.url}/v1/models/llama/unload`, {method: 'POST'})
    assert.equal(unload.status, 200)
    assert.equal(((await unload.json()) as ListedModel).state, 'unloaded')
    const missing = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({messages: [{role: 'user', content: 'hi'}]}),
    })
    assert.equal(missing.status, 400)
    assert.match(((await missing.json()) as {error: {message: string}}).error.message, /name a model in "model".*`stories`, `llama`/)
    const e = await t.client.chat.completions.create({model: 'gpt-4o', messages: [{role: 'user', content: 'hi'}]}).catch((x: unknown) => x)
    assert.ok(e instanceof OpenAI.NotFoundError)
    assert.equal(e.code, 'model_not_found')
    assert.match(e.message, /this server serves `stories`, `llama`/)
  })
})

/** Resident memory outside this thread's JS heap (mapped weights, KV caches, worker isolates): what an unload must give back. */
const outsideHeap = () => {
  const m = process.memoryUsage()
  return m.rss - m.heapTotal
}

const statBytes = (id: Id) => readFileSync(MODELS[id].file()).length

describe('a model that cannot load, a load timeout, --max-models', {skip: SKIP}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-fleet-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('a broken file answers its requests with the reason; the server and the other model go on', async () => {
    const broken = join(dir, 'broken.gguf')
    writeFileSync(broken, 'GGUF but not really')
    const t = await startTestServer({models: [`stories=${MODELS.stories.file()}`, `broken=${broken}`], nCtx: 128, threadsPerSlot: 1})
    try {
      const refusal = async () => {
        const e = await t.client.completions.create({model: 'broken', prompt: 'x', max_tokens: 2}).catch((x: unknown) => x)
        assert.ok(e instanceof OpenAI.InternalServerError, String(e))
        assert.equal(e.code, 'model_load_failed')
        assert.match(e.message, /the model `broken` could not be loaded \(GGUF_/)
      }
      await refusal()
      // The same file fails the same way without being read again; a changed file is tried again.
      await refusal()
      assert.equal(await metric(t.url, 'runner_model_load_failures_total'), 1)
      writeFileSync(broken, 'GGUF, and still not one')
      await refusal()
      assert.equal(await metric(t.url, 'runner_model_load_failures_total'), 2)
      await answersAsLlamaCpp(t.client, 'stories')
      const list = (await (await fetch(`${t.url}/v1/models`)).json()) as {data: ListedModel[]}
      const b = list.data.find((m) => m.id === 'broken')!
      assert.equal(b.state, 'failed')
      assert.equal(b.last_error?.code, 'model_load_failed')
      assert.equal((await fetch(`${t.url}/health`)).status, 200)
    } finally {
      await t.close()
    }
  })

  test('a request waits for its model at most --load-timeout (503 model_loading, Retry-After); the load goes on and, unused, expires', async () => {
    const t = await startTestServer({models: two(), nCtx: 128, threadsPerSlot: 1, loadTimeoutSeconds: 0.001, keepAlive: 300})
    try {
      const r = await fetch(`${t.url}/v1/completions`, {
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({model: 'llama', prompt: 'x', max_tokens: 2}),
      })
      assert.equal(r.status, 503)
      assert.equal(r.headers.get('retry-after'), '5')
      assert.equal(((await r.json()) as {error: {code: string}}).error.code, 'model_loading')
      // Nobody waits for the load any more: once loaded, its keep_alive (300 ms here) runs out.
      const t0 = Date.now()
      while ((await metric(t.url, 'runner_model_unloads_total', '{reason="expired"}')) < 1) {
        assert.ok(Date.now() - t0 < 10_000, 'the abandoned load never expired')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.equal(await metric(t.url, 'runner_model_loads_total'), 1)
      assert.equal((await states(t.url)).llama, 'unloaded')
    } finally {
      await t.close()
    }
  })

  test('POST .../unload while a request streams: 202, and the model unloads when it ends, whatever keep_alive the request gave', async () => {
    const slow = join(dir, 'slow.gguf')
    await makeSlowModel(slow)
    const t = await startTestServer({models: [`slow=${slow}`, `stories=${MODELS.stories.file()}`], nCtx: 2048, threadsPerSlot: 1})
    try {
      const ollama = new Ollama({host: t.url})
      const stream = await ollama.generate({
        model: 'slow',
        prompt: 'x',
        raw: true,
        stream: true,
        keep_alive: -1,
        options: {num_predict: 1500},
      })
      let chunks = 0
      let unload: Response | undefined
      for await (const part of stream) {
        if (chunks++ === 0) unload = await fetch(`${t.url}/v1/models/slow/unload`, {method: 'POST'})
        if (part.done) assert.equal(part.eval_count, 1500)
      }
      assert.equal(unload!.status, 202)
      assert.deepEqual(((await unload!.json()) as ListedModel).in_flight, 1)
      await until(t.url, 'slow', 'unloaded')
      assert.equal(await metric(t.url, 'runner_model_unloads_total', '{reason="request"}'), 1)
    } finally {
      await t.close()
    }
  })

  test('requests for a model that is loading wait for that one load; --max-models 2 unloads the least recently used idle model', async () => {
    const t = await startTestServer({
      models: [...two(), `qwen2=${MODELS.qwen2.file()}`],
      nCtx: 128,
      threadsPerSlot: 1,
      maxModels: 2,
      parallel: 2,
    })
    try {
      await Promise.all(Array.from({length: 4}, (_, i) => answersAsLlamaCpp(t.client, 'llama', i % 2 === 0)))
      assert.equal(await metric(t.url, 'runner_model_loads_total'), 1, 'four requests, one load')
      await answersAsLlamaCpp(t.client, 'stories')
      await answersAsLlamaCpp(t.client, 'llama')
      // stories was used longest ago: it makes room for qwen2.
      await answersAsLlamaCpp(t.client, 'qwen2')
      assert.deepEqual(await states(t.url), {stories: 'unloaded', llama: 'loaded', qwen2: 'loaded'})
      await answersAsLlamaCpp(t.client, 'stories')
      assert.deepEqual(await states(t.url), {stories: 'loaded', llama: 'unloaded', qwen2: 'loaded'})
      assert.equal(await metric(t.url, 'runner_model_unloads_total', '{reason="evicted"}'), 2)
      // llama-server's router routes: {"model": id}.
      const r = await fetch(`${t.url}/models/unload`, {method: 'POST', body: JSON.stringify({model: 'qwen2'})})
      assert.equal(r.status, 200)
      assert.equal(((await r.json()) as {success: boolean}).success, true)
      assert.equal((await states(t.url)).qwen2, 'unloaded')
    } finally {
      await t.close()
    }
  })

  test('--models-memory: a budget for one model at a time unloads the other first; a model larger than the budget is 507', async () => {
    const budget = statBytes('llama') + (256 << 10)
    const t = await startTestServer({models: two(), nCtx: 128, threadsPerSlot: 1, modelsMemoryBytes: budget})
    try {
      await answersAsLlamaCpp(t.client, 'stories')
      await answersAsLlamaCpp(t.client, 'llama')
      assert.deepEqual(await states(t.url), {stories: 'unloaded', llama: 'loaded'})
      const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {models_policy: {memory_budget_bytes: number}}
      assert.equal(caps.models_policy.memory_budget_bytes, budget)
    } finally {
      await t.close()
    }
    // The file fits, its KV caches do not: found once loaded, and refused all the same.
    const tight = await startTestServer({models: two(), nCtx: 128, threadsPerSlot: 1, modelsMemoryBytes: statBytes('stories') + 1000})
    try {
      const e = await tight.client.completions.create({model: 'stories', prompt: 'x', max_tokens: 2}).catch((x: unknown) => x)
      assert.ok(e instanceof OpenAI.APIError && e.status === 507, String(e))
      assert.match(e.message, /needs \d+ bytes \(its files and KV caches\)/)
      assert.deepEqual(await states(tight.url), {stories: 'failed', llama: 'unloaded'})
    } finally {
      await tight.close()
    }
    const small = await startTestServer({
      models: two(),
      nCtx: 128,
      threadsPerSlot: 1,
      modelsMemoryBytes: statBytes('stories') + (256 << 10),
    })
    try {
      const e = await small.client.completions.create({model: 'llama', prompt: 'x', max_tokens: 2}).catch((x: unknown) => x)
      assert.ok(e instanceof OpenAI.APIError && e.status === 507, String(e))
      assert.equal(e.code, 'model_exceeds_memory_budget')
      await answersAsLlamaCpp(small.client, 'stories')
    } finally {
      await small.close()
    }
  })

  test('--max-models 1: two models loaded and unloaded over and over while clients stream; answers stay right, memory comes back', async () => {
    const t = await startTestServer({models: two(), nCtx: 128, threadsPerSlot: 1, maxModels: 1})
    try {
      const round = () =>
        Promise.all([
          answersAsLlamaCpp(t.client, 'stories', true),
          answersAsLlamaCpp(t.client, 'llama', true),
          answersAsLlamaCpp(t.client, 'stories'),
        ])
      await round()
      const baseline = outsideHeap()
      const rounds = 12
      // Sampled while the rounds run: never two models holding memory at once (a waiting load is
      // `loading` but holds nothing until the other has unloaded).
      let most = 0
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          const held = Object.values(await states(t.url)).filter((s) => s === 'loaded' || s === 'unloading').length
          most = Math.max(most, held)
        }
      })()
      for (let i = 0; i < rounds; i++) await round()
      sampling = false
      await sampler
      assert.equal(most, 1, `${most} models held at once with --max-models 1`)
      const evicted = await metric(t.url, 'runner_model_unloads_total', '{reason="evicted"}')
      assert.ok(evicted >= rounds, `only ${evicted} evictions in ${rounds} rounds`)
      // Each load maps a model, makes its contexts and two prompt worker threads (an isolate each, tens
      // of MB): kept after unloading, a dozen rounds leave hundreds of MB behind (about 740 MB when
      // the unload releases nothing). This thread's own JS heap is left out: its garbage is noise.
      const grown = outsideHeap() - baseline
      assert.ok(grown < 64 << 20, `resident memory outside the JS heap grew by ${grown} bytes over ${rounds} rounds of loads and unloads`)
    } finally {
      await t.close()
    }
  })
})

describe(
  'signatures checked at each model load (OpenSSF Model Signing; keys by openssl)',
  {skip: SKIP || (!HAS_OPENSSL && NO_OPENSSL_REASON)},
  () => {
    let dir: string
    let signer: {key: string; pub: string}
    let other: {key: string; pub: string}
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'runner-fleet-sig-'))
      signer = opensslEcKeys(dir, 'prime256v1')
      other = opensslEcKeys(dir, 'secp384r1')
      copyFileSync(MODELS.stories.file(), join(dir, 'stories.gguf'))
      copyFileSync(MODELS.llama.file(), join(dir, 'llama.gguf'))
      copyFileSync(MODELS.stories.file(), join(dir, 'unsigned.gguf'))
      await signModel({modelPath: join(dir, 'stories.gguf'), keyPath: signer.key})
      // Signed, but by another key than the server trusts.
      await signModel({modelPath: join(dir, 'llama.gguf'), keyPath: other.key})
    })
    after(() => rmSync(dir, {recursive: true, force: true}))

    test('--models-dir with --require-signed-model: the signed model serves, the others answer 409 model_signature_refused', async () => {
      const t = await startTestServer({
        modelsDir: dir,
        nCtx: 128,
        threadsPerSlot: 1,
        signatures: {publicKeyPath: signer.pub, require: true},
      })
      try {
        await answersAsLlamaCpp(t.client, 'stories')
        for (const [id, why] of [
          ['llama', /the model `llama` was refused by the signature policy: .*(another key|wrong public key)/],
          ['unsigned', /the model `unsigned` was refused by the signature policy/],
        ] as const) {
          const e = await t.client.completions.create({model: id, prompt: 'x', max_tokens: 2}).catch((x: unknown) => x)
          assert.ok(e instanceof OpenAI.ConflictError, `${id}: ${String(e)}`)
          assert.equal(e.code, 'model_signature_refused')
          assert.match(e.message, why)
        }
        const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {
          signature_policy: {require_signed_model: boolean; public_key_fingerprint: string}
          models: Array<ListedModel & {signature?: {keyFingerprint: string} | null}>
        }
        assert.equal(caps.signature_policy.require_signed_model, true)
        assert.equal(caps.signature_policy.public_key_fingerprint, opensslFingerprint(signer.pub))
        const stories = caps.models.find((m) => m.id === 'stories')!
        assert.equal(stories.signature?.keyFingerprint, opensslFingerprint(signer.pub))
        assert.deepEqual(
          caps.models.filter((m) => m.id !== 'stories').map((m) => [m.id, m.state, m.last_error?.code]),
          [
            ['llama', 'failed', 'model_signature_refused'],
            ['unsigned', 'failed', 'model_signature_refused'],
          ],
        )
      } finally {
        await t.close()
      }
    })

    test('runner serve with one -m refused by the policy exits 3 before it listens', async () => {
      const r = await runCliAsync(['serve', '-m', join(dir, 'llama.gguf'), '--model-pubkey', signer.pub, '--port', '0'])
      assert.equal(r.status, 3, r.stderr)
      assert.match(r.stderr, /hint|another key|wrong public key/)
      assert.doesNotMatch(r.stdout, /listening/)
    })
  },
)
