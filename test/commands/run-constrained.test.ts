/**
 * `runner run` with a constraint, as a user types it: a refused schema or a broken grammar exits 2
 * with the reason (keyword and JSON pointer; line and column) before any model is loaded, a missing
 * file is named, the flags exclude each other, and --json reports the constraint and its forced
 * tokens. The anchor of the output itself: JSON.parse and the schema's own bounds.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

describe('runner run with --json-schema, --grammar, --json-object', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-constrained-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const model = sharedPath('models', 'stories260K.gguf')
  const run = (...args: string[]) => runCliAsync(['run', '-m', model, '-p', 'Once upon a time', ...args])

  test('a schema it cannot honour exactly exits 2 naming keyword and pointer, before the model loads', async () => {
    const r = await runCliAsync([
      'run',
      '-m',
      join(dir, 'no-such-model.gguf'),
      '-p',
      'x',
      '--json-schema',
      '{"type": "array", "uniqueItems": true}',
    ])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /uniqueItems at \/uniqueItems/)
    assert.doesNotMatch(r.stderr, /no-such-model/, 'refused before the model was opened')
  })

  test('a broken grammar file says where; a missing file is named; the flags exclude each other', async () => {
    const bad = join(dir, 'bad.gbnf')
    writeFileSync(bad, 'root ::= "a" |\n  ( "b"\n')
    const r = await run('--grammar', bad)
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /line \d+, column \d+/)
    const missing = await run('--grammar', join(dir, 'nope.gbnf'))
    assert.equal(missing.status, 2)
    assert.match(missing.stderr, /--grammar .*nope\.gbnf: ENOENT/)
    const both = await run('--json-object', '--grammar', bad)
    assert.equal(both.status, 2)
    assert.match(both.stderr, /cannot also be provided/)
  })

  test('--json reports the constraint; the text is a document of the schema', async () => {
    const schema = join(dir, 'n.json')
    writeFileSync(
      schema,
      JSON.stringify({type: 'object', properties: {n: {enum: [1, 2, 3]}}, required: ['n'], additionalProperties: false}),
    )
    const r = await run('--json-schema', schema, '-n', '200', '--seed', '5', '--json')
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout) as {
      text: string
      finishReason: string
      constraint: {kind: string; sha256: string; forcedTokens: number}
    }
    assert.equal(out.finishReason, 'eos')
    assert.ok([1, 2, 3].includes((JSON.parse(out.text) as {n: number}).n), out.text)
    assert.equal(out.constraint.kind, 'json-schema')
    assert.match(out.constraint.sha256, /^[0-9a-f]{64}$/)
    assert.ok(Number.isInteger(out.constraint.forcedTokens))
  })
})
