/**
 * The compat-matrix's framework: the roster refuses what is not a roster by name, the matrix reports
 * a missing file or a broken pin as such (and a failed load stops the row's other checks), a run that
 * executed nothing is refused, an interrupt gives an incomplete report, reports match their schema,
 * and the baseline gate flags exactly the regressions (a pass that fails or does not run, a figure
 * beyond its tolerance) and nothing else (a check left out on purpose, an expected failure, a speed
 * measured on another machine).
 */
import assert from 'node:assert/strict'
import {copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {
  CHECK_CLASSES,
  compareToBaseline,
  compatMatrix,
  ledger,
  loadBaseline,
  loadRoster,
  type Report,
  reportSchemaErrors,
  runMatrix,
} from '../../../src/lib/compat/index.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../../helpers/shared.js'

const STORIES_SHA = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d'
const dir = mkdtempSync(join(tmpdir(), 'runner-compat-test-'))
after(() => rmSync(dir, {recursive: true, force: true}))

function roster(name: string, body: unknown): string {
  const path = join(dir, name)
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body))
  return path
}

const row = (over: Record<string, unknown> = {}) => ({
  id: 'stories',
  path: sharedPath('models/stories260K.gguf'),
  sha256: STORIES_SHA,
  architecture: 'llama',
  type: 'F32',
  checks: ['load'],
  ...over,
})
const doc = (rows: unknown[]) => ({format: 'runner.compat-roster', version: 1, rows})

describe('the roster', () => {
  test('JSON and YAML load; paths resolve against the roster', () => {
    const y = roster(
      'r.yaml',
      'format: runner.compat-roster\nversion: 1\nrows:\n  - id: a\n    path: m.gguf\n    sha256: "' +
        '0'.repeat(64) +
        '"\n    architecture: llama\n    type: F32\n    checks: {load: {}}\n',
    )
    const r = loadRoster(y)
    assert.equal(r.rows[0]!.path, join(dir, 'm.gguf'))
    assert.deepEqual(r.rows[0]!.checks, {load: {}})
    assert.match(r.sha256, /^[0-9a-f]{64}$/)
  })
  const refused: Array<[string, unknown, RegExp]> = [
    ['an unknown check', doc([row({checks: ['load', 'no_such_check']})]), /rows\/0\/checks/],
    ['an unknown parameter', doc([row({checks: {load: {speed: 1}}})]), /additional properties \(speed\)/],
    ['a bad sha256', doc([row({sha256: 'abc'})]), /sha256/],
    ['a parameter below its minimum', doc([row({checks: {load: {}, speed: {reps: 0}}})]), /reps must be >= 1/],
    ['a duplicate id', doc([row(), row()]), /row id stories appears twice/],
    ['another format', {format: 'x', version: 1, rows: []}, /format/],
  ]
  for (const [what, body, pattern] of refused)
    test(`refuses ${what}, naming it`, () => {
      assert.throws(
        () => loadRoster(roster('bad.json', body)),
        (e: Error & {code?: string}) => e.code === 'ROSTER_INVALID' && pattern.test(e.message),
      )
    })
  test('refuses an expected failure of a check the row does not run', () => {
    const body = doc([row({checks: ['load'], expected_failures: [{check: 'determinism', reason: 'x'}]})])
    assert.throws(() => loadRoster(roster('bad2.json', body)), /expected failure of determinism, which the row does not run/)
  })
})

describe('the matrix', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('a missing file is not executed, with why; a broken pin fails load and stops the row', async () => {
    const copy = join(dir, 'flipped.gguf')
    copyFileSync(sharedPath('models/stories260K.gguf'), copy)
    const bytes = readFileSync(copy)
    bytes[bytes.length - 7] ^= 0x40 // one bit of the last tensor's data
    writeFileSync(copy, bytes)
    const r = await runMatrix(
      loadRoster(
        roster(
          'm.json',
          doc([
            row(),
            row({id: 'gone', path: join(dir, 'nope.gguf'), url: 'https://example.org/m.gguf'}),
            row({id: 'flipped', path: copy}),
          ]),
        ),
      ),
    )
    assert.deepEqual(reportSchemaErrors(r), [])
    const by = (id: string) => r.results.find((x) => x.row === id)!
    assert.equal(by('stories').outcome, 'pass')
    assert.equal(by('gone').outcome, 'not_executed')
    assert.match(by('gone').evidence, /not there \(the roster says it comes from https:\/\/example.org\/m.gguf/)
    assert.equal(by('flipped').outcome, 'fail')
    assert.match(by('flipped').evidence, /^sha256 [0-9a-f]{64}, the roster pins 270cba/)
    assert.deepEqual(r.summary, {pass: 1, fail: 1, notExecuted: 1, expectedFailures: 0})
    assert.match(ledger(r), /\| flipped \| FAIL \|/)
  })

  test('an expected failure is reported and does not fail the run; nothing executed is refused', async () => {
    const copy = join(dir, 'flipped2.gguf')
    copyFileSync(sharedPath('models/stories260K.gguf'), copy)
    const expected = roster(
      'e.json',
      doc([row({id: 'known', path: copy, sha256: 'f'.repeat(64), expected_failures: [{check: 'load', reason: 'pinned to a newer file'}]})]),
    )
    const ac = new AbortController()
    const ok = await compatMatrix({roster: expected, jobs: 1, quiet: true, signal: ac.signal})
    assert.equal(ok.exitCode, 0)
    assert.equal(ok.report.summary.expectedFailures, 1)
    assert.equal(ok.report.results[0]!.expectedFailure, 'pinned to a newer file')
    const none = await compatMatrix({
      roster: roster('n.json', doc([row({path: join(dir, 'absent.gguf')})])),
      jobs: 1,
      quiet: true,
      signal: ac.signal,
    })
    assert.equal(none.exitCode, 1)
    assert.match(none.verdict!, /nothing executed/)
  })

  test('an interrupt gives an incomplete report and exit 130', async () => {
    const ac = new AbortController()
    const rows = Array.from({length: 6}, (_, i) => row({id: `r${i}`}))
    const r = await runMatrix(loadRoster(roster('i.json', doc(rows))), {signal: ac.signal, onResult: () => ac.abort()})
    assert.equal(r.incomplete, true)
    assert.ok(r.results.length >= 1 && r.results.length < 6, `${r.results.length} results`)
    assert.deepEqual(reportSchemaErrors(r), [])
  })
})

test('docs/compat-matrix.md names every check class and parameter', () => {
  const docs = readFileSync(join(REPO_ROOT, 'docs', 'compat-matrix.md'), 'utf8')
  for (const c of CHECK_CLASSES) {
    assert.ok(docs.includes(`| \`${c.name}\` |`), `no row for ${c.name}`)
    for (const p of Object.keys(c.params)) assert.ok(docs.includes(`\`${p}\` (`), `${c.name}'s parameter ${p} is not documented`)
  }
})

describe('the baseline gate', () => {
  const base = (results: Report['results'], over: Partial<Report> = {}): Report => ({
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
    results,
    summary: {pass: 0, fail: 0, notExecuted: 0, expectedFailures: 0},
    ...over,
  })
  const rec = (check: string, outcome: 'pass' | 'fail' | 'not_executed', extra: object = {}) => ({
    row: 'a',
    check,
    outcome,
    evidence: 'e',
    ms: 1,
    ...extra,
  })
  const speed = (v: number) => ({figures: {decode: {value: v, better: 'higher' as const, tolerance: 0.5, machine: true}}})
  const err = (v: number) => ({figures: {maxAbs: {value: v, better: 'lower' as const, tolerance: 0.2}}})

  test('flags a pass that now fails, does not run, or is gone', () => {
    const b = base([rec('load', 'pass'), rec('determinism', 'pass'), rec('speed', 'pass'), rec('structured', 'fail')])
    const n = base([rec('load', 'fail'), rec('determinism', 'not_executed'), rec('structured', 'fail')])
    const what = compareToBaseline(n, b).map((x) => `${x.check}: ${x.what}`)
    assert.equal(what.length, 3)
    assert.match(what[0]!, /^load: passed in the baseline, fails now/)
    assert.match(what[1]!, /^determinism: passed in the baseline, not executed now/)
    assert.match(what[2]!, /^speed: .*gone from the roster/)
  })
  test('not a regression: left out with --checks/--only, an expected failure, the same pass', () => {
    const b = base([rec('load', 'pass'), rec('determinism', 'pass')])
    assert.deepEqual(compareToBaseline(base([rec('load', 'pass')], {selection: {rows: null, checks: ['load']}}), b), [])
    assert.deepEqual(compareToBaseline(base([rec('load', 'pass'), rec('determinism', 'fail', {expectedFailure: 'known'})]), b), [])
  })
  test('figures: beyond the tolerance in the wrong direction, and speeds only on the same machine', () => {
    assert.equal(compareToBaseline(base([rec('g', 'pass', err(1.3))]), base([rec('g', 'pass', err(1))])).length, 1)
    assert.equal(compareToBaseline(base([rec('g', 'pass', err(1.1))]), base([rec('g', 'pass', err(1))])).length, 0)
    assert.equal(compareToBaseline(base([rec('g', 'pass', err(0.1))]), base([rec('g', 'pass', err(1))])).length, 0)
    assert.equal(compareToBaseline(base([rec('s', 'pass', speed(40))]), base([rec('s', 'pass', speed(100))])).length, 1)
    assert.equal(compareToBaseline(base([rec('s', 'pass', speed(60))]), base([rec('s', 'pass', speed(100))])).length, 0)
    const other = base([rec('s', 'pass', speed(10))], {host: {platform: 'linux-x64', cpu: 'Y', cores: 2, memoryBytes: 1, node: 'v20'}})
    assert.equal(compareToBaseline(other, base([rec('s', 'pass', speed(100))])).length, 0)
    const twoJobs = base([rec('s', 'pass', speed(10))], {run: {jobs: 2, threads: 1}})
    assert.equal(compareToBaseline(twoJobs, base([rec('s', 'pass', speed(100))])).length, 0)
    // the tolerance the roster gives now: tightened to 10 %, a 20 % drop fails against a 50 % baseline
    const tight = {figures: {decode: {value: 80, better: 'higher' as const, tolerance: 0.1, machine: true}}}
    assert.equal(compareToBaseline(base([rec('s', 'pass', tight)]), base([rec('s', 'pass', speed(100))])).length, 1)
  })
  test('refuses a baseline that is incomplete, has no version, or is not a report', () => {
    const write = (name: string, v: unknown) => {
      const p = join(dir, name)
      writeFileSync(p, JSON.stringify(v))
      return p
    }
    assert.throws(() => loadBaseline(write('b1.json', base([], {incomplete: true}))), /interrupted run/)
    const {version: _v, ...noVersion} = base([])
    assert.throws(() => loadBaseline(write('b2.json', noVersion)), /records no version/)
    assert.throws(() => loadBaseline(write('b3.json', {format: 'other'})), /not a compat-matrix report/)
    assert.throws(
      () => loadBaseline(write('b5.json', base([], {selection: {rows: ['a'], checks: null}}))),
      /selection is not the whole roster/,
    )
    assert.equal(loadBaseline(write('b4.json', base([]))).version, 1)
  })
})
