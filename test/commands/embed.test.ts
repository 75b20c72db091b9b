// `runner embed` as a user types it (the compiled CLI, spawned: build first). That its vectors are
// the library's and the server's is test/server/embeddings.test.ts; llama.cpp's, test/differential.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

const vectors = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((l) => l.split(' ').map(Number))

describe('runner embed', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-embed-cli-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('--file: one vector per line, the same as -p for each line; unit length unless --no-normalize', async () => {
    const file = join(dir, 'lines.txt')
    writeFileSync(file, 'Once upon a time\r\nThe cat sat on the mat.\n')
    const fromFile = await runCliAsync(['embed', '-m', STORIES, '--file', file])
    assert.equal(fromFile.status, 0, fromFile.stderr)
    const rows = vectors(fromFile.stdout)
    assert.equal(rows.length, 2)
    assert.ok(rows.every((r) => r.length === 64 && Math.abs(Math.hypot(...r) - 1) < 1e-6))
    const fromFlags = await runCliAsync(['embed', '-m', STORIES, '-p', 'Once upon a time', '-p', 'The cat sat on the mat.'])
    assert.deepEqual(vectors(fromFlags.stdout), rows)
    const raw = await runCliAsync(['embed', '-m', STORIES, '-p', 'Once upon a time', '--no-normalize', '--pooling', 'last'])
    assert.equal(raw.status, 0, raw.stderr)
    assert.ok(Math.abs(Math.hypot(...vectors(raw.stdout)[0]!) - 1) > 1e-3, 'not scaled')
    const last = await runCliAsync(['embed', '-m', STORIES, '-p', 'Once upon a time', '--pooling', 'last', '--json'])
    const [unit] = JSON.parse(last.stdout) as number[][]
    assert.notDeepEqual(unit, rows[0], 'last pooling is not the default mean')
    const norm = Math.hypot(...vectors(raw.stdout)[0]!)
    unit!.forEach((v, i) => assert.ok(Math.abs(v - vectors(raw.stdout)[0]![i]! / norm) < 1e-6))
  })

  test('refusals: no input, an empty input, a bad pooling, an input longer than -c (exit 2)', async () => {
    const none = await runCliAsync(['embed', '-m', STORIES])
    assert.equal(none.status, 2)
    assert.match(none.stderr, /no input: give --prompt TEXT/)
    const empty = await runCliAsync(['embed', '-m', STORIES, '-p', 'a', '-p', ''])
    assert.equal(empty.status, 2)
    assert.match(empty.stderr, /input 2 is empty/)
    const pooling = await runCliAsync(['embed', '-m', STORIES, '-p', 'a', '--pooling', 'max'])
    assert.equal(pooling.status, 2)
    assert.match(pooling.stderr, /mean, cls, last|mean\|cls\|last/)
    const long = await runCliAsync(['embed', '-m', STORIES, '-c', '8', '-p', 'Once upon a time there was a little girl named Lily'])
    assert.equal(long.status, 2)
    assert.match(long.stderr, /input 1 has \d+ tokens, more than the context of 8/)
    const noFile = await runCliAsync(['embed', '-m', STORIES, '--file', join(dir, 'missing.txt')])
    assert.equal(noFile.status, 2)
    assert.match(noFile.stderr, /cannot read the input file/)
  })
})
