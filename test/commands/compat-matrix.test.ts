/**
 * `runner compat-matrix` end to end (the compiled CLI): a clean run passes and writes a report that
 * ajv validates against the shipped schema, and the mutations the issue names make exactly the
 * expected check fail and the baseline gate exit 1: one weight flipped in a copy of the model
 * (greedy_reference fails against llama.cpp's recorded outputs; load, with the copy's own pin, and
 * determinism still pass), and a thread count that changes logits in the checks' test-only mode
 * (determinism fails alone). Bad rosters and baselines exit 2 naming the field; --only a missing
 * row exits 2. The shipped roster and baseline are themselves checked for schema conformance.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {Ajv} from 'ajv'

import {flipWeight} from '../../src/lib/compat/checks/engine-common.js'
import {loadBaseline, loadRoster, REPORT_SCHEMA} from '../../src/lib/compat/index.js'
import {sha256File} from '../../src/lib/util/index.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-compat-cli-'))
after(() => rmSync(dir, {recursive: true, force: true}))

const STORIES_SHA = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d'
const CHECKS = ['load', 'greedy_reference', 'determinism']

function rosterFor(path: string, sha256: string, name: string): string {
  const file = join(dir, name)
  const rows = [
    {
      id: 'stories',
      path,
      sha256,
      architecture: 'llama',
      type: 'F32',
      reference: sharedPath('reference', 'stories260K.json'),
      checks: CHECKS,
    },
  ]
  writeFileSync(file, JSON.stringify({format: 'runner.compat-roster', version: 1, rows}))
  return file
}

const outcomes = (reportPath: string) =>
  Object.fromEntries(
    (JSON.parse(readFileSync(reportPath, 'utf8')) as {results: Array<{check: string; outcome: string}>}).results.map((r) => [
      r.check,
      r.outcome,
    ]),
  )

describe('runner compat-matrix', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const clean = join(dir, 'clean.json')
  before(async () => {
    const r = await runCliAsync([
      'compat-matrix',
      '--roster',
      rosterFor(sharedPath('models/stories260K.gguf'), STORIES_SHA, 'clean-roster.json'),
      '--out',
      clean,
      '--json',
    ])
    assert.equal(r.status, 0, r.stderr)
  })

  test('a clean run passes; its report is valid under the shipped schema and names the build and host', () => {
    const report = JSON.parse(readFileSync(clean, 'utf8'))
    const validate = new Ajv({strict: false}).compile(REPORT_SCHEMA)
    assert.ok(validate(report), JSON.stringify(validate.errors))
    assert.deepEqual(outcomes(clean), {load: 'pass', greedy_reference: 'pass', determinism: 'pass'})
    assert.match(report.build.runner, /^\d+\.\d+\.\d+/)
    assert.ok(report.host.cores >= 1)
  })

  test('one weight flipped: greedy_reference fails, load and determinism pass, the baseline gate exits 1', async () => {
    const copy = join(dir, 'flipped.gguf')
    flipWeight(sharedPath('models/stories260K.gguf'), copy)
    const out = join(dir, 'flipped-report.json')
    const r = await runCliAsync([
      'compat-matrix',
      '--roster',
      rosterFor(copy, await sha256File(copy), 'flipped-roster.json'),
      '--out',
      out,
      '--baseline',
      clean,
    ])
    assert.equal(r.status, 1, r.stderr)
    assert.deepEqual(outcomes(out), {load: 'pass', greedy_reference: 'fail', determinism: 'pass'})
    assert.match(r.stderr, /regression: stories greedy_reference: passed in the baseline, fails now: greedy prompt 0: first divergence/)
    assert.match(r.stdout, /\| stories \| pass \| FAIL \| pass \|/)
  })

  test("a thread count that changes logits (the checks' test-only mode): determinism fails alone", async () => {
    const out = join(dir, 'perturbed.json')
    const r = await runCliAsync(
      [
        'compat-matrix',
        '--roster',
        rosterFor(sharedPath('models/stories260K.gguf'), STORIES_SHA, 'p-roster.json'),
        '--out',
        out,
        '--baseline',
        clean,
      ],
      {
        env: {RUNNER_COMPAT_TEST_PERTURB: 'threads'},
      },
    )
    assert.equal(r.status, 1, r.stderr)
    assert.deepEqual(outcomes(out), {load: 'pass', greedy_reference: 'pass', determinism: 'fail'})
    assert.match(
      r.stderr,
      /regression: stories determinism: passed in the baseline, fails now: 1 thread, one batch, one call vs 2 threads: logits differ first at index/,
    )
  })

  test('--checks leaves a check out on purpose: no regression', async () => {
    const r = await runCliAsync([
      'compat-matrix',
      '--roster',
      rosterFor(sharedPath('models/stories260K.gguf'), STORIES_SHA, 'c-roster.json'),
      '--checks',
      'load',
      '--baseline',
      clean,
    ])
    assert.equal(r.status, 0, r.stderr)
  })

  test('a bad roster, a bad selection and a bad baseline exit 2, naming what is wrong', async () => {
    const bad = join(dir, 'bad.yaml')
    writeFileSync(
      bad,
      'format: runner.compat-roster\nversion: 1\nrows:\n  - id: x\n    path: a.gguf\n    sha256: "' +
        'a'.repeat(64) +
        '"\n    architecture: llama\n    type: F32\n    checks: {speed: {pp: "many"}}\n',
    )
    const a = await runCliAsync(['compat-matrix', '--roster', bad])
    assert.equal(a.status, 2)
    assert.match(a.stderr, /roster .*bad.yaml: \/rows\/0\/checks.*\[ROSTER_INVALID\]/)
    const good = rosterFor(sharedPath('models/stories260K.gguf'), STORIES_SHA, 's-roster.json')
    const b = await runCliAsync(['compat-matrix', '--roster', good, '--only', 'nope'])
    assert.equal(b.status, 2)
    assert.match(b.stderr, /--only names rows the roster does not have: nope/)
    const noVersion = join(dir, 'nov.json')
    const {version: _v, ...rest} = JSON.parse(readFileSync(clean, 'utf8'))
    writeFileSync(noVersion, JSON.stringify(rest))
    const c = await runCliAsync(['compat-matrix', '--roster', good, '--baseline', noVersion])
    assert.equal(c.status, 2)
    assert.match(c.stderr, /records no version/)
  })

  test('the shipped roster and baseline are valid, and the baseline covers every row x check of the roster', () => {
    const roster = loadRoster(join(REPO_ROOT, 'compat', 'roster.yaml'))
    const baseline = loadBaseline(join(REPO_ROOT, 'compat', 'baseline.json'))
    const want = roster.rows.flatMap((r) => Object.keys(r.checks).map((c) => `${r.id} ${c}`)).sort()
    assert.deepEqual(baseline.results.map((r) => `${r.row} ${r.check}`).sort(), want)
    assert.equal(baseline.summary.fail, 0)
    assert.ok(baseline.summary.pass > 100, `${baseline.summary.pass} passes`)
  })
})

test(
  'Ctrl+C: exit 130, the checks that finished written to --out, marked incomplete',
  {skip: hasShared() ? false : NO_SHARED_REASON},
  async () => {
    const file = join(dir, 'long-roster.json')
    const rows = Array.from({length: 40}, (_, i) => ({
      id: `s${i}`,
      path: sharedPath('models/stories260K.gguf'),
      sha256: STORIES_SHA,
      architecture: 'llama',
      type: 'F32',
      checks: {load: {}, speed: {reps: 3}},
    }))
    writeFileSync(file, JSON.stringify({format: 'runner.compat-roster', version: 1, rows}))
    const out = join(dir, 'partial.json')
    const child = spawn(process.execPath, ['bin/run.js', 'compat-matrix', '--roster', file, '--out', out], {
      cwd: REPO_ROOT,
      env: {...process.env, NO_COLOR: '1'},
    })
    let stderr = ''
    let sent = false
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      if (!sent && /s1: load pass/.test(stderr)) {
        sent = true
        child.kill('SIGINT')
      }
    })
    const code = await new Promise<number | null>((res) => child.on('close', res))
    assert.ok(sent, `no progress line seen: ${stderr.slice(-400)}`)
    assert.equal(code, 130, stderr.slice(-400))
    const report = JSON.parse(readFileSync(out, 'utf8'))
    assert.equal(report.incomplete, true)
    assert.ok(report.results.length >= 3 && report.results.length < 80, `${report.results.length} results`)
    assert.throws(() => loadBaseline(out), /interrupted run/)
  },
)

test("our sha256 is sha256sum's", {skip: hasShared() ? false : NO_SHARED_REASON}, async (t) => {
  const r = spawnSync('sha256sum', [sharedPath('models/stories260K.gguf')], {encoding: 'utf8'})
  if (r.error) return t.skip('sha256sum is not installed')
  assert.equal(r.stdout.split(/\s/)[0], await sha256File(sharedPath('models/stories260K.gguf')))
  assert.equal(r.stdout.split(/\s/)[0], STORIES_SHA)
})

test('--roster-schema and --report-schema print JSON Schemas', async () => {
  const a = await runCliAsync(['compat-matrix', '--roster-schema'])
  assert.equal(a.status, 0)
  assert.equal(JSON.parse(a.stdout).title, 'runner compat-matrix roster')
  const b = await runCliAsync(['compat-matrix', '--report-schema'])
  assert.equal(JSON.parse(b.stdout).title, 'runner compat-matrix report')
})
