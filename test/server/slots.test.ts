// Slots, queue, timeouts, disconnects and the prefix cache, through the `openai` client and raw HTTP.
// Anchors: the OpenAI SDK's own APIError (status, param, Retry-After header), /metrics read back,
// and a server without the prefix cache (every prompt evaluated whole) as the reference for the
// bitwise identity of results with the cache.
//
// The slow cases use a random-weight llama written by scripts/make-test-model.ts (256 wide, 4
// layers, 2048 context): its 1,800-token prefill takes a few hundred milliseconds on one thread
// (about a second before the tiled attention), long enough to time out in, to queue behind, and to
// walk away from.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import OpenAI from 'openai'

import {makeSlowModel} from '../helpers/slow-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {metric, startTestServer, type TestServer, waitIdle} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
/** The timeout of the server the timeout cases use: well under the slow model's long prefill. */
const TIMEOUT_MS = 100
const LONG = 'The little dog ran to the park and played with a big red ball. '.repeat(120)

async function status(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an OpenAI APIError, got ${String(error)}`)
    return error
  }
  assert.fail('expected an error, but the request succeeded')
}

describe('slots, queue, timeouts and disconnects (slow model)', {skip: SKIP}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-serve-'))
  const slow = join(dir, 'slow.gguf')
  /** One slot, a TIMEOUT_MS timeout. */
  let t: TestServer
  /** One slot, one queue place, the default timeout. */
  let q: TestServer
  let longPrompt: number[]
  before(async () => {
    await makeSlowModel(slow)
    t = await startTestServer({
      modelPath: slow,
      parallel: 1,
      nCtx: 2048,
      threadsPerSlot: 1,
      queueLimit: 1,
      timeoutSeconds: TIMEOUT_MS / 1000,
    })
    q = await startTestServer({modelPath: slow, parallel: 1, nCtx: 2048, threadsPerSlot: 1, queueLimit: 1})
    longPrompt = Array.from({length: 1800}, (_, i) => 1 + (i % 400))
  })
  after(async () => {
    await t?.close()
    await q?.close()
    rmSync(dir, {recursive: true, force: true})
  })

  /** Start a request that holds the only slot for about a second, and wait until it has it (wrapped: an async function would await a returned promise). */
  let occupied = 0
  async function occupy(): Promise<{first: Promise<Response>}> {
    // A prompt no slot has cached (the prefix cache would make it instant).
    const prompt = longPrompt.map((id) => 1 + ((id + ++occupied) % 400))
    const first = fetch(`${q.url}/v1/completions`, {method: 'POST', body: JSON.stringify({model: 'slow', prompt, max_tokens: 1})})
    const t0 = performance.now()
    while ((await metric(q.url, 'runner_slots_busy')) === 0) {
      assert.ok(performance.now() - t0 < 2000, 'the first request never took the slot')
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    return {first}
  }

  async function queueDepthIs(n: number): Promise<void> {
    const t0 = performance.now()
    while ((await metric(q.url, 'runner_queue_depth')) !== n) {
      assert.ok(performance.now() - t0 < 500, `the queue never held ${n}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  test('a request that outlives --timeout during its prefill gets 408 at the timeout, not after the prefill; the slot is free again', async () => {
    // How long the whole prefill takes here and now (the server without the short timeout).
    let t0 = performance.now()
    await q.client.completions.create({model: 'slow', prompt: longPrompt, max_tokens: 1})
    const prefillMs = performance.now() - t0
    // The premise: the prefill outlives the timeout by a margin (else the slow model got fast).
    assert.ok(prefillMs > 2 * TIMEOUT_MS, `the prefill takes only ${prefillMs.toFixed(0)} ms, not well over the ${TIMEOUT_MS} ms timeout`)
    t0 = performance.now()
    const e = await status(t.client.completions.create({model: 'slow', prompt: longPrompt, max_tokens: 4}))
    const ms = performance.now() - t0
    assert.equal(e.status, 408)
    assert.equal(e.code, 'request_timeout')
    assert.ok(
      ms < TIMEOUT_MS + (prefillMs - TIMEOUT_MS) / 2,
      `408 after ${ms.toFixed(0)} ms; the prefill alone takes ${prefillMs.toFixed(0)} ms`,
    )
    await waitIdle(t.url, 3000)
    const ok = await t.client.completions.create({model: 'slow', prompt: 'Once upon a time', max_tokens: 4, temperature: 0})
    assert.equal(ok.usage?.completion_tokens, 4)
  })

  test('a streaming request times out with 408 too when no token came yet', async () => {
    const e = await status(
      (async () => {
        const s = await t.client.completions.create({model: 'slow', prompt: longPrompt, max_tokens: 4, stream: true})
        for await (const _ of s) {
          // no token arrives before the timeout
        }
      })(),
    )
    assert.equal(e.status, 408)
    await waitIdle(t.url, 3000)
  })

  test('beyond the slots and the queue, 503 with Retry-After; the queued request still completes', async () => {
    const {first} = await occupy()
    // fetch sends at once (the SDK's promise may start its request later).
    const second = fetch(`${q.url}/v1/completions`, {method: 'POST', body: JSON.stringify({model: 'slow', prompt: 'Once', max_tokens: 2})})
    await queueDepthIs(1)
    const e = await status(q.client.completions.create({model: 'slow', prompt: 'Once', max_tokens: 2}))
    assert.equal(e.status, 503)
    assert.equal(e.code, 'server_overloaded')
    assert.equal(e.headers?.get('retry-after'), '1')
    assert.equal((await first).status, 200)
    assert.equal(((await (await second).json()) as {usage: {completion_tokens: number}}).usage.completion_tokens, 2)
    await waitIdle(q.url)
  })

  test('a client that disconnects mid-stream frees its slot at once', async () => {
    const controller = new AbortController()
    // 1,500 tokens take over two seconds; the client leaves after the first.
    const s = await q.client.completions.create(
      {model: 'slow', prompt: 'Once upon a time', max_tokens: 1500, temperature: 0, stream: true},
      {signal: controller.signal},
    )
    let t0 = 0
    try {
      for await (const _ of s) {
        t0 = performance.now()
        controller.abort()
      }
    } catch {
      // the SDK may raise its abort error
    }
    assert.ok(t0 > 0, 'a first chunk arrived')
    const freed = await waitIdle(q.url, 2000)
    // The 1,500 tokens would take over two seconds more.
    assert.ok(performance.now() - t0 < 1000, `slot freed ${freed.toFixed(0)} ms after the poll began`)
    assert.equal(await metric(q.url, 'runner_http_requests_total', '{route="/v1/completions",status="499"}'), 1)
    const ok = await q.client.completions.create({model: 'slow', prompt: 'Once upon a time', max_tokens: 3, temperature: 0})
    assert.equal(ok.usage?.completion_tokens, 3)
  })

  test('a client that disconnects while queued leaves the queue', async () => {
    const {first} = await occupy()
    const controller = new AbortController()
    const queued = fetch(`${q.url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({model: 'slow', prompt: 'Once', max_tokens: 2}),
      signal: controller.signal,
    })
    await queueDepthIs(1)
    controller.abort()
    await assert.rejects(queued)
    await queueDepthIs(0)
    assert.equal((await first).status, 200)
    await waitIdle(q.url)
  })
})

describe('graceful close', {skip: SKIP}, () => {
  test('close() cancels a stream still running after the grace period (an error event the SDK raises) and refuses the queued request with 503', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runner-serve-close-'))
    const slow = join(dir, 'slow.gguf')
    try {
      await makeSlowModel(slow)
      const s = await startTestServer({modelPath: slow, parallel: 1, nCtx: 2048, threadsPerSlot: 1})
      const stream = await s.client.completions.create({
        model: 'slow',
        prompt: 'Once upon a time',
        max_tokens: 1500,
        temperature: 0,
        stream: true,
      })
      const queued = fetch(`${s.url}/v1/completions`, {
        method: 'POST',
        body: JSON.stringify({model: 'slow', prompt: 'Once', max_tokens: 2}),
      })
      while ((await metric(s.url, 'runner_queue_depth')) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
      let closed: Promise<void> | undefined
      let t0 = 0
      const failure = await (async () => {
        try {
          for await (const _ of stream) {
            if (!closed) {
              t0 = performance.now()
              closed = s.server.close(100)
            }
          }
        } catch (error) {
          return error
        }
        return undefined
      })()
      assert.ok(failure instanceof OpenAI.APIError, `the stream ended with ${String(failure)}`)
      assert.equal(failure.code, 'server_shutting_down')
      const q = await queued
      assert.equal(q.status, 503)
      await closed
      assert.ok(performance.now() - t0 < 1500, 'close() returned well before the 1,500-token generation would have ended')
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe('prefix cache (slot affinity)', {skip: SKIP}, () => {
  let cached: TestServer
  let plain: TestServer
  before(async () => {
    cached = await startTestServer({modelPath: STORIES, parallel: 2, nCtx: 512, threadsPerSlot: 1})
    plain = await startTestServer({modelPath: STORIES, parallel: 2, nCtx: 512, threadsPerSlot: 1, prefixCache: false})
  })
  after(async () => {
    await cached?.close()
    await plain?.close()
  })

  const SYSTEM = `You are a storyteller. ${LONG.slice(0, 600)}`
  const turns = ['Tell me about a cat.', 'Tell me about a dog.', 'Tell me about a bird and a tree.']

  test('requests sharing a prompt prefix reuse its KV rows (cached_tokens, /metrics) and give bitwise the same results as without the cache', async () => {
    const ask = (c: OpenAI, user: string, extra: Record<string, unknown> = {}) =>
      c.chat.completions.create({
        model: 'stories260K',
        messages: [
          {role: 'system', content: SYSTEM},
          {role: 'user', content: user},
        ],
        max_tokens: 32,
        temperature: 0.8,
        seed: 7,
        logprobs: true,
        top_logprobs: 4,
        ...extra,
      } as OpenAI.ChatCompletionCreateParamsNonStreaming)
    const hitsBefore = await metric(cached.url, 'runner_prefix_cache_hits_total')
    const withCache: OpenAI.ChatCompletion[] = []
    for (const u of turns) withCache.push(await ask(cached.client, u))
    withCache.push(await ask(cached.client, turns[0]!, {presence_penalty: 1.5, frequency_penalty: 0.5}))
    const without: OpenAI.ChatCompletion[] = []
    for (const u of turns) without.push(await ask(plain.client, u))
    without.push(await ask(plain.client, turns[0]!, {presence_penalty: 1.5, frequency_penalty: 0.5}))

    const shared = withCache[1]!.usage!.prompt_tokens_details!.cached_tokens!
    assert.ok(shared > 100, `the second request reused ${shared} tokens of the system prompt`)
    for (const r of without) assert.equal(r.usage?.prompt_tokens_details?.cached_tokens, 0)
    for (let i = 0; i < withCache.length; i++) {
      assert.equal(withCache[i]!.choices[0]!.message.content, without[i]!.choices[0]!.message.content)
      assert.deepEqual(withCache[i]!.choices[0]!.logprobs, without[i]!.choices[0]!.logprobs, `request ${i}: log-probabilities differ`)
    }
    assert.ok((await metric(cached.url, 'runner_prefix_cache_hits_total')) >= hitsBefore + 2)
    assert.ok((await metric(cached.url, 'runner_cached_tokens_total')) >= shared * 2)
    assert.ok((await metric(cached.url, 'runner_prefix_cache_bytes')) > 0)
    assert.equal(await metric(plain.url, 'runner_prefix_cache_hits_total'), 0)
  })

  test('the least recently used slot is the one overwritten', async () => {
    const ask = (prompt: string) => cached.client.completions.create({model: 'stories260K', prompt, max_tokens: 4, temperature: 0})
    const a = `Lily had a red ball and a blue kite. ${LONG.slice(0, 200)}`
    const b = `Tom saw a big fish in the pond today. ${LONG.slice(0, 200)}`
    const c = `The sun was hot and the sky was blue. ${LONG.slice(0, 200)}`
    await ask(a)
    await ask(b)
    const aPrompt = (await ask(a)).usage!.prompt_tokens
    const reuse = async (p: string) => (await ask(p)).usage!.prompt_tokens_details!.cached_tokens!
    assert.equal(await reuse(a), aPrompt - 1, 'a is cached')
    assert.equal(await reuse(b), (await ask(b)).usage!.prompt_tokens - 1, 'b is cached')
    // a was used before b: c takes a's slot.
    await ask(c)
    assert.ok((await reuse(b)) > 50, 'b survived')
    assert.ok((await reuse(a)) < 5, 'a was evicted')
  })
})
