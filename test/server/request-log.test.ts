/**
 * The request log (src/lib/server/request-log.ts) on a bare fastify app, no model: the line is
 * written once the response ends, the tokens counted deep inside a route (after awaits, as
 * runGeneration counts them) reach that request's line and no other's, the query and the headers
 * never appear, and `none` installs nothing (issue #22: serve logged no requests at all).
 */
import assert from 'node:assert/strict'
import {setTimeout as sleep} from 'node:timers/promises'
import {test} from 'node:test'

import Fastify from 'fastify'

import {countRequestTokens, installRequestLog, type LogFormat} from '../../src/lib/server/request-log.js'

async function serveAndLog(format: LogFormat): Promise<string[]> {
  const lines: string[] = []
  const app = Fastify()
  installRequestLog(app, format, (l) => lines.push(l))
  app.post('/v1/gen/:n', async (req) => {
    const n = Number((req.params as {n: string}).n)
    await sleep(5 * n) // the two requests overlap: each tally must stay its own
    countRequestTokens(n, 2 * n)
    await sleep(1)
    countRequestTokens(n, 0) // a second pass (n choices, a thinking budget) adds up
    return {ok: true}
  })
  await app.listen({host: '127.0.0.1', port: 0})
  const url = `http://127.0.0.1:${(app.server.address() as {port: number}).port}`
  const headers = {authorization: 'Bearer sesame', 'content-type': 'application/json'}
  await Promise.all([
    fetch(`${url}/v1/gen/3?key=sesame`, {method: 'POST', headers, body: '{"prompt": "a secret prompt"}'}),
    fetch(`${url}/v1/gen/1`, {method: 'POST', headers, body: '{}'}),
  ])
  await fetch(`${url}/missing?key=sesame`)
  await app.close()
  return lines
}

test('json: one object per request, tokens summed per request, route without the query, nothing private', async () => {
  const lines = await serveAndLog('json')
  const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  assert.deepEqual(
    entries.map(({method, route, status, prompt_tokens, completion_tokens}) => [method, route, status, prompt_tokens, completion_tokens]),
    [
      ['POST', '/v1/gen/:n', 200, 2, 2],
      ['POST', '/v1/gen/:n', 200, 6, 6],
      ['GET', '/missing', 404, undefined, undefined],
    ],
  )
  assert.doesNotMatch(lines.join('\n'), /sesame|secret/)
})

test('text: one readable line; none: no line at all', async () => {
  const text = await serveAndLog('text')
  assert.equal(text.length, 3)
  assert.match(text[0]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z POST \/v1\/gen\/:n 200 · 2 prompt \+ 2 completion tokens · \d+ ms$/)
  assert.match(text[2]!, /^\S+ GET \/missing 404 · \d+ ms$/)
  assert.deepEqual(await serveAndLog('none'), [])
})
