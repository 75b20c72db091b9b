/**
 * Microbenchmark of the vec_dot kernels: nanoseconds per dot of one n-value row (default 4096), per
 * weight type and variant, timed inside native code (kernelBenchVecDot) so no JavaScript call is
 * counted. Two numbers per kernel:
 *   hot     the same row again and again (weights in L1): what the kernel's arithmetic costs;
 *   stream  rows walked through a buffer far larger than the caches: what decode sees, where the
 *           weights come from memory once per token (bytes per row / time = the bandwidth it reaches).
 * and the same two per row for kernels with a two-row form (vec_dot2: two weight rows per call share
 * the activation row's loads, sums and scales), driven as a matvec would drive it through
 * runner_vec_dot_rows (rows i and i + rows/2 together).
 *
 *   npx tsx scripts/bench-kernels.ts [--n 4096] [--stream-mb 256] [--types q4_0,q8_0] [--json]
 *
 * Results go to stdout (a markdown table, or JSON with --json); docs/kernels.md records a run.
 */
import {parseArgs} from 'node:util'

import {quantizeRef, rowBytes, typeTraits} from '../src/lib/engine/index.js'
import {benchVecDot, fromFloat} from '../src/lib/engine/test-addon.js'
import {SeededRandom} from '../src/lib/util/index.js'

interface Row {
  type: string
  variant: string
  rowBytes: number
  hotNs: number
  streamNs: number
  streamGBs: number
  /** Per row, through vec_dot2 (absent where the variant has none). */
  hot2Ns?: number
  stream2Ns?: number
}

/** ns per call, growing the iteration count until one run takes at least `minMs`; best of 3. */
function time(run: (iters: number) => number, minMs: number): number {
  let iters = 16
  for (;;) {
    const ns = run(iters)
    if (ns * iters >= minMs * 1e6) break
    iters *= 4
  }
  return Math.min(run(iters), run(iters), run(iters))
}

function main(): void {
  const {values} = parseArgs({
    options: {
      n: {type: 'string', default: '4096'},
      'stream-mb': {type: 'string', default: '256'},
      types: {type: 'string'},
      json: {type: 'boolean', default: false},
    },
    strict: true,
  })
  const n = Number(values.n)
  const streamBytes = Number(values['stream-mb']) * 2 ** 20
  const wanted = values.types?.toUpperCase().split(',')
  const rng = new SeededRandom(1n)
  const w = new Float32Array(n).map(() => rng.normal())
  const a = new Float32Array(n).map(() => rng.normal())
  const rows: Row[] = []
  for (const t of typeTraits()) {
    if (wanted && !wanted.includes(t.name)) continue
    if (t.name === 'Q8_1') continue // an activation type; as a weight it is the Q8_0 kernel
    const act = typeTraits().find((x) => x.type === t.vecDotType)!
    const x = t.name === 'F32' ? new Uint8Array(w.buffer.slice(0)) : quantizeRef(t.name, w)
    const y = act.name === 'F32' ? new Uint8Array(a.buffer.slice(0)) : fromFloat(act.name, a)
    const bytes = rowBytes(t, n)
    // The stream buffer repeats the row: the data does not matter, the bytes moved do.
    const count = Math.max(1, Math.floor(streamBytes / bytes))
    const big = new Uint8Array(count * bytes)
    for (let r = 0; r < count; r++) big.set(x, r * bytes)
    for (const variant of t.variants) {
      const minMs = variant === 'scalar' ? 50 : 150
      const hotNs = time((iters) => benchVecDot(t, variant, n, x, y, iters), minMs)
      const streamNs = variant === 'scalar' ? NaN : Math.min(...[0, 1, 2].map(() => benchVecDot(t, variant, n, big, y, count)))
      const row: Row = {type: t.name, variant, rowBytes: bytes, hotNs, streamNs, streamGBs: bytes / streamNs}
      if (t.vecDot2Variants.includes(variant)) {
        const two = new Uint8Array(2 * bytes)
        two.set(x, 0)
        two.set(x, bytes)
        row.hot2Ns = time((iters) => benchVecDot(t, variant, n, two, y, iters, 2), minMs)
        row.stream2Ns = Math.min(...[0, 1, 2].map(() => benchVecDot(t, variant, n, big, y, count, 2)))
      }
      rows.push(row)
    }
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify({n, rows}, null, 2)}\n`)
    return
  }
  const f = (v: number, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '-')
  process.stdout.write(`n = ${n}; stream buffer ${values['stream-mb']} MiB\n\n`)
  process.stdout.write(
    '| type | variant | bytes/row | hot ns/row | hot GB/s | stream ns/row | stream GB/s | 2-row hot ns/row | 2-row stream ns/row | 2-row stream GB/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n',
  )
  for (const r of rows) {
    const two = r.hot2Ns === undefined ? '- | - | -' : `${f(r.hot2Ns, 1)} | ${f(r.stream2Ns!, 1)} | ${f(r.rowBytes / r.stream2Ns!, 1)}`
    process.stdout.write(
      `| ${r.type} | ${r.variant} | ${r.rowBytes} | ${f(r.hotNs, 1)} | ${f(r.rowBytes / r.hotNs, 1)} | ${f(r.streamNs, 1)} | ${f(r.streamGBs, 1)} | ${two} |\n`,
    )
  }
}

main()
