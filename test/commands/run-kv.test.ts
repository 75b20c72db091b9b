// The KV cache's memory as `run` and `inspect` report it (issue #23): with the sliding-window ring
// (the default on gemma2/3) and without it (--swa-full). The figures are the engine's own allocation
// (runner_context_kv_info), checked against kvCacheSize's layout arithmetic; the ring must not change
// a token.
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {kvCacheSize} from '../../src/lib/engine/kv-size.js'
import {checkModel} from '../../src/lib/model-check/index.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

const GEMMA3 = sharedPath('fixtures', 'gemma3.gguf')

describe('run and inspect report the KV cache with and without the ring', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const args = ['run', GEMMA3, '-p', 'Once upon a time', '-n', '40', '--temp', '0', '-c', '256', '-b', '16', '-t', '1']

  test('run --json: the ring holds 32 positions on the sliding layers, and saves what kvCacheSize says', async () => {
    const [ring, full] = await Promise.all([runCliAsync([...args, '--json']), runCliAsync([...args, '--json', '--swa-full'])])
    assert.equal(ring.status, 0, ring.stderr)
    assert.equal(full.status, 0, full.stderr)
    const a = JSON.parse(ring.stdout)
    const b = JSON.parse(full.stdout)
    const config = checkModel(readGgufModel(GEMMA3)).plan.config
    assert.deepEqual(a.kv, kvCacheSize(config, {nCtx: 256, nBatch: 16, kvType: 'f16'}))
    assert.equal(a.kv.ringPositions, 32)
    assert.equal(a.kv.ringLayers, config.swaLayers!.filter(Boolean).length)
    assert.ok(a.kv.bytes < a.kv.flatBytes)
    assert.deepEqual(b.kv, {bytes: a.kv.flatBytes, flatBytes: a.kv.flatBytes, ringLayers: 0, ringPositions: 0})
    // 5 + 40 positions wrap the 32-position ring: the same tokens either way.
    assert.deepEqual(a.tokens, b.tokens)
    assert.equal(a.tokens.length, 40)
  })

  test('run: the summary line names the KV bytes and what the ring saves', async () => {
    const r = await runCliAsync(args)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, / · KV [\d.]+ KiB \(SWA ring of 32 positions on \d+ layers; flat [\d.]+ KiB\)\n$/)
    const f = await runCliAsync([...args, '--swa-full'])
    assert.match(f.stderr, / · KV [\d.]+ KiB\n$/)
  })

  test('inspect: the KV cache of a default context, as text and JSON', async () => {
    const [text, json] = await Promise.all([runCliAsync(['inspect', GEMMA3]), runCliAsync(['inspect', GEMMA3, '--json'])])
    assert.equal(text.status, 0, text.stderr)
    assert.match(text.stdout, /\nmemory: KV [\d.]+ KiB at 256 positions, batch 512, F16\n/)
    const doc = JSON.parse(json.stdout)
    const config = checkModel(readGgufModel(GEMMA3)).plan.config
    // The fixture's context (256) is smaller than a ring for a 512-token batch: no ring.
    assert.deepEqual(doc.memory.kvCache, {
      nCtx: 256,
      nBatch: 512,
      kvType: 'f16',
      ...kvCacheSize(config, {nCtx: 256, nBatch: 512, kvType: 'f16'}),
    })
    assert.equal(doc.memory.kvCache.ringLayers, 0)
  })

  test('bench: a test with a depth rewinds to it every run, so it keeps the flat cache (a ring could not serve the rewind)', async () => {
    const r = await runCliAsync(['bench', '-m', GEMMA3, '-p', '64', '-n', '8', '-d', '150', '-b', '16', '-r', '2', '-t', '1', '-o', 'json'])
    assert.equal(r.status, 0, r.stderr)
    assert.equal((JSON.parse(r.stdout) as unknown[]).length, 2)
  })
})
