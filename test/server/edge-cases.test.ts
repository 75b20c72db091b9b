// Edge cases of `runner serve` found in review: each must be refused in the API's shape, or honoured.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {startServer} from '../../src/lib/server/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {metric, startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON

/** POST a JSON body; `T` is the response body's shape as the caller expects it (unchecked). */
async function post<T = unknown>(
  url: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {'content-type': 'application/json'},
) {
  const r = await fetch(`${url}${path}`, {method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body)})
  return {status: r.status, json: (await r.json()) as T}
}

describe('runner serve edge cases', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, parallel: 1, nCtx: 256, threadsPerSlot: 1, apiKey: 'K', prefixCache: false})
  })
  after(async () => t?.close())
  const auth = {'content-type': 'application/json', authorization: 'Bearer K'}

  test("an undecodable URL is a 400 in OpenAI's error shape", async () => {
    const r = await fetch(`${t.url}/v1/models/%E0%A4%A`, {headers: auth})
    assert.equal(r.status, 400)
    const body = (await r.json()) as {error: {type: string; code: string}}
    assert.equal(body.error.code, 'invalid_request')
  })

  test('an unknown path is a 404 even without the key', async () => {
    const r = await fetch(`${t.url}/nope`)
    assert.equal(r.status, 404)
    assert.equal(((await r.json()) as {error: {code: string}}).error.code, 'unknown_url')
  })

  test('an empty body is invalid JSON; response_format.json_schema with type text is refused by name', async () => {
    const empty = await fetch(`${t.url}/v1/chat/completions`, {method: 'POST', headers: {authorization: 'Bearer K'}})
    assert.equal(empty.status, 400)
    assert.equal(((await empty.json()) as {error: {code: string}}).error.code, 'invalid_json')
    const r = await post<{error: {param: string}}>(
      t.url,
      '/v1/chat/completions',
      {
        model: 'stories260K',
        messages: [{role: 'user', content: 'hi'}],
        max_tokens: 2,
        response_format: {type: 'text', json_schema: {name: 'x', schema: {}}},
      },
      auth,
    )
    assert.equal(r.status, 400)
    assert.equal(r.json.error.param, 'response_format.json_schema')
  })

  test('/apply-template honours add_generation_prompt and refuses unknown fields', async () => {
    const messages = [{role: 'user', content: 'hi'}]
    const withPrompt = await post<{prompt: string}>(t.url, '/apply-template', {messages}, auth)
    const without = await post<{prompt: string}>(t.url, '/apply-template', {messages, add_generation_prompt: false}, auth)
    assert.equal(withPrompt.json.prompt, '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n')
    assert.equal(without.json.prompt, '<|im_start|>user\nhi<|im_end|>\n')
    const bogus = await post(t.url, '/apply-template', {messages, bogus: 1}, auth)
    assert.equal(bogus.status, 400)
  })

  test('streamed text_offset equals the non-streamed one when a stop string holds text back', async () => {
    const body = {model: 'stories260K', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, logprobs: 0, stop: 'rl X'}
    const plain = await post<{choices: Array<{logprobs: {text_offset: number[]}}>}>(t.url, '/v1/completions', body, auth)
    const r = await fetch(`${t.url}/v1/completions`, {method: 'POST', headers: auth, body: JSON.stringify({...body, stream: true})})
    const offsets: number[] = []
    for (const line of (await r.text()).split('\n')) {
      if (!line.startsWith('data: {')) continue
      const chunk = JSON.parse(line.slice(6)) as {choices: Array<{logprobs: {text_offset: number[]} | null}>}
      offsets.push(...(chunk.choices[0]?.logprobs?.text_offset ?? []))
    }
    assert.deepEqual(offsets, plain.json.choices[0]?.logprobs.text_offset)
    assert.ok(offsets.length > 0)
  })

  test('without the prefix cache no tokens are reported cached', async () => {
    await post(t.url, '/v1/chat/completions', {model: 'stories260K', messages: [{role: 'user', content: 'hi'}], max_tokens: 4}, auth)
    assert.equal(await metric(t.url, 'runner_prefix_cache_tokens', '', {authorization: 'Bearer K'}), 0)
  })

  test('a timeout beyond what Node timers hold is refused by name', async () => {
    await assert.rejects(startServer({modelPath: STORIES, host: '127.0.0.1', port: 0, timeoutSeconds: 3_000_000}), /--timeout 3000000/)
  })
})
