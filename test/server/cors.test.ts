// CORS (`--cors ORIGIN`), with raw fetch as a browser would send it. Anchors: the Fetch standard's
// CORS check (a response is readable by a page iff Access-Control-Allow-Origin is "*" or the page's
// origin; a preflight must allow the method and every non-safelisted request header) and the real
// SDKs: the headers `openai` and `@anthropic-ai/sdk` send from a browser are captured here, and the
// preflight must allow each of them.
import assert from 'node:assert/strict'
import {createServer, type IncomingHttpHeaders} from 'node:http'
import type {AddressInfo} from 'node:net'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'

import {parseCorsOrigins} from '../../src/lib/server/cors.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
const PAGE = 'http://localhost:5173'

/** The Fetch standard's CORS check for a page at `origin`. */
function readable(r: Response, origin: string): boolean {
  const allow = r.headers.get('access-control-allow-origin')
  return allow === '*' || allow === origin
}

/** Request headers a browser sends without a preflight (CORS-safelisted) or sets itself (forbidden). */
const BROWSER_OWN = new Set([
  'accept',
  'accept-language',
  'content-language',
  'host',
  'connection',
  'content-length',
  'accept-encoding',
  'user-agent',
])

/** The header names each SDK sends, captured by a bare HTTP server standing in for the runner. */
async function sdkHeaders(): Promise<string[]> {
  const seen: IncomingHttpHeaders[] = []
  const fake = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(200, {'content-type': 'application/json'})
    res.end(req.url?.includes('count_tokens') ? '{"input_tokens":1}' : '{"object":"list","data":[]}')
  })
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`
  try {
    await new OpenAI({baseURL: `${url}/v1`, apiKey: 'k', maxRetries: 0, dangerouslyAllowBrowser: true}).models.list()
    const anthropic = new Anthropic({baseURL: url, apiKey: 'k', maxRetries: 0, dangerouslyAllowBrowser: true})
    await anthropic.messages.countTokens({model: 'm', messages: [{role: 'user', content: 'x'}]})
  } finally {
    fake.close()
  }
  // sec-*: set by the fetch implementation itself (forbidden to pages).
  return [...new Set(seen.flatMap((h) => Object.keys(h)))].filter((h) => !BROWSER_OWN.has(h) && !h.startsWith('sec-')).sort()
}

describe('CORS is off by default', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 64, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  test('no CORS header on a preflight or a request from any page', async () => {
    const pre = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {origin: PAGE, 'access-control-request-method': 'POST'},
    })
    assert.equal(pre.headers.get('access-control-allow-origin'), null)
    // Without --cors no route answers OPTIONS: 405, naming the method that path does answer (RFC 9110 §15.5.6).
    assert.equal(pre.status, 405)
    assert.equal(pre.headers.get('allow'), 'POST')
    const r = await fetch(`${t.url}/v1/models`, {headers: {origin: PAGE}})
    assert.equal(r.status, 200)
    assert.equal(readable(r, PAGE), false)
    assert.equal(r.headers.get('access-control-allow-origin'), null)
  })
})

describe('--cors ORIGIN (with --api-key)', {skip: SKIP}, () => {
  let t: TestServer
  let wanted: string[]
  const auth = {authorization: 'Bearer k'}
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 64, threadsPerSlot: 1, apiKey: 'k', corsOrigins: [PAGE, 'https://app.example']})
    wanted = await sdkHeaders()
  })
  after(async () => t?.close())

  test('a preflight from an allowed page is answered without the key and allows every header the SDKs send', async () => {
    assert.ok(wanted.includes('authorization') && wanted.includes('anthropic-version'), wanted.join(' '))
    assert.ok(
      wanted.some((h) => h.startsWith('x-stainless-')),
      wanted.join(' '),
    )
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/models', '/tokenize', '/v1/messages/count_tokens']) {
      const pre = await fetch(`${t.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: PAGE,
          'access-control-request-method': 'POST',
          'access-control-request-headers': [...wanted, 'x-api-key', 'x-not-ours'].join(', '),
        },
      })
      assert.equal(pre.status, 204, path)
      assert.equal(pre.headers.get('access-control-allow-origin'), PAGE)
      assert.match(pre.headers.get('vary') ?? '', /Origin/)
      const methods = (pre.headers.get('access-control-allow-methods') ?? '').split(/,\s*/)
      assert.ok(methods.includes('POST') && methods.includes('GET'), methods.join())
      const allowed = new Set((pre.headers.get('access-control-allow-headers') ?? '').split(/,\s*/))
      // x-api-key: the server's other way to send the key (older Anthropic SDKs use it).
      for (const h of [...wanted, 'x-api-key']) assert.ok(allowed.has(h), `${h} allowed (${[...allowed].join(' ')})`)
      assert.ok(!allowed.has('x-not-ours'), 'a header outside the list is not allowed')
      assert.ok(Number(pre.headers.get('access-control-max-age')) > 0)
    }
    const other = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {origin: 'https://evil.example', 'access-control-request-method': 'POST'},
    })
    assert.equal(other.headers.get('access-control-allow-origin'), null)
    assert.equal(other.headers.get('access-control-allow-headers'), null)
  })

  test('answers to an allowed page are readable: JSON, errors, OpenAI and Anthropic streams; other pages get no CORS header', async () => {
    const json = {'content-type': 'application/json'}
    const chat = (stream: boolean, key = auth) => ({
      method: 'POST',
      headers: {...json, ...key, origin: PAGE},
      body: JSON.stringify({model: 'stories260K', messages: [{role: 'user', content: 'Hi'}], max_tokens: 3, stream}),
    })
    const cases: Array<[string, string, RequestInit, number]> = [
      ['chat', '/v1/chat/completions', chat(false), 200],
      ['chat stream', '/v1/chat/completions', chat(true), 200],
      ['no key', '/v1/chat/completions', chat(false, {} as typeof auth), 401],
      [
        'anthropic stream',
        '/v1/messages',
        {
          method: 'POST',
          headers: {...json, 'x-api-key': 'k', 'anthropic-version': '2023-06-01', origin: PAGE},
          body: JSON.stringify({model: 'stories260K', messages: [{role: 'user', content: 'Hi'}], max_tokens: 3, stream: true}),
        },
        200,
      ],
      ['models', '/v1/models', {headers: {...auth, origin: PAGE}}, 200],
      ['unknown model', '/v1/models/gpt-4o', {headers: {...auth, origin: PAGE}}, 404],
      ['health', '/health', {headers: {origin: PAGE}}, 200],
    ]
    for (const [name, path, init, status] of cases) {
      const r = await fetch(`${t.url}${path}`, init)
      const body = await r.text()
      assert.equal(r.status, status, `${name}: ${body}`)
      assert.ok(readable(r, PAGE), `${name} is readable by ${PAGE}`)
      assert.match(r.headers.get('vary') ?? '', /Origin/, name)
      assert.match(r.headers.get('access-control-expose-headers') ?? '', /retry-after/, name)
      if (name.endsWith('stream')) assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/)
      const elsewhere = await fetch(`${t.url}${path}`, {
        ...init,
        headers: {...(init.headers as Record<string, string>), origin: 'https://evil.example'},
      })
      await elsewhere.text()
      assert.equal(readable(elsewhere, 'https://evil.example'), false, name)
      assert.equal(elsewhere.headers.get('access-control-allow-origin'), null, name)
    }
    // The second allowed origin, and a request without Origin (not a CORS request).
    assert.equal(
      (await fetch(`${t.url}/health`, {headers: {origin: 'https://app.example'}})).headers.get('access-control-allow-origin'),
      'https://app.example',
    )
    assert.equal((await fetch(`${t.url}/health`)).headers.get('access-control-allow-origin'), null)
  })
})

describe('--cors "*"', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 64, threadsPerSlot: 1, corsOrigins: ['*']})
  })
  after(async () => t?.close())

  test('any page: Allow-Origin "*"', async () => {
    for (const origin of [PAGE, 'https://anywhere.example', 'null']) {
      const pre = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'OPTIONS',
        headers: {origin, 'access-control-request-method': 'POST'},
      })
      assert.equal(pre.status, 204)
      assert.equal(pre.headers.get('access-control-allow-origin'), '*')
      const r = await fetch(`${t.url}/v1/models`, {headers: {origin}})
      assert.ok(readable(r, origin))
    }
  })
})

test('--cors values: origins are normalised as browsers send them; anything else is refused naming the flag', () => {
  assert.deepEqual(parseCorsOrigins(['*', 'http://LOCALHOST:5173', 'https://a.example:443', 'https://a.example/']), [
    '*',
    'http://localhost:5173',
    'https://a.example',
    'https://a.example',
  ])
  for (const bad of ['localhost:5173', 'http://a.example/app', 'ftp://a.example', 'http://a.example?x=1', '', 'null'])
    assert.throws(
      () => parseCorsOrigins([bad]),
      (e: Error) => /--cors .* must be an origin/.test(e.message),
      bad,
    )
})
