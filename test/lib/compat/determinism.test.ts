/**
 * determinism: passes on stories260K and a Q4_0 fixture (1 vs 2 threads, one batch vs batches of 7,
 * one decode call vs three: bitwise), and fails in its test-only mode
 * (RUNNER_COMPAT_TEST_PERTURB=threads: one logit of the 2-thread run one ulp up), naming the pair
 * and the first differing index.
 */
import assert from 'node:assert/strict'
import {after, describe, test} from 'node:test'

import {determinism, PROMPT} from '../../../src/lib/compat/checks/determinism.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {Model} from '../../../src/lib/engine/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const row = (path: string, type: string): RosterRow => ({
  id: path,
  path,
  rosterPath: path,
  sha256: '',
  architecture: 'llama',
  type,
  checks: {determinism: {}},
  expectedFailures: {},
})

describe('determinism', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  after(() => delete process.env.RUNNER_COMPAT_TEST_PERTURB)
  const env: CheckEnv = {tmpDir: '/nonexistent', signal: new AbortController().signal, threads: 1}

  test('the prompt is 40 tokens in stories260K', async () => {
    const m = await Model.load(sharedPath('models', 'stories260K.gguf'))
    assert.equal(m.tokenizer.encode(PROMPT, {addSpecial: true}).length, 40)
    m.dispose()
  })

  for (const [file, type] of [
    ['models/stories260K.gguf', 'F32'],
    ['fixtures/llama-q4_0.gguf', 'Q4_0'],
  ] as const) {
    test(`passes on ${file}`, async () => {
      const r = row(sharedPath(...file.split('/')), type)
      assert.equal(await determinism.when(r, {}, env), undefined)
      const out = await determinism.run(r, {}, env)
      assert.equal(out.outcome, 'pass', out.evidence)
      assert.equal(
        out.evidence,
        '40 tokens × 512 logits bitwise equal: 1 thread, one batch, one call = 2 threads = batches of 7 = 3 decode calls (13+13+14)',
      )
    })
  }

  test('fails when one logit of the 2-thread run moves by one ulp (test-only perturbation)', async () => {
    process.env.RUNNER_COMPAT_TEST_PERTURB = 'threads'
    try {
      const out = await determinism.run(row(sharedPath('models', 'stories260K.gguf'), 'F32'), {}, env)
      assert.equal(out.outcome, 'fail')
      assert.match(
        out.evidence,
        /^1 thread, one batch, one call vs 2 threads: logits differ first at index 10240 \(position 20, token 0\): \S+ vs \S+$/,
      )
    } finally {
      delete process.env.RUNNER_COMPAT_TEST_PERTURB
    }
  })
})
