/**
 * speed: measures pp and tg tokens/s on stories260K and passes; its figures say "higher is better"
 * with the roster's tolerance, so the baseline gate (types.ts: the allowed relative move) fails a
 * drop beyond it and lets a smaller one through. The check itself has no bound to mutate.
 */
import assert from 'node:assert/strict'
import {cpus} from 'node:os'
import {describe, test} from 'node:test'

import {median, speed, speedFigures} from '../../../src/lib/compat/checks/speed.js'
import {compareToBaseline, type Report} from '../../../src/lib/compat/index.js'
import type {CheckEnv, Figure, RosterRow} from '../../../src/lib/compat/types.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON

const row: RosterRow = {
  id: 'stories260K',
  path: sharedPath('models/stories260K.gguf'),
  rosterPath: '../shared/models/stories260K.gguf',
  sha256: '',
  architecture: 'llama',
  type: 'F32',
  checks: {speed: {}},
  expectedFailures: {},
}
const env: CheckEnv = {tmpDir: '/nonexistent', signal: new AbortController().signal, threads: 2}

/** Whether the baseline gate itself (compareToBaseline) flags `now` against `baseline`, on two one-result reports of one machine. */
function regressed(baseline: Figure, now: Figure): boolean {
  const report = (f: Figure): Report => ({
    format: 'runner.compat-report',
    version: 1,
    incomplete: false,
    started: 't',
    finished: 't',
    build: {runner: '0', gitCommit: null, abi: 1, cpuFeatures: [], kernels: {}},
    host: {platform: 'linux-x64', cpu: 'X', cores: 2, memoryBytes: 1, node: 'v20'},
    roster: {path: 'r', sha256: '0'.repeat(64), rows: 1},
    selection: {rows: null, checks: null},
    run: {jobs: 1, threads: 2},
    results: [{row: 'a', check: 'speed', outcome: 'pass', evidence: 'e', ms: 1, figures: {x: f}}],
    summary: {pass: 1, fail: 0, notExecuted: 0, expectedFailures: 0},
  })
  return compareToBaseline(report(now), report(baseline)).length > 0
}

describe('speed', () => {
  test('declares its name and parameters', () => {
    assert.equal(speed.name, 'speed')
    assert.deepEqual(Object.keys(speed.params).sort(), ['pp', 'reps', 'tg', 'tolerance'])
  })

  test('stories260K: measured and passed, with the figures, the CPU model and the threads', {skip: SKIP}, async () => {
    assert.equal(await speed.when(row, {}, env), undefined)
    const out = await speed.run(row, {pp: 32, tg: 16, reps: 3}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    const pp = out.figures!.ppTokensPerSecond!
    const tg = out.figures!.tgTokensPerSecond!
    assert.ok(pp.value > 0 && tg.value > 0, out.evidence)
    assert.equal(
      out.evidence,
      `pp 32: ${pp.value} tokens/s, tg 16: ${tg.value} tokens/s (median of 3; 2 thread(s) on ${cpus()[0]!.model.trim()}; tolerance 0.5 against the baseline)`,
    )
    for (const f of [pp, tg]) assert.deepEqual([f.better, f.tolerance, f.unit], ['higher', 0.5, 'tokens/s'])
  })

  test('the default parameters measure too (pp 64, tg 32)', {skip: SKIP}, async () => {
    const out = await speed.run(row, {reps: 1}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(out.evidence, /^pp 64: \S+ tokens\/s, tg 32: \S+ tokens\/s \(median of 1;/)
  })

  test('figure semantics: a drop beyond the tolerance regresses against a baseline, a smaller one or a rise does not', () => {
    const base = speedFigures(1000, 200, 0.5)
    const half = (x: number, f: number) => speedFigures(1000 * x, 200 * f, 0.5)
    assert.equal(regressed(base.ppTokensPerSecond!, half(0.4, 1).ppTokensPerSecond!), true, '60 % slower prompt: fails')
    assert.equal(regressed(base.tgTokensPerSecond!, half(1, 0.3).tgTokensPerSecond!), true, '70 % slower generation: fails')
    assert.equal(regressed(base.ppTokensPerSecond!, half(0.6, 1).ppTokensPerSecond!), false, '40 % slower: within the noise allowed')
    assert.equal(regressed(base.tgTokensPerSecond!, half(1, 3).tgTokensPerSecond!), false, 'faster never regresses')
    // A tighter roster tolerance reaches the figures.
    const tight = speedFigures(1000, 200, 0.1)
    assert.equal(tight.ppTokensPerSecond!.tolerance, 0.1)
    assert.equal(regressed(tight.ppTokensPerSecond!, speedFigures(850, 200, 0.1).ppTokensPerSecond!), true, '15 % slower at tolerance 0.1')
  })

  test('the tolerance parameter reaches the figures; bad parameters are refused by name', {skip: SKIP}, async () => {
    const out = await speed.run(row, {pp: 8, tg: 4, reps: 1, tolerance: 0.2}, env)
    assert.equal(out.figures!.ppTokensPerSecond!.tolerance, 0.2)
    assert.equal(out.figures!.tgTokensPerSecond!.tolerance, 0.2)
    await assert.rejects(speed.run(row, {reps: 0}, env), /parameter reps must be an integer >= 1/)
    await assert.rejects(speed.run(row, {pp: 2.5}, env), /parameter pp must be an integer >= 1/)
    await assert.rejects(speed.run(row, {tolerance: 1.5}, env), /parameter tolerance must be in \[0, 1\]/)
  })

  test('median of an odd and an even count', () => {
    assert.equal(median([3, 1, 2]), 2)
    assert.equal(median([4, 1, 3, 2]), 2.5)
  })
})
