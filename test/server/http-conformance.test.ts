// HTTP conformance in each API's own error shape (issue #18, item 8). Anchors: RFC 9110 §15.5.6
// (405 carries Allow), RFC 9112 (the parser's 400/431, Connection: close), OpenAI's and Anthropic's
// documented error objects. Each case failed before this slice: 404 without Allow, Fastify's own
// `{"error":"Bad Request","message":"Client Error"}` for parser errors, "content-type is set to
// 'application/json'" for a form-encoded body, `connection: keep-alive` on a stream the client asked
// to close, and a 100 KB unknown field name echoed whole (twice).
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {rawExchange, startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

/** Status line, headers (lower-cased) and body of the first response in `text`. */
function parse(text: string): {status: number; headers: Record<string, string>; body: string} {
  const [head, ...rest] = text.split('\r\n\r\n')
  const [statusLine, ...lines] = head!.split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return {status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n')}
}

describe('HTTP conformance', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 256, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  const send = async (request: string) => parse((await rawExchange(t.url, (s) => s.write(request), 5000)).text)

  test('a known path under another method: 405 with Allow, in the API family of the path', async () => {
    const chat = await fetch(`${t.url}/v1/chat/completions`)
    assert.equal(chat.status, 405)
    assert.equal(chat.headers.get('allow'), 'POST')
    assert.equal(((await chat.json()) as {error: {code: string}}).error.code, 'method_not_allowed')
    const messages = await fetch(`${t.url}/v1/messages`, {method: 'DELETE'})
    assert.equal(messages.status, 405)
    const anthropic = (await messages.json()) as {type: string; error: {type: string}}
    assert.deepEqual([anthropic.type, anthropic.error.type], ['error', 'invalid_request_error'])
    const model = await fetch(`${t.url}/v1/models/stories260K`, {method: 'POST', body: '{}'})
    assert.equal(model.status, 405)
    assert.equal(model.headers.get('allow'), 'GET, HEAD')
    const ollama = await fetch(`${t.url}/api/tags`, {method: 'POST', body: '{}'})
    assert.equal(ollama.status, 405)
    assert.equal(typeof ((await ollama.json()) as {error: unknown}).error, 'string')
    // A path no route has stays a 404.
    assert.equal((await fetch(`${t.url}/v1/nothing`)).status, 404)
  })

  test("errors of Node's HTTP parser come in the API's shape, not Fastify's", async () => {
    const badLength = await send('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}')
    assert.equal(badLength.status, 400)
    const openai = JSON.parse(badLength.body) as {error: {message: string; type: string; code: string}}
    assert.deepEqual([openai.error.type, openai.error.code], ['invalid_request_error', 'invalid_http'])
    assert.match(openai.error.message, /Content-Length/)
    const folded = await send('POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\nContent-Length: 2\r\n\r\n{}')
    assert.equal(folded.status, 400)
    const anthropic = JSON.parse(folded.body) as {type: string; error: {type: string; message: string}}
    assert.equal(anthropic.type, 'error')
    assert.match(anthropic.error.message, /folded/)
    const nul = await send('POST /api/chat HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\n{}')
    assert.equal(nul.status, 400)
    assert.equal(typeof (JSON.parse(nul.body) as {error: unknown}).error, 'string')
    const huge = await send(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    assert.equal(huge.status, 431)
    assert.match(JSON.parse(huge.body).error.message, /headers are larger/)
  })

  test('a form-encoded body is told what it was sent as and what to send', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/x-www-form-urlencoded'},
      body: 'model=stories260K',
    })
    assert.equal(r.status, 400)
    const e = ((await r.json()) as {error: {message: string; code: string}}).error
    assert.equal(e.code, 'invalid_json')
    assert.match(e.message, /sent as "application\/x-www-form-urlencoded"/)
    assert.match(e.message, /Content-Type: application\/json/)
    assert.doesNotMatch(e.message, /content-type is set to 'application\/json'/)
  })

  test('a body with a __proto__ key is told that, not that it is not JSON', async () => {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: '{"__proto__": {"x": 1}}',
    })
    assert.equal(r.status, 400)
    const e = ((await r.json()) as {error: {message: string}}).error
    assert.match(e.message, /__proto__/)
    assert.doesNotMatch(e.message, /content-type is set/)
  })

  test('a stream asked with Connection: close says so and closes when it ends', async () => {
    const body = JSON.stringify({model: 'stories260K', prompt: 'Once', max_tokens: 3, stream: true})
    const r = await rawExchange(
      t.url,
      (s) =>
        s.write(
          `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      10_000,
    )
    const res = parse(r.text)
    assert.equal(res.status, 200)
    assert.equal(res.headers.connection, 'close')
    assert.match(res.body, /data: \[DONE\]/)
    assert.ok(r.closed, 'the server closed the connection after the stream')
  })

  test('an unknown field with a 100 KB name is named in a bounded message', async () => {
    const name = 'z'.repeat(100_000)
    const r = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({model: 'stories260K', prompt: 'x', [name]: 1}),
    })
    assert.equal(r.status, 400)
    const text = await r.text()
    assert.ok(text.length < 1000, `the error is ${text.length} bytes`)
    const e = (JSON.parse(text) as {error: {message: string; param: string; code: string}}).error
    assert.equal(e.code, 'unknown_parameter')
    assert.match(e.message, /zzzz… \(99936 more characters\)/)
  })
})
