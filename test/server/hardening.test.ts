// A server one client cannot stall (issue #18, first slice): a body that never finishes and headers
// sent a byte at a time are cut off with 408 (RFC 9110 §15.5.9) while /health keeps answering;
// connections past the per-client bound are closed; a body nested 10,000 levels deep is a 400, not a
// stack overflow; a body that is not UTF-8 is refused (RFC 8259 §8.1). Each of these failed before
// this slice: the connection stayed open (310 s and counting), the 500 "Maximum call stack size
// exceeded", the 200 for invalid UTF-8.
import assert from 'node:assert/strict'
import {connect, type Socket} from 'node:net'
import {after, before, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {rawExchange, startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

describe('a server one client cannot stall', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({
      modelPath: STORIES,
      nCtx: 256,
      threadsPerSlot: 1,
      connections: {headersTimeoutSeconds: 1, bodyTimeoutSeconds: 2},
    })
  })
  after(async () => t?.close())

  test('a body that never finishes gets 408 and the connection closed; others are served meanwhile', async () => {
    const stalled = rawExchange(
      t.url,
      (s) => s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{'),
      10_000,
    )
    const health = await fetch(`${t.url}/health`)
    assert.equal(health.status, 200)
    const r = await stalled
    assert.ok(r.closed, 'the server closed the stalled connection')
    assert.match(r.text, /^HTTP\/1\.1 408/)
    assert.ok(r.afterMs < 6000, `closed after ${r.afterMs.toFixed(0)} ms (body timeout 2 s, checked every second)`)
  })

  test('headers sent a byte at a time (slowloris) get 408 within the headers timeout', async () => {
    let timer: NodeJS.Timeout | undefined
    const r = await rawExchange(
      t.url,
      (s) => {
        s.write('GET /health HTTP/1.1\r\nHost: x\r\n')
        timer = setInterval(() => s.write('X'), 200)
      },
      10_000,
    )
    clearInterval(timer)
    assert.ok(r.closed)
    assert.match(r.text, /^HTTP\/1\.1 408/)
    assert.ok(r.afterMs < 5000, `closed after ${r.afterMs.toFixed(0)} ms`)
  })

  test("a body nested 10,000 levels deep is a 400 in the API's shape, not a stack overflow", async () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000)
    const openai = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: `{"model": "stories260K", "messages": [{"role": "user", "content": "x"}], "stop": ${deep}}`,
    })
    assert.equal(openai.status, 400)
    const body = (await openai.json()) as {error: {code: string; message: string}}
    assert.equal(body.error.code, 'invalid_json')
    assert.match(body.error.message, /more than 128 levels/)
    const anthropic = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: `{"model": "stories260K", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}], "metadata": ${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`,
    })
    assert.equal(anthropic.status, 400)
    assert.equal(((await anthropic.json()) as {type: string}).type, 'error')
  })

  test('a body that is not UTF-8 is refused (RFC 8259), not decoded with replacement characters', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"model": "stories260K", "prompt": "'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('", "max_tokens": 1}'),
    ])
    const r = await fetch(`${t.url}/v1/completions`, {method: 'POST', headers: {'content-type': 'application/json'}, body: bytes})
    assert.equal(r.status, 400)
    assert.equal(((await r.json()) as {error: {code: string}}).error.code, 'invalid_encoding')
  })
})

describe('connections one client may hold', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({
      modelPath: STORIES,
      nCtx: 256,
      threadsPerSlot: 1,
      connections: {maxConnectionsPerClient: 2, headersTimeoutSeconds: 5},
    })
  })
  after(async () => t?.close())

  test('past the bound a new connection is closed at once; one that frees a place lets the next in', async () => {
    const {hostname, port} = new URL(t.url)
    const open = () =>
      new Promise<Socket>((resolve) => {
        const s = connect(Number(port), hostname, () => resolve(s))
      })
    const held = [await open(), await open()]
    const third = await rawExchange(t.url, () => {}, 3000)
    assert.ok(third.closed && third.afterMs < 2000, 'the third connection is closed at once')
    held[0]!.destroy()
    await new Promise((r) => setTimeout(r, 100))
    const next = await rawExchange(t.url, (s) => s.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 3000)
    assert.match(next.text, /^HTTP\/1\.1 200/)
    held[1]!.destroy()
  })
})
