// scripts/load-test.ts, bounded: 8 concurrent streaming clients × 2 requests with --parallel 2 on
// stories260K. The script starts and stops `runner serve` itself (loopback, --port 0) and exits 0
// only with zero errors, every stream complete and /metrics idle afterwards; the counts it reports
// must add up to what was asked. Build first (`npx tsc -p .`): the script spawns dist/.
import assert from 'node:assert/strict'
import {execFile} from 'node:child_process'
import {test} from 'node:test'

import {hasShared, NO_SHARED_REASON, REPO_ROOT} from '../helpers/shared.js'

test('the load test script passes a small run and reports its numbers', {skip: hasShared() ? false : NO_SHARED_REASON}, async () => {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/load-test.ts',
        '--clients',
        '8',
        '--requests',
        '2',
        '--parallel',
        '2',
        '--max-tokens',
        '32',
        '--ctx',
        '256',
        '--json',
      ],
      {cwd: REPO_ROOT, timeout: 120_000},
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    )
  })
  const r = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, number>
  assert.equal(r.requests, 16)
  assert.equal(r.errors, 0)
  assert.equal(r.incompleteStreams, 0)
  assert.equal(r.slotsBusyAfter, 0)
  assert.equal(r.queueDepthAfter, 0)
  assert.ok(r.completionTokens! > 0 && r.completionTokens! <= 16 * 32)
  assert.ok(r.aggregateTokensPerSecond! > 0)
  assert.ok(r.ttftMsP50! > 0 && r.ttftMsP99! >= r.ttftMsP50!)
})
