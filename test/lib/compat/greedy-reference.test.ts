/**
 * greedy_reference: passes on stories260K against llama.cpp's recorded outputs, fails on a copy with
 * one weight changed (the largest |w| of output.weight set to 1e4: greedy tokens change at step 0),
 * fails when a roster tightens the tolerance below what the engine reaches, and does not run without
 * a reference.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {flipWeight} from '../../../src/lib/compat/checks/engine-common.js'
import {greedyReference} from '../../../src/lib/compat/checks/greedy-reference.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const row = (path: string, reference?: string): RosterRow => ({
  id: 'stories260K',
  path,
  rosterPath: path,
  sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
  architecture: 'llama',
  type: 'F32',
  checks: {greedy_reference: {}},
  expectedFailures: {},
  ...(reference === undefined ? {} : {reference}),
})

describe('greedy_reference', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-compat-greedy-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const env: CheckEnv = {tmpDir: dir, signal: new AbortController().signal, threads: 1}
  const model = () => sharedPath('models', 'stories260K.gguf')
  const ref = () => sharedPath('reference', 'stories260K.json')

  test('passes on stories260K: 144/144 tokens, log-probabilities within 1e-3', async () => {
    const r = row(model(), ref())
    assert.equal(await greedyReference.when(r, {}, env), undefined)
    const out = await greedyReference.run(r, {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^tokens matched 144\/144; max \|Δ logprob\| \S+ \(position \d+, bound 0\.001\), mean \S+ \(bound 0\.0002\)$/,
    )
    const fig = out.figures!.maxAbsLogprobDiff!
    assert.equal(fig.better, 'lower')
    assert.ok(fig.value >= 0 && fig.value <= 1e-3)
  })

  test('fails on a copy with one weight changed, naming the first divergence', async () => {
    const broken = join(dir, 'broken.gguf')
    flipWeight(model(), broken)
    const out = await greedyReference.run(row(broken, ref()), {}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(
      out.evidence,
      /^greedy prompt 0: first divergence at step 0: ours \d+, llama\.cpp \d+, margin \S+; every margin up to it is >= 0\.001/,
    )
  })

  test("a roster's tolerance overrides the default", async () => {
    const out = await greedyReference.run(row(model(), ref()), {tolerance: 1e-9, meanTolerance: 1e-9}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /max \|Δ logprob\| \S+ \(position \d+, bound 1e-9\)/)
  })

  test('not executed without a reference; a reference the roster names but that is absent fails, naming it', async () => {
    assert.equal(await greedyReference.when(row(model()), {}, env), 'no llama.cpp reference for this model')
    const absent = row(model(), join(dir, 'absent.json'))
    assert.equal(await greedyReference.when(absent, {}, env), undefined)
    const r = await greedyReference.run(absent, {}, env)
    assert.equal(r.outcome, 'fail')
    assert.match(r.evidence, /the roster's reference .*absent\.json does not exist/)
  })
})
