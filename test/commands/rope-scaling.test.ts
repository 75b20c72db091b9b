/**
 * Rope scaling on the command line (issue #23): llama.cpp's --rope-scaling, --rope-scale,
 * --rope-freq-base, --rope-freq-scale and --yarn-* flags. The anchor is the file itself: the flags on
 * the plain llama fixture give bitwise the log-probabilities of a copy carrying the same
 * rope.scaling.* keys (whose numerics test/differential/rope-scaling.test.ts checks against
 * llama.cpp); a receipt records the flags and verify replays under them; bad values are refused by
 * flag name (exit 2); a -c the scaling covers runs without the training-context warning; inspect
 * shows the declaration.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {type GgufKv, GgufValueType} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'
import {withKvs} from '../helpers/with-kvs.js'
import {startTestServer} from '../server/helpers.js'

const PLAIN = sharedPath('fixtures', 'llama.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
const dir = mkdtempSync(join(tmpdir(), 'runner-rope-cli-'))
const YARN = join(dir, 'yarn.gguf')
const SHORT = join(dir, 'short.gguf')
const SHORT_YARN = join(dir, 'short-yarn.gguf')
const YARN_FLAGS = ['--rope-scaling', 'yarn', '--rope-scale', '4', '--yarn-orig-ctx', '64']

const yarnKeys = (a: string): GgufKv[] => [
  {key: `${a}.rope.scaling.type`, type: GgufValueType.STRING, value: 'yarn'},
  {key: `${a}.rope.scaling.factor`, type: GgufValueType.FLOAT32, value: 4},
  {key: `${a}.rope.scaling.original_context_length`, type: GgufValueType.UINT32, value: 64},
]
const trainedAt64 = (a: string): GgufKv[] => [{key: `${a}.context_length`, type: GgufValueType.UINT32, value: 64}]

const run = (model: string, ...extra: string[]) =>
  runCliAsync([
    'run',
    '-m',
    model,
    '-p',
    'Once upon a time',
    '--temp',
    '0',
    '-n',
    '8',
    '--kv-type',
    'f32',
    ...(extra.includes('-c') ? [] : ['-c', '128']),
    ...extra,
  ])

type Receipt = {config: {rope?: unknown}; output: {tokens: number[]; logprobs: number[]}}

describe('rope scaling flags', {skip: SKIP}, () => {
  before(async () => {
    await withKvs(PLAIN, YARN, yarnKeys)
    await withKvs(PLAIN, SHORT, trainedAt64)
    await withKvs(PLAIN, SHORT_YARN, (a) => [...trainedAt64(a), ...yarnKeys(a)])
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('the flags on the plain file give bitwise the keyed file; the receipt records them and verify replays them', async () => {
    const [keyed, flagged, plain] = await Promise.all([
      run(YARN, '--transcript', join(dir, 'keyed.json')),
      run(PLAIN, ...YARN_FLAGS, '--transcript', join(dir, 'flagged.json')),
      run(PLAIN, '--transcript', join(dir, 'plain.json')),
    ])
    for (const r of [keyed, flagged, plain]) assert.equal(r.status, 0, r.stderr)
    const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Receipt
    const [k, f, p] = [read('keyed.json'), read('flagged.json'), read('plain.json')]
    // Float32 log-probabilities are exact in JSON: equal numbers are equal bits.
    assert.deepEqual(f.output, k.output)
    assert.notDeepEqual(p.output.logprobs, k.output.logprobs, 'the scaling changes the numbers')
    assert.deepEqual(f.config.rope, {scaling: 'yarn', freqScale: 0.25, yarnOrigCtx: 64})
    assert.equal(k.config.rope, undefined)
    const verify = await runCliAsync(['verify', join(dir, 'flagged.json'), '-m', PLAIN, '--json'])
    assert.equal(verify.status, 0, verify.stdout + verify.stderr)
    assert.equal((JSON.parse(verify.stdout) as {verdict: string}).verdict, 'VERIFIED')
  })

  test('bad values are refused by flag name before anything loads (exit 2)', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--rope-scaling', 'dynamic'], /--rope-scaling/],
      [['--rope-scale', '0'], /--rope-scale 0: must be a finite number > 0/],
      [['--rope-scale', 'four'], /--rope-scale "four" is not a number/],
      [['--rope-scale', '2', '--rope-freq-scale', '0.5'], /--rope-scale 2 and --rope-freq-scale 0.5 both set the frequency scale/],
      [['--rope-freq-base', '-1'], /--rope-freq-base \(rope\.freqBase\) -1: must be a finite number > 0/],
      [['--yarn-orig-ctx', '1.5'], /--yarn-orig-ctx \(rope\.yarnOrigCtx\) 1\.5: must be an integer/],
      [['--yarn-ext-factor', '-0.5'], /--yarn-ext-factor \(rope\.yarnExtFactor\) -0\.5: must be a finite number >= 0/],
      [['--yarn-beta-fast', '0', '--rope-scaling', 'yarn'], /--yarn-beta-fast \(rope\.yarnBetaFast\) 0: must be a finite number > 0/],
      // Combinations llama.cpp would silently ignore.
      [['--yarn-beta-slow', '2'], /--yarn-beta-slow \(rope\.yarnBetaSlow\) 2: it places YaRN's ramp, which is off/],
      [
        ['--rope-scaling', 'none', '--rope-scale', '2'],
        /the rope scaling type is none \(--rope-scaling \(rope\.scaling\)\), which never scales/,
      ],
      [[...YARN_FLAGS, '--yarn-attn-factor', '1.2'], /--yarn-attn-factor \(rope\.yarnAttnFactor\) 1\.2: with YaRN's extrapolation mix on/],
    ]
    const results = await Promise.all(cases.map(([flags]) => run(PLAIN, ...flags)))
    results.forEach((r, i) => {
      assert.equal(r.status, 2, `${cases[i]![0].join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, cases[i]![1])
    })
  })

  test('-c past the training context: quiet where the scaling covers it, else the warning (naming the reach)', async () => {
    const warning = /runner: warning: context size/
    const [covered, beyond, unscaled, flagged] = await Promise.all([
      run(SHORT_YARN, '-c', '256'),
      run(SHORT_YARN, '-c', '512'),
      run(SHORT, '-c', '256'),
      run(SHORT, '-c', '256', ...YARN_FLAGS),
    ])
    for (const r of [covered, beyond, unscaled, flagged]) assert.equal(r.status, 0, r.stderr)
    assert.doesNotMatch(covered.stderr, warning)
    assert.match(beyond.stderr, /context size 512 > the 256 positions the model's yarn rope scaling covers \(training context 64\)/)
    assert.match(unscaled.stderr, /context size 256 > the model's training context 64/)
    assert.doesNotMatch(flagged.stderr, warning)
  })

  test('embed and serve run under the flags as under the keys (serve through startServer, as its flags give it)', async () => {
    const text = 'One day, the ball rolled into the pond and a big green frog jumped out of the water.'
    const embed = (model: string, ...extra: string[]) =>
      runCliAsync(['embed', '-m', model, '-p', text, '--json', '--kv-type', 'f32', ...extra])
    const [keyed, flagged, plain] = await Promise.all([embed(YARN), embed(PLAIN, ...YARN_FLAGS), embed(PLAIN)])
    for (const r of [keyed, flagged, plain]) assert.equal(r.status, 0, r.stderr)
    assert.equal(flagged.stdout, keyed.stdout)
    assert.notEqual(plain.stdout, keyed.stdout)
    const s = await startTestServer({modelPath: PLAIN, nCtx: 128, rope: {scaling: 'yarn', freqScale: 0.25, yarnOrigCtx: 64}})
    try {
      const c = await s.client.completions.create({model: 'llama', prompt: 'Once upon a time', max_tokens: 8, temperature: 0})
      const r = await run(YARN, '--json')
      assert.equal(r.status, 0, r.stderr)
      assert.equal(c.choices[0]!.text, (JSON.parse(r.stdout) as {text: string}).text)
    } finally {
      await s.close()
    }
  })

  test('inspect shows the declared rope scaling; chat, serve, score and embed take the flags', async () => {
    const r = await runCliAsync(['inspect', YARN])
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /rope scaling\s+yarn, factor 4, original context 64/)
    const helps = await Promise.all(['chat', 'serve', 'score', 'embed'].map((c) => runCliAsync([c, '--help'])))
    for (const h of helps)
      for (const flag of ['--rope-scaling', '--rope-scale', '--yarn-orig-ctx', '--yarn-beta-fast']) assert.ok(h.stdout.includes(flag))
  })
})
