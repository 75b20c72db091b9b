/**
 * cross_engine: passes on stories260K against llama.cpp run live (node-llama-cpp), fails in its
 * test-only mode (RUNNER_COMPAT_TEST_PERTURB=cross_engine: our engine evaluates a copy with one weight
 * changed, llama.cpp the file itself), and is not executed when node-llama-cpp cannot be imported (a
 * child process whose resolve hook refuses the package).
 */
import assert from 'node:assert/strict'
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'
import {pathToFileURL} from 'node:url'

import {crossEngine} from '../../../src/lib/compat/checks/cross-engine.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../../helpers/shared.js'

const row = (path: string): RosterRow => ({
  id: 'stories260K',
  path,
  rosterPath: path,
  sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
  architecture: 'llama',
  type: 'F32',
  checks: {cross_engine: {}},
  expectedFailures: {},
})

describe('cross_engine', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-compat-cross-'))
  after(() => {
    delete process.env.RUNNER_COMPAT_TEST_PERTURB
    rmSync(dir, {recursive: true, force: true})
  })
  const env: CheckEnv = {tmpDir: dir, signal: new AbortController().signal, threads: 1}
  const model = () => sharedPath('models', 'stories260K.gguf')

  test('passes on stories260K: 24/24 greedy tokens, log-probabilities within 1e-3', async () => {
    assert.equal(await crossEngine.when(row(model()), {}, env), undefined)
    const out = await crossEngine.run(row(model()), {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^97-token prompt: greedy tokens matched 24\/24; max \|Δ logprob\| \S+ \(position \d+, bound 0\.001\), mean \S+ \(bound 0\.0002\) over 96 targets$/,
    )
    assert.ok(out.figures!.maxAbsLogprobDiff!.value <= 1e-3)
  })

  test('a prompt and a token count from the roster', async () => {
    const out = await crossEngine.run(row(model()), {prompt: 'The cat sat on the mat.', tokens: 5}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(out.evidence, /greedy tokens matched 5\/5/)
  })

  test('fails when our engine computes something else (test-only perturbation)', async () => {
    process.env.RUNNER_COMPAT_TEST_PERTURB = 'cross_engine'
    try {
      const out = await crossEngine.run(row(model()), {}, env)
      assert.equal(out.outcome, 'fail')
      assert.match(
        out.evidence,
        /^greedy: first divergence at step 0: ours \d+, llama\.cpp \d+, margin \S+; llama\.cpp's margins up to it are >= 0\.001; max \|Δ logprob\|/,
      )
    } finally {
      delete process.env.RUNNER_COMPAT_TEST_PERTURB
    }
  })

  test('not executed when node-llama-cpp cannot be imported', () => {
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `export async function resolve(s, c, next) {
        if (s === 'node-llama-cpp') throw Object.assign(new Error("Cannot find package 'node-llama-cpp'"), {code: 'ERR_MODULE_NOT_FOUND'})
        return next(s, c)
      }`,
    )
    writeFileSync(
      join(dir, 'register.mjs'),
      `import {register} from 'node:module'\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)})\n`,
    )
    const check = pathToFileURL(join(REPO_ROOT, 'src/lib/compat/checks/cross-engine.ts')).href
    const script = `const {crossEngine} = await import(${JSON.stringify(check)})
      const env = {tmpDir: ${JSON.stringify(dir)}, signal: new AbortController().signal, threads: 1}
      const row = {path: ${JSON.stringify(model())}, type: 'F32', architecture: 'llama'}
      process.stdout.write(JSON.stringify([await crossEngine.when(row, {}, env), await crossEngine.run(row, {}, env)]))`
    writeFileSync(join(dir, 'probe.mts'), script)
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', '--import', pathToFileURL(join(dir, 'register.mjs')).href, join(dir, 'probe.mts')],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      },
    )
    assert.deepEqual(JSON.parse(out), [
      'node-llama-cpp is not installed',
      {outcome: 'not_executed', evidence: 'node-llama-cpp is not installed'},
    ])
  })
})
