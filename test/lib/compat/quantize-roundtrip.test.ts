/**
 * quantize_roundtrip: stories260K (F32) and the F16 fixture quantize to Q8_0 and score within the
 * default bound; a bound of 0 makes exactly this check fail on the real model (Q8_0 is lossy); an
 * already quantized row is not executed, with quantize's reason.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readdirSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {quantizeRoundtrip} from '../../../src/lib/compat/checks/quantize-roundtrip.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON

function row(file: string, type: string): RosterRow {
  return {
    id: file,
    path: sharedPath(file),
    rosterPath: `../shared/${file}`,
    sha256: '',
    architecture: 'llama',
    type,
    checks: {quantize_roundtrip: {}},
    expectedFailures: {},
  }
}

describe('quantize_roundtrip', {skip: SKIP}, () => {
  let dir: string
  let n = 0
  // One thread: quantize's worker pool loads its .ts worker through `--import tsx`, which Node 20's
  // workers do not honour (ERR_UNKNOWN_FILE_EXTENSION); the compiled CLI's .js workers are unaffected.
  const env = (): CheckEnv => ({tmpDir: mkdtempSync(join(dir, `env-${n++}-`)), signal: new AbortController().signal, threads: 1})
  const stories = row('models/stories260K.gguf', 'F32')

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-compat-quantize-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('declares its name and parameter', () => {
    assert.equal(quantizeRoundtrip.name, 'quantize_roundtrip')
    assert.deepEqual(Object.keys(quantizeRoundtrip.params), ['maxNllDelta'])
  })

  test('stories260K (F32): the Q8_0 copy scores within 0.05 nats; the scratch files are removed', async () => {
    const e = env()
    assert.equal(await quantizeRoundtrip.when(stories, {}, e), undefined)
    const out = await quantizeRoundtrip.run(stories, {}, e)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^\|Δ mean NLL\| \S+ nats <= 0.05 \(F32 \S+ -> Q8_0 \S+ over \d+ tokens; KL mean \S+, max \S+; top-1 agreement [\d.]+ %; \d+ of \d+ tensors converted/,
    )
    const f = out.figures!.nllDelta!
    assert.equal(f.better, 'lower')
    assert.ok(f.value > 0 && f.value <= 0.05, String(f.value))
    assert.deepEqual(readdirSync(e.tmpDir), [])
  })

  test('the F16 fixture: within the bound', async () => {
    const r = row('fixtures/llama-f16.gguf', 'F16')
    assert.equal(await quantizeRoundtrip.when(r, {}, env()), undefined)
    const out = await quantizeRoundtrip.run(r, {}, env())
    assert.equal(out.outcome, 'pass', out.evidence)
  })

  test('mutation: a bound of 0 fails on the real model, with the figure and its bound', async () => {
    const out = await quantizeRoundtrip.run(stories, {maxNllDelta: 0}, env())
    assert.equal(out.outcome, 'fail', out.evidence)
    assert.match(out.evidence, /^\|Δ mean NLL\| \S+ nats > 0 \(/)
    assert.ok(out.figures!.nllDelta!.value > 0)
  })

  test('not executed on an already quantized model: quantize takes F32/F16/BF16 only', async () => {
    for (const [file, type] of [
      ['fixtures/stories260K-q8_0.gguf', 'Q8_0'],
      ['fixtures/llama-q4_0.gguf', 'Q4_0'],
    ] as const) {
      const reason = await quantizeRoundtrip.when(row(file, type), {}, env())
      assert.equal(reason, `the model is ${type}: quantize converts F32/F16/BF16 weights only (requantizing is refused)`)
    }
  })

  test('not executed when the row says F16 but quantize would requantize a tensor', async () => {
    // stories260K-q4_0 holds F16 and Q4_0 tensors: a row typed F16 still cannot be converted.
    const reason = await quantizeRoundtrip.when(row('fixtures/stories260K-q4_0.gguf', 'F16'), {}, env())
    assert.match(reason ?? '', /^quantize refuses it: tensor \S+ is already Q4_0; converting it to Q8_0 would requantize it/)
  })

  test('a negative bound is refused by name', async () => {
    await assert.rejects(quantizeRoundtrip.run(stories, {maxNllDelta: -1}, env()), /parameter maxNllDelta must be >= 0/)
  })
})
