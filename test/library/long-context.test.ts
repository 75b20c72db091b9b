/**
 * The library's long-context options reach the engine: `contextShift` gives the tokens `runner run
 * --context-shift` gives (the CLI's --keep N counts after BOS, the library's keep includes it; the
 * shift itself is anchored to llama.cpp in test/differential/context-shift.test.ts), and `swaFull`
 * keeps the flat cache, whose tokens the default ring must equal (the flat cache is the ring's anchor).
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {RunnerError} from '../../src/lib/errors.js'
import {loadModel} from '../../src/lib/library/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

describe('loadModel and generate: contextShift and swaFull', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('contextShift: the tokens of runner run --context-shift, more than the context holds', async () => {
    const stories = sharedPath('models', 'stories260K.gguf')
    const cli = await runCliAsync([
      'run',
      stories,
      '-p',
      'Once upon a time',
      '-n',
      '150',
      '--temp',
      '0',
      '-c',
      '64',
      '-t',
      '1',
      '--context-shift',
      '--keep',
      '2',
      '--json',
    ])
    assert.equal(cli.status, 0, cli.stderr)
    const want = JSON.parse(cli.stdout) as {tokens: number[]; contextShift: {shifts: number}}
    assert.ok(want.contextShift.shifts > 0)
    const model = await loadModel(stories, {contextSize: 64, threads: 1})
    try {
      const r = await model.generate('Once upon a time', {maxTokens: 150, temperature: 0, contextShift: {keep: 3}})
      assert.deepEqual(r.tokens, want.tokens)
      assert.equal(r.shifts?.count, want.contextShift.shifts)
      await assert.rejects(
        model.generate('x', {contextShift: {keep: -1}}),
        (e: unknown) => e instanceof RunnerError && e.code === 'LIBRARY_BAD_OPTION',
      )
    } finally {
      await model.dispose()
    }
  })

  test('swaFull: the flat cache (more KV bytes), the same tokens as the ring', async () => {
    const gemma = sharedPath('fixtures', 'gemma3.gguf')
    const run = async (swaFull: boolean) => {
      const model = await loadModel(gemma, {contextSize: 256, batchSize: 16, threads: 1, swaFull})
      try {
        const {tokens} = await model.generate('Once upon a time, there was a little girl', {maxTokens: 120, temperature: 0})
        return {tokens, bytes: model.info.kvCacheBytes}
      } finally {
        await model.dispose()
      }
    }
    const [ring, flat] = [await run(false), await run(true)]
    assert.deepEqual(ring.tokens, flat.tokens)
    // gemma3 fixture, 4 layers (one global), 1 KV head of 32, F16: 256 positions flat, a 32-position ring (run-kv.test.ts has the formula's figures).
    assert.equal(flat.bytes, 4 * 2 * 256 * 32 * 2)
    assert.ok(ring.bytes < flat.bytes, `${ring.bytes} < ${flat.bytes}`)
  })
})
