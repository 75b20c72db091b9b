/**
 * One range policy for context sizes (issue #22), as llama.cpp's: a default never exceeds the model's
 * training context; a size given beyond it runs, with one warning naming both numbers (llama.cpp:
 * "n_ctx_seq (…) > n_ctx_train (…) -- possible training context overflow"); a size the engine cannot
 * take is refused naming it as the caller calls it. Before, run took -c 1000000 on a 2048-token model
 * silently while score refused --ctx 4096.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {contextSize, MAX_CONTEXT_SIZE} from '../../../src/lib/engine/index.js'

test('the default is the training context, capped, and never beyond it', () => {
  assert.equal(contextSize(undefined, 2048), 2048)
  assert.equal(contextSize(undefined, 131072), 4096)
  assert.equal(contextSize(undefined, 256, {cap: 512}), 256)
  assert.equal(contextSize(undefined, 2048, {cap: 512}), 512)
})

test('a size given beyond the training context runs, with one warning naming both numbers', () => {
  const warnings: string[] = []
  assert.equal(contextSize(1_000_000, 2048, {onWarning: (m) => warnings.push(m)}), 1_000_000)
  assert.equal(contextSize(2048, 2048, {onWarning: (m) => warnings.push(m)}), 2048)
  assert.equal(warnings.length, 1)
  assert.match(warnings[0]!, /1000000 > the model's training context 2048: possible training context overflow/)
})

test('a size the engine cannot take is refused naming it as the caller does', () => {
  assert.equal(MAX_CONTEXT_SIZE, 16777216)
  for (const bad of [0, -1, 1.5, MAX_CONTEXT_SIZE + 1])
    assert.throws(
      () => contextSize(bad, 2048, {name: '-c/--ctx-size'}),
      (e: unknown) =>
        e instanceof Error && (e as {code?: string}).code === 'CONTEXT_BAD_OPTION' && e.message.startsWith(`-c/--ctx-size ${bad}: `),
    )
})

test('rope scaling (issue #23): a size the scaling covers runs without the warning; past it, the warning names the reach', () => {
  const scaled = (type: string, nCtxCovered: number) => ({
    nCtxTrain: 256,
    ropeScaling: {
      declared: {type, freqBase: 10000, freqScale: 0.25, nCtxOrig: 64, attnFactor: 1},
      overrides: {},
      type,
      nCtxCovered,
    },
  })
  const warnings: string[] = []
  const onWarning = (m: string) => warnings.push(m)
  // yarn x4 from an original 64 on a file trained at 256: covers 256 only, so 1024 warns.
  assert.equal(contextSize(1024, scaled('yarn', 256), {onWarning}), 1024)
  assert.match(warnings.pop()!, /1024 > the model's training context 256/)
  // Covering 4096: 4096 runs quietly, 4097 warns naming 4096.
  assert.equal(contextSize(4096, scaled('yarn', 4096), {onWarning}), 4096)
  assert.equal(warnings.length, 0)
  assert.equal(contextSize(4097, scaled('linear', 4096), {onWarning}), 4097)
  assert.match(warnings.pop()!, /4097 > the 4096 positions the model's linear rope scaling covers \(training context 256\)/)
  // The default stays within the training context, scaled or not (llama.cpp's n_ctx default is n_ctx_train).
  assert.equal(contextSize(undefined, scaled('yarn', 4096)), 256)
})
