// keep_alive as Ollama documents it (its API docs: a duration string such as "10m" or "24h", a
// number of seconds, 0 to unload at once, a negative value to keep the model loaded) and Go's
// time.ParseDuration, which Ollama parses it with (its documented examples: "300ms", "-1.5h",
// "2h45m"); and the catalog's refusals, each naming the flag, before any model loads.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {RunnerError} from '../../../src/lib/errors.js'
import {buildCatalog} from '../../../src/lib/server/catalog.js'
import {FOREVER, expiresAt, keepAliveFlag, parseKeepAlive, requestKeepAlive} from '../../../src/lib/server/keep-alive.js'
import {ApiError} from '../../../src/lib/server/api-error.js'
import {startServer} from '../../../src/lib/server/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

describe('keep_alive', () => {
  test("Go's and Ollama's documented spellings", () => {
    const cases: Array<[unknown, number | 'forever']> = [
      ['5m', 300_000],
      ['10m', 600_000],
      ['24h', 86_400_000],
      ['300ms', 300],
      ['2h45m', 9_900_000],
      ['1h30m', 5_400_000],
      ['1.5s', 1500],
      ['90s', 90_000],
      [3600, 3_600_000],
      ['3600', 3_600_000],
      [0, 0],
      ['0', 0],
      ['0s', 0],
      [-1, 'forever'],
      ['-1', 'forever'],
      ['-1m', 'forever'],
      ['-1.5h', 'forever'],
    ]
    for (const [value, want] of cases) assert.equal(parseKeepAlive(value), want, JSON.stringify(value))
    // Beyond what a Node timer holds (about 24.8 days) is as good as forever while the server runs.
    assert.equal(parseKeepAlive('1000h'), 'forever')
  })

  test('anything else is refused naming the field (400) or the flag (exit 2)', () => {
    for (const bad of ['soon', '5 minutes', '5M', 'm', '', '1d', Number.NaN, Infinity, true, {}, [1]]) {
      assert.equal(parseKeepAlive(bad), undefined, JSON.stringify(bad))
      const e = (() => {
        try {
          requestKeepAlive(bad)
        } catch (error) {
          return error
        }
      })()
      assert.ok(e instanceof ApiError && e.status === 400 && e.param === 'keep_alive', String(bad))
    }
    assert.equal(requestKeepAlive(undefined), undefined)
    assert.equal(requestKeepAlive(null), undefined)
    assert.throws(
      () => keepAliveFlag('soon'),
      (e: unknown) => e instanceof RunnerError && e.exitCode === 2 && /--keep-alive/.test(e.message),
    )
  })

  test('expires_at: the last use plus keep_alive; forever far ahead', () => {
    assert.equal(expiresAt(Date.UTC(2026, 0, 1), 300_000), '2026-01-01T00:05:00.000Z')
    assert.equal(expiresAt(0, 'forever'), FOREVER)
  })
})

describe('what serve refuses before any model loads', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const stories = () => sharedPath('models', 'stories260K.gguf')
  const llama = () => sharedPath('fixtures', 'llama.gguf')
  const usage = (pattern: RegExp) => (e: unknown) => e instanceof RunnerError && e.exitCode === 2 && pattern.test(e.message)

  test('two models answering one id; --alias with several models; a bundle for no model, or without a key', async () => {
    await assert.rejects(buildCatalog({models: [`a=${stories()}`, `a=${llama()}`]}), usage(/two models answer to the id a/))
    await assert.rejects(buildCatalog({models: [stories(), `stories260K=${llama()}`]}), usage(/two models answer to the id stories260K/))
    await assert.rejects(buildCatalog({models: [`a=${stories()}`, `b=${llama()}`], aliases: ['x']}), usage(/--alias names the one model/))
    await assert.rejects(
      buildCatalog({models: [`a=${stories()}`], signatures: {publicKeyPath: 'k.pem', bundles: {zz: 'z.sig'}}}),
      usage(/--model-sig zz=\.\.\.: no model has the id zz/),
    )
    await assert.rejects(
      buildCatalog({models: [`a=${stories()}`], signatures: {bundles: {a: 'a.sig'}}}),
      usage(/--model-sig needs --model-pubkey/),
    )
    const one = await buildCatalog({models: [`small=${stories()}`], aliases: ['tiny']})
    assert.deepEqual(
      one.entries.map((e) => [e.id, e.fileId, e.aliases]),
      [['small', 'stories260K', ['small', 'tiny']]],
    )
    assert.equal(one.single, true)
  })

  test('--lora and a draft model are for one model: refused with several', async () => {
    const models = [`a=${stories()}`, `b=${llama()}`]
    await assert.rejects(startServer({models, port: 0, lora: [{path: 'x.gguf', scale: 1}]}), usage(/--lora adapts one model/))
    await assert.rejects(
      startServer({models, port: 0, speculation: {source: 'model', path: stories()} as never}),
      usage(/--draft pairs a draft model with one model/),
    )
  })
})
