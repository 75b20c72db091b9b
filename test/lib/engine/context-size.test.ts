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
