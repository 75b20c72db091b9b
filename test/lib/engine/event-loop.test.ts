/**
 * Long native work never blocks the Node event loop: decode and load run on worker threads. A timer
 * keeps firing every 10 ms while a prefill of several hundred milliseconds runs.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, test} from 'node:test'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import {Model} from '../../../src/lib/engine/model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-eventloop-'))
after(() => rmSync(dir, {recursive: true, force: true}))

test('a timer keeps firing during a long prefill', {skip: hasShared() ? false : NO_SHARED_REASON}, async () => {
  const path = join(dir, 'wide.gguf')
  await makeTestModel(path, {
    arch: 'llama',
    nEmbd: 512,
    nLayer: 4,
    nHead: 8,
    nHeadKv: 8,
    nFf: 1376,
    nCtx: 1024,
    type: 'f32',
    seed: 5n,
    tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
  })
  const model = await Model.load(path)
  const ctx = await model.createContext({nCtx: 1024, nBatch: 512, threads: 1})
  const prompt = Array.from({length: 512}, (_, i) => 3 + (i % 500))
  let ticks = 0
  let last = performance.now()
  let maxGap = 0
  const timer = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
    ticks++
  }, 10)
  const t0 = performance.now()
  await ctx.decode(prompt, {pos: 0, logits: 'last'})
  const ms = performance.now() - t0
  clearInterval(timer)
  ctx.dispose()
  model.dispose()
  assert.ok(ms > 150, `the prefill took only ${ms.toFixed(0)} ms; the test needs a longer one`)
  assert.ok(ticks >= ms / 40, `${ticks} ticks in ${ms.toFixed(0)} ms`)
  assert.ok(maxGap < 150, `the event loop stalled for ${maxGap.toFixed(0)} ms`)
})
