/**
 * score_selfcheck: passes on stories260K (its own bounds, and llama-perplexity's 3.7683 with the same
 * 1,526 token ids), fails when the reference's perplexity is edited (greedy_reference, which does not
 * read it, still passes on that reference), fails on a corpus shorter than one window, and the
 * built-in paragraph fills two windows.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {greedyReference} from '../../../src/lib/compat/checks/greedy-reference.js'
import {BUILT_IN_CORPUS, scoreSelfcheck} from '../../../src/lib/compat/checks/score-selfcheck.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {Model} from '../../../src/lib/engine/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const row = (path: string, reference?: string): RosterRow => ({
  id: 'stories260K',
  path,
  rosterPath: path,
  sha256: '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d',
  architecture: 'llama',
  type: 'F32',
  checks: {score_selfcheck: {}},
  expectedFailures: {},
  ...(reference === undefined ? {} : {reference}),
})

describe('score_selfcheck', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-compat-score-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const env: CheckEnv = {tmpDir: dir, signal: new AbortController().signal, threads: 1}
  const model = () => sharedPath('models', 'stories260K.gguf')
  const ref = () => sharedPath('reference', 'stories260K.json')

  test("passes on stories260K: its own bounds and llama-perplexity's figure", async () => {
    const r = row(model(), ref())
    assert.equal(await scoreSelfcheck.when(r, {}, env), undefined)
    const out = await scoreSelfcheck.run(r, {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^perplexity 3\.7683 \(nll_mean 1\.32663 = log ppl\), 693 tokens scored of 1526 in 11 windows of 128 \(.*corpus-stories\.txt\); llama\.cpp 3\.7683, relative \|Δ\| \S+ \(bound 0\.001\), same 1526 token ids$/,
    )
    assert.deepEqual(Object.keys(out.figures!), ['perplexity'])
    assert.equal(out.figures!.perplexity!.better, 'lower')
    assert.equal(out.figures!.perplexity!.tolerance, 0.01)
  })

  test('fails against a reference whose perplexity was edited (and only it: greedy_reference passes)', async () => {
    const edited = join(dir, 'stories260K.json')
    const json = JSON.parse(readFileSync(ref(), 'utf8'))
    json.perplexity.perplexity *= 1.05
    writeFileSync(edited, JSON.stringify(json))
    const out = await scoreSelfcheck.run(row(model(), edited), {}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /; llama\.cpp 3\.9568, relative \|Δ\| 4\.76e-2 \(bound 0\.001\) \(.*corpus-stories\.txt, ctx 128\)$/)
    assert.equal((await greedyReference.run(row(model(), edited), {}, env)).outcome, 'pass')
  })

  test('fails on a corpus shorter than one window; a missing corpus file is named', async () => {
    const short = join(dir, 'short.txt')
    writeFileSync(short, 'Once upon a time.')
    const out = await scoreSelfcheck.run(row(model()), {corpus: short}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /^score refused: SCORE_TOO_SHORT: /)
    const absent = await scoreSelfcheck.run(row(model()), {corpus: join(dir, 'absent.txt')}, env)
    assert.deepEqual([absent.outcome, absent.evidence], ['fail', `the corpus ${join(dir, 'absent.txt')} does not exist`])
  })

  test('the built-in paragraph fills two windows of 128', async () => {
    const m = await Model.load(model())
    try {
      assert.ok(m.tokenizer.encode(BUILT_IN_CORPUS, {addSpecial: true}).length >= 256)
    } finally {
      m.dispose()
    }
  })
})
