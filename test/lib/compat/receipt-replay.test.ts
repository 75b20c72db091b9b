/**
 * receipt_replay: a seeded run with a receipt replays VERIFIED on stories260K; the receipt edited
 * between writing and verifying (one output token, re-chained as a forger would; one byte, not
 * re-chained) makes exactly this check fail, with the verifier's reason as its evidence.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeReceiptReplay, receiptReplay} from '../../../src/lib/compat/checks/receipt-replay.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON

function row(file: string, architecture: string, type: string): RosterRow {
  return {
    id: file,
    path: sharedPath(file),
    rosterPath: `../shared/${file}`,
    sha256: '',
    architecture,
    type,
    checks: {receipt_replay: {}},
    expectedFailures: {},
  }
}

/** Re-chain an edited receipt the way anyone could (JSON in key order, sha256 of the prefix). */
function forge(file: string, edit: (r: {output: {tokens: number[]}}) => void): void {
  const r = JSON.parse(readFileSync(file, 'utf8'))
  edit(r)
  delete r.chain
  delete r.signature
  const prefix = JSON.stringify(r).slice(0, -1)
  writeFileSync(file, `${prefix},"chain":"${createHash('sha256').update(prefix, 'utf8').digest('hex')}"}\n`)
}

describe('receipt_replay', {skip: SKIP}, () => {
  let dir: string
  let n = 0
  const env = (): CheckEnv => ({tmpDir: mkdtempSync(join(dir, `env-${n++}-`)), signal: new AbortController().signal, threads: 2})
  const stories = row('models/stories260K.gguf', 'llama', 'F32')

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-compat-receipt-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('declares its name and parameters; runs anywhere', async () => {
    assert.equal(receiptReplay.name, 'receipt_replay')
    assert.deepEqual(Object.keys(receiptReplay.params).sort(), ['seed', 'tokens'])
    assert.equal(await receiptReplay.when(stories, {}, env()), undefined)
  })

  test('stories260K: a sampled run with a receipt replays VERIFIED', async () => {
    const e = env()
    const out = await receiptReplay.run(stories, {}, e)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^VERIFIED: replayed 16 tokens: every token and byte matches \[16 tokens \(finish length\), seed 42, temperature 0.8/,
    )
    const r = JSON.parse(readFileSync(join(e.tmpDir, 'receipt-replay.json'), 'utf8'))
    assert.equal(r.config.sampling.temperature, 0.8)
    assert.equal(r.config.sampling.seed, '42')
    assert.equal(r.output.tokens.length, 16)
  })

  test('a quantized fixture with another seed and length: VERIFIED', async () => {
    const out = await receiptReplay.run(row('fixtures/llama-q4_0.gguf', 'llama', 'Q4_0'), {tokens: 8, seed: 7}, env())
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(out.evidence, /replayed 8 tokens.*seed 7/)
  })

  test('a run the model ends at once (qwen3 fixture, seed 42: end of text first) is replayed too', async () => {
    const out = await receiptReplay.run(row('fixtures/qwen3.gguf', 'qwen3', 'F32'), {}, env())
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(out.evidence, /^VERIFIED: replayed 0 tokens.*\[0 tokens \(finish eos\), seed 42/)
  })

  test('mutation: one output token edited and re-chained fails DIVERGED at that token', async () => {
    const check = makeReceiptReplay({
      beforeVerify: (path) => forge(path, (r) => void (r.output.tokens[5] = (r.output.tokens[5]! + 1) % 512)),
    })
    const out = await check.run(stories, {}, env())
    assert.equal(out.outcome, 'fail', out.evidence)
    assert.match(out.evidence, /^DIVERGED: diverged at output token 5: the receipt has token \d+ .*, the model produced token \d+/)
    assert.match(out.evidence, /\(replay check\); first difference: token 5/)
  })

  test('mutation: one byte of the output text edited without re-chaining fails UNVERIFIABLE (altered)', async () => {
    const check = makeReceiptReplay({
      beforeVerify: (path) => {
        const text = readFileSync(path, 'utf8')
        const at = text.indexOf('"text":"', text.indexOf('"output":')) + '"text":"'.length
        writeFileSync(path, text.slice(0, at) + (text[at] === 'x' ? 'y' : 'x') + text.slice(at + 1))
      },
    })
    const out = await check.run(stories, {tokens: 4}, env())
    assert.equal(out.outcome, 'fail', out.evidence)
    assert.match(
      out.evidence,
      /^UNVERIFIABLE: the record has been altered: sha256 of the bytes before "chain" is [0-9a-f]{64}.*\(chain check\)/,
    )
  })

  test('a bad parameter is refused by name', async () => {
    await assert.rejects(receiptReplay.run(stories, {tokens: 0}, env()), /parameter tokens must be an integer >= 1/)
    await assert.rejects(receiptReplay.run(stories, {seed: 1.5}, env()), /parameter seed must be an integer >= 0/)
  })
})
