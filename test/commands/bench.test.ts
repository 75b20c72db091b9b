/**
 * `runner bench` as a user runs it, on ../shared/models/stories260K.gguf with tiny sizes: every output
 * format parses and holds one row per test of the cross product, in llama-bench's order
 * (tools/llama-bench: for each thread count and depth, the pp tests, then tg, then pg), with
 * llama-bench's field names (the README's CSV header: n_prompt, n_gen, n_depth, n_threads, avg_ts,
 * stddev_ts; its JSON adds samples_ns and samples_ts); --progress and --no-warmup show on stderr;
 * a refusal names the flag as typed and exits 2. Speeds are printed, never asserted.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

type Row = Record<string, unknown>

describe('runner bench on stories260K', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const M = () => sharedPath('models/stories260K.gguf')
  // One process per format, all at once: each loads a 1 MB model and runs a few millisecond tests.
  const runs = () =>
    Promise.all([
      // the model last: list flags take one value each, so it is not read as another thread count
      runCliAsync(['bench', '-p', '16', '-n', '8', '-r', '2', '-t', '1,2', '--progress', M()]),
      runCliAsync(['bench', '-m', M(), '-p', '16', '-n', '8', '-r', '2', '-t', '1,2', '-o', 'csv', '--progress', '--no-warmup']),
      runCliAsync(['bench', M(), '-p', '16', '-n', '8', '-r', '2', '-t', '1,2', '--json']),
      runCliAsync(['bench', M(), '-p', '16', '-n', '8', '--pg', '8,4', '-d', '0,16', '-r', '2', '-t', '1', '-o', 'jsonl']),
    ])
  let results: Awaited<ReturnType<typeof runs>> | undefined
  const get = async () => (results ??= await runs())
  const CROSS = [
    [1, 16, 0],
    [1, 0, 8],
    [2, 16, 0],
    [2, 0, 8],
  ]

  test('md: a table with a row per test of -t 1,2 x (pp16, tg8), t/s as "mean ± stddev"', async () => {
    const [md] = await get()
    assert.equal(md.status, 0, md.stderr)
    const lines = md.stdout.split('\n').filter((l) => l.startsWith('|'))
    const cells = (l: string) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim())
    assert.deepEqual(cells(lines[0]!), ['model', 'size', 'params', 'backend', 'threads', 'test', 't/s'])
    const rows = lines.slice(2).map(cells)
    assert.deepEqual(
      rows.map((r) => [r[4], r[5]]),
      [
        ['1', 'pp16'],
        ['1', 'tg8'],
        ['2', 'pp16'],
        ['2', 'tg8'],
      ],
    )
    for (const r of rows) assert.match(r[6]!, /^\d+\.\d\d ± \d+\.\d\d$/)
    assert.deepEqual(rows[0]!.slice(0, 4), ['llama F32 (guessed)', '1.12 MiB', '0.29 M', 'CPU'])
    assert.match(md.stdout, /\nbuild: runner \S+ \(kernels: .+\)\n$/)
    assert.match(md.stderr, /test 1\/4: warmup prompt run\n/)
    assert.match(md.stderr, /test 4\/4: generation run 2\n/)
  })

  test('csv: a header row of llama-bench field names, one quoted row per test; --no-warmup runs no warm-up', async () => {
    const [, csv] = await get()
    assert.equal(csv.status, 0, csv.stderr)
    const lines = csv.stdout.trimEnd().split('\n')
    const header = lines[0]!.split(',')
    for (const f of [
      'cpu_info',
      'model_filename',
      'model_type',
      'model_size',
      'model_n_params',
      'n_threads',
      'n_prompt',
      'n_gen',
      'n_depth',
      'avg_ns',
      'avg_ts',
      'stddev_ts',
    ])
      assert.ok(header.includes(f), f)
    assert.ok(!header.includes('samples_ns'), "llama-bench's csv has no samples")
    const rows = lines.slice(1).map((l) => l.match(/"(?:[^"]|"")*"/g)!.map((c) => c.slice(1, -1)))
    assert.deepEqual(
      rows.map((r) => ['n_threads', 'n_prompt', 'n_gen'].map((f) => Number(r[header.indexOf(f)]))),
      [
        [1, 16, 0],
        [1, 0, 8],
        [2, 16, 0],
        [2, 0, 8],
      ],
    )
    assert.ok(rows.every((r) => Number(r[header.indexOf('avg_ts')]) > 0))
    assert.doesNotMatch(csv.stderr, /warmup/)
    assert.match(csv.stderr, /test 1\/4: prompt run 1\n/)
  })

  test('json: an array of one object per test; avg_ts is the mean of samples_ts, which are the tokens over samples_ns', async () => {
    const [, , json] = await get()
    assert.equal(json.status, 0, json.stderr)
    assert.equal(json.stderr, '', 'no progress when stderr is not a terminal')
    const rows = JSON.parse(json.stdout) as Row[]
    assert.deepEqual(
      rows.map((r) => [r.n_threads, r.n_prompt, r.n_gen]),
      CROSS,
    )
    for (const r of rows) {
      const ns = r.samples_ns as number[]
      const ts = r.samples_ts as number[]
      assert.equal(ns.length, 2)
      const tokens = (r.n_prompt as number) + (r.n_gen as number)
      ts.forEach((x, i) => assert.ok(Math.abs(x - (1e9 * tokens) / ns[i]!) < 1e-6 * x))
      assert.ok(Math.abs((r.avg_ts as number) - (ts[0]! + ts[1]!) / 2) < 1e-9 * (r.avg_ts as number))
      assert.equal(r.n_ctx, tokens, 'the context is sized to the test, as llama-bench sizes it')
      assert.equal(r.model_filename, M())
    }
  })

  test('jsonl: one object per line; depths and --pg in llama-bench order, the context sized to depth + prompt + generation', async () => {
    const [, , , jsonl] = await get()
    assert.equal(jsonl.status, 0, jsonl.stderr)
    const rows = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Row)
    assert.deepEqual(
      rows.map((r) => [r.n_depth, r.n_prompt, r.n_gen, r.n_ctx]),
      [
        [0, 16, 0, 16],
        [0, 0, 8, 8],
        [0, 8, 4, 12],
        [16, 16, 0, 32],
        [16, 0, 8, 24],
        [16, 8, 4, 28],
      ],
    )
  })

  test('a refusal names the flag as typed and exits 2, printing nothing (the other refusals: test/lib/bench)', async () => {
    const r = await runCliAsync(['bench', M(), '-t', 'abc'])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /^runner: -t "abc": must be an integer from 1 to 256 \[BENCH_BAD_VALUE\]\n$/)
    assert.equal(r.stdout, '')
  })
})
