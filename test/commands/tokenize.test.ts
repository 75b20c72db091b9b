/**
 * `runner tokenize` / `runner detokenize` (issue #22, "Commands users expect") against llama.cpp's own
 * tokenization of every string in ../shared/reference (stories260K.json: llama_tokenize with and without
 * BOS, llama_detokenize with and without unparse_special), through the CLI as a user runs it.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

interface Tok {
  text: string
  ids: number[]
  ids_with_bos: number[]
  detok: string
  detok_with_bos_special: string
}

describe('runner tokenize and detokenize against llama.cpp', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const M = () => sharedPath('models/stories260K.gguf')
  const cases = () => (JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {tokenization: Tok[]}).tokenization

  test("every reference string: tokenize gives llama.cpp's ids, with and without BOS", async () => {
    for (const c of cases()) {
      const [a, b] = await Promise.all([
        runCliAsync(['tokenize', M(), '-p', c.text, '--json']),
        runCliAsync(['tokenize', M(), '-p', c.text, '--no-bos', '--ids']),
      ])
      assert.equal(a.status, 0, a.stderr)
      assert.deepEqual(JSON.parse(a.stdout).ids, c.ids_with_bos, JSON.stringify(c.text))
      assert.equal(b.stdout.trim(), c.ids.join(' '), JSON.stringify(c.text))
    }
  })

  test("every reference string: detokenize gives llama.cpp's text (and its special tokens with --special)", async () => {
    // (the empty string has no ids to give as arguments; without any, detokenize reads standard input)
    for (const c of cases().filter((x) => x.ids.length > 0)) {
      const [a, b] = await Promise.all([
        runCliAsync(['detokenize', '-m', M(), '--json', ...c.ids.map(String)]),
        runCliAsync(['detokenize', '-m', M(), '--json', '--special', ...c.ids_with_bos.map(String)]),
      ])
      assert.equal(a.status, 0, a.stderr)
      assert.equal(JSON.parse(a.stdout).text, c.detok, JSON.stringify(c.text))
      assert.equal(JSON.parse(b.stdout).text, c.detok_with_bos_special, JSON.stringify(c.text))
    }
  })

  test('an id outside the vocabulary is refused by position; no ids at all says how to give them', async () => {
    const r = await runCliAsync(['detokenize', '-m', M(), '1', '2', '512'])
    assert.equal(r.status, 2)
    assert.match(r.stderr, /id 3 \("512"\) is not a token id of this model \(0 to 511\)/)
  })

  test('repeated ids keep their order (oclif reorders them in argv)', async () => {
    const r = await runCliAsync(['detokenize', '-m', M(), '--json', '403', '261', '378', '261'])
    assert.equal(JSON.parse(r.stdout).text, 'Once a time a')
  })
})
