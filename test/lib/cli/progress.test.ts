/**
 * The byte progress line (src/lib/cli/progress.ts) that quantize draws: off a terminal, a plain line
 * per 10 % crossed, whatever the number of updates (the issue #22 report: one line per tensor when
 * piped); on a terminal, one line redrawn in place and cleared at the end. The clock is the test's, so
 * the rate and the ETA are exact figures.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {ByteProgress, formatEta} from '../../../src/lib/cli/progress.js'

function recorder(isTTY: boolean) {
  const out: string[] = []
  return {out, stream: {isTTY, write: (t: string) => out.push(t)}}
}

test('piped: 1000 updates give one line per 10 % crossed, with percent, bytes, rate and ETA', () => {
  const {out, stream} = recorder(false)
  let now = 0
  const p = new ByteProgress('quantize', {stream, now: () => now})
  const total = 10 * 1024 * 1024
  for (let i = 1; i <= 1000; i++) {
    now = i // 1 ms per update: 10 MiB in 1 s
    p.update((i * total) / 1000, total)
  }
  p.end()
  assert.equal(out.length, 10, out.join(''))
  assert.equal(out[0], 'quantize  10% 1.00 MiB of 10.0 MiB, 10.0 MiB/s, ETA <1 s\n')
  assert.equal(out[9], 'quantize 100% 10.0 MiB of 10.0 MiB, 10.0 MiB/s, done\n')
})

test('piped: one update that jumps past several steps prints one line, not one per step', () => {
  const {out, stream} = recorder(false)
  let now = 0
  const p = new ByteProgress('x', {stream, now: () => now})
  now = 2000
  p.update(35, 100)
  p.update(36, 100)
  assert.deepEqual(out, ['x  35% 35 B of 100 B, 18 B/s, ETA 4 s\n'])
})

test('a terminal: one line redrawn (\\r, erase to end of line), throttled, cleared at the end', () => {
  const {out, stream} = recorder(true)
  let now = 0
  const p = new ByteProgress('q', {stream, now: () => now, redrawMs: 100})
  for (let i = 1; i <= 100; i++) {
    now = i * 10
    p.update(i, 100)
  }
  p.update(100, 100)
  p.end()
  assert.ok(
    out.slice(0, -1).every((l) => l.startsWith('\r') && l.endsWith('\u001B[K') && !l.includes('\n')),
    JSON.stringify(out),
  )
  assert.ok(out.length <= 12, `${out.length} redraws for 100 updates over 1 s`)
  assert.match(out.at(-2)!, /q 100% 100 B of 100 B, 100 B\/s, done/)
  assert.equal(out.at(-1), '\r\u001B[K')
})

test('ETA figures: under a second, seconds, minutes, hours', () => {
  assert.deepEqual([0.3, 4.2, 125, 7300, Infinity].map(formatEta), ['<1 s', '4 s', '2m 05s', '2h 01m', '?'])
})
