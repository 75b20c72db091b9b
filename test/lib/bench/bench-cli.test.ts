/**
 * runBenchCli in process, on ../shared/models/stories260K.gguf: what a terminal sees on stderr (a
 * line per test; no phases unless --progress) and what Ctrl+C leaves on stdout (the results so far,
 * in a whole JSON document, and the interrupted exit code 130 of src/lib/errors.ts).
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {runBenchCli} from '../../../src/lib/bench/bench-cli.js'
import type {BenchParams} from '../../../src/lib/bench/tests.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const PARAMS: BenchParams = {
  nPrompt: [8],
  nGen: [4],
  pg: [],
  nDepth: [0],
  nBatch: [512],
  kvType: ['f16'],
  threads: [1],
  repetitions: 2,
  warmup: true,
}

describe('runner bench in process', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const M = () => sharedPath('models/stories260K.gguf')

  test('stderr on a terminal: one line per test; not a terminal: nothing', async () => {
    for (const isTTY of [true, false]) {
      const err: string[] = []
      await runBenchCli(
        M(),
        {params: PARAMS, output: 'md', progress: false},
        {stdout: {write: () => true}, stderr: {isTTY, write: (t) => err.push(t)}},
      )
      assert.deepEqual(err, isTTY ? ['runner bench: test 1/2: pp8, 1 thread\n', 'runner bench: test 2/2: tg4, 1 thread\n'] : [])
    }
  })

  test('Ctrl+C after the first result: the JSON document is closed with that result, and the error is the interrupted one', async () => {
    const out: string[] = []
    const ac = new AbortController()
    const stdout = {
      write: (t: string) => {
        out.push(t)
        if (out.length === 2) ac.abort('SIGINT') // the header, then the first row
        return true
      },
    }
    await assert.rejects(
      runBenchCli(M(), {params: PARAMS, output: 'json', progress: false}, {stdout, stderr: {write: () => true}}, {signal: ac.signal}),
      (e: unknown) => e instanceof RunnerError && e.exitCode === 130,
    )
    const rows = JSON.parse(out.join('')) as Array<Record<string, unknown>>
    assert.deepEqual(
      rows.map((r) => [r.n_prompt, r.n_gen]),
      [[8, 0]],
    )
  })
})
