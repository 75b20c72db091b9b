/**
 * `runner score` against llama.cpp's perplexity figures in ../shared/reference (computed with
 * llama-perplexity's window scheme, F32 KV cache): nll_mean, perplexity, its standard error and every
 * window's NLL sum; plus determinism across threads and batch sizes, and the refusals.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {spawn} from 'node:child_process'
import {after, before, describe, test} from 'node:test'

import type {Context} from '../../src/lib/engine/context.js'
import {RunnerError} from '../../src/lib/errors.js'
import {readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {scoreTokens} from '../../src/lib/score/index.js'
import {SeededRandom} from '../../src/lib/util/random.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCli, sharedPath} from '../helpers/shared.js'

interface Perplexity {
  corpus_sha256: string
  n_scored: number
  nll_mean: number
  perplexity: number
  nll_std_error: number
  windows: Array<{start: number; nll_sum: number; n_scored: number}>
}

const CORPUS = () => sharedPath('reference', 'corpus-stories.txt')

/** The last score() run's stderr: its running output. */
let lastStderr = ''

function score(model: string, ...extra: string[]) {
  const r = runCli(['score', '-m', sharedPath(...model.split('/')), '--file', CORPUS(), '--ctx', '128', '--json', ...extra])
  assert.equal(r.status, 0, r.stderr)
  lastStderr = r.stderr
  return JSON.parse(r.stdout)
}

describe('runner score vs llama-perplexity', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  for (const [model, ref, tol] of [
    ['models/stories260K.gguf', 'stories260K', 1e-4],
    ['fixtures/stories260K-q8_0.gguf', 'stories260K-q8_0', 0.01],
    ['fixtures/stories260K-q4_0.gguf', 'stories260K-q4_0', 0.01],
  ] as const) {
    test(`${model}: nll_mean, perplexity and windows as llama.cpp computed them`, () => {
      const want: Perplexity = JSON.parse(readFileSync(sharedPath('reference', `${ref}.json`), 'utf8')).perplexity
      const got = score(model, '--kv-type', 'f32')
      assert.equal(got.corpus.sha256, want.corpus_sha256)
      assert.equal(got.n_scored, want.n_scored)
      assert.ok(Math.abs(got.nll_mean - want.nll_mean) <= tol, `nll_mean ${got.nll_mean} vs ${want.nll_mean}`)
      assert.ok(Math.abs(got.ppl / want.perplexity - 1) <= tol * 2, `ppl ${got.ppl} vs ${want.perplexity}`)
      assert.ok(Math.abs(got.nll_std_error - want.nll_std_error) <= tol, `std error ${got.nll_std_error} vs ${want.nll_std_error}`)
      assert.deepEqual(
        got.windows.map((w: {start: number}) => w.start),
        want.windows.map((w) => w.start),
      )
      got.windows.forEach((w: {nllSum: number; nScored: number}, i: number) => {
        assert.equal(w.nScored, want.windows[i]!.n_scored)
        assert.ok(Math.abs(w.nllSum - want.windows[i]!.nll_sum) <= tol * 63 * 2, `window ${i}: ${w.nllSum} vs ${want.windows[i]!.nll_sum}`)
      })
      assert.ok(got.ppl_ci95[0] < got.ppl && got.ppl < got.ppl_ci95[1])
      assert.ok(got.top1 > 0 && got.top1 <= got.n_scored)
      assert.equal(got.partial, false)
      // The running perplexity, llama-perplexity's way ([1]..,[2]..,): one entry per window, the last the result.
      const running = [...lastStderr.matchAll(/\[(\d+)\]([\d.]+),/g)]
      assert.deepEqual(
        running.map((m) => Number(m[1])),
        got.windows.map((_: unknown, i: number) => i + 1),
      )
      assert.equal(running.at(-1)![2], got.ppl.toFixed(4))
      assert.match(lastStderr, new RegExp(`^score: ${got.windows.length} windows, [\\d.]+ s per window, ETA `, 'm'))
    })
  }

  test('the same numbers, bit for bit, for any thread count and batch size', () => {
    const a = score('models/stories260K.gguf', '-t', '1')
    for (const extra of [
      ['-t', '2'],
      ['-b', '7'],
      ['-t', '2', '-b', '32'],
    ]) {
      const b = score('models/stories260K.gguf', ...extra)
      assert.equal(b.nll_mean, a.nll_mean, extra.join(' '))
      assert.deepEqual(b.windows, a.windows, extra.join(' '))
      assert.equal(b.top1, a.top1)
    }
  })

  test('refusals: a corpus shorter than one window, an empty corpus; --ctx above the model only warns', () => {
    const short = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf'), '--ctx', '4096', '--file', CORPUS()])
    assert.equal(short.status, 2)
    assert.match(short.stderr, /warning: context size 4096 > the model's training context 2048/)
    assert.match(short.stderr, /SCORE_TOO_SHORT/)
    const tiny = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf'), '--ctx', '2048', '--file', CORPUS()])
    assert.equal(tiny.status, 2)
    assert.match(tiny.stderr, /SCORE_TOO_SHORT/)
    // No corpus: the message names the flag score has (it has no --prompt; issue #22).
    const none = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf')])
    assert.equal(none.status, 2)
    assert.match(none.stderr, /no corpus: .*--file FILE/)
    assert.doesNotMatch(none.stderr, /--prompt/)
  })
})

describe('runner score, Ctrl+C (issue #22)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-score-int-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  // 30 copies of the corpus at --ctx 256: about 180 windows, seconds of scoring on one thread, so
  // the signal sent after the first window finds the run still scoring.
  const corpus = join(dir, 'long.txt')
  writeFileSync(corpus, readFileSync(CORPUS(), 'utf8').repeat(30))

  /** Spawn score, wait for its first running-perplexity entry on stderr, send SIGINT. */
  function interrupted(...extra: string[]): Promise<{status: number | null; stdout: string; stderr: string}> {
    const args = ['bin/run.js', 'score', '-m', sharedPath('models', 'stories260K.gguf'), '--file', corpus, '--ctx', '256', '-t', '1']
    const child = spawn(process.execPath, [...args, ...extra], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1'}})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      if (stderr.includes('[1]') && child.signalCode === null && !child.killed) child.kill('SIGINT')
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    return new Promise((resolve) =>
      child.on('close', (status) => {
        clearTimeout(timer)
        resolve({status, stdout, stderr})
      }),
    )
  }

  test('text and --json: exit 130, the windows scored so far reported and marked partial', async () => {
    const [text, json] = await Promise.all([interrupted(), interrupted('--json')])
    assert.equal(text.status, 130, text.stderr)
    assert.match(text.stderr, /^score: \d+ windows, [\d.]+ s per window, ETA .+\n\[1\][\d.]+,/m)
    const m = /^partial +(\d+) of (\d+) windows \(interrupted\)/m.exec(text.stdout)
    assert.ok(m, text.stdout)
    assert.ok(Number(m[1]) >= 1 && Number(m[1]) < Number(m[2]), text.stdout)
    assert.match(text.stdout, new RegExp(`^tokens scored +\\d+ in ${m[1]} windows`, 'm'))

    assert.equal(json.status, 130, json.stderr)
    const doc = JSON.parse(json.stdout)
    assert.equal(doc.partial, true)
    assert.ok(doc.windows_scored >= 1 && doc.windows_scored < doc.scheme.windows, JSON.stringify(doc.scheme))
    assert.equal(doc.windows.length, doc.windows_scored)
    assert.equal(doc.n_scored, doc.windows_scored * doc.scheme.scoredPerWindow)
    assert.ok(Number.isFinite(doc.ppl) && doc.ppl > 1)
  })
})

test('a contradiction in the numbers is refused, not reported (self-check)', async () => {
  // A context whose logits are NaN: log p is not finite, which no valid distribution allows.
  const fake = {
    model: {config: {nVocab: 4}},
    kvTruncate() {},
    async decode(ids: number[]) {
      return new Float32Array(ids.length * 4).fill(NaN)
    },
  } as unknown as Context
  await assert.rejects(
    scoreTokens(fake, [1, 2, 3, 0, 1, 2, 3, 0], {ctx: 8, bos: 1}),
    (e: unknown) => e instanceof RunnerError && e.code === 'SCORE_SELF_CHECK' && e.exitCode === 4,
  )
})

test('Ctrl+C inside a window: the whole windows before it are the result, marked partial (issue #22)', async () => {
  // A context whose third decode is interrupted, as the engine rejects an aborted decode.
  const controller = new AbortController()
  let decodes = 0
  const fake = {
    model: {config: {nVocab: 4}},
    kvTruncate() {},
    async decode(ids: number[]) {
      if (++decodes === 3) {
        controller.abort('SIGINT')
        throw new Error('aborted')
      }
      return Float32Array.from({length: ids.length * 4}, (_, i) => (i % 4 === 0 ? 1 : 0))
    },
  } as unknown as Context
  const running: number[] = []
  const r = await scoreTokens(
    fake,
    Array.from({length: 40}, (_, i) => i % 4),
    {
      ctx: 8,
      bos: 1,
      signal: controller.signal,
      onProgress: (_done, _total, ppl) => running.push(ppl),
    },
  )
  assert.equal(r.partial, true)
  assert.equal(r.windows.length, 2)
  assert.equal(r.nScored, 2 * r.scheme.scoredPerWindow)
  assert.equal(running.length, 2)
  assert.equal(running.at(-1), r.ppl)
})

describe('runner score --save-logits / --kld', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-kld-'))
  after(() => rmSync(dir, {recursive: true, force: true}))
  const base = join(dir, 'base.bin')
  const kldOf = (model: string, ...extra: string[]) => {
    const r = runCli(['score', '-m', model, '--file', CORPUS(), '--ctx', '128', '--kld', base, '--json', ...extra])
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout).kld
  }

  before(() => {
    const r = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf'), '--file', CORPUS(), '--ctx', '128', '--save-logits', base])
    assert.equal(r.status, 0, r.stderr)
  })

  test('a model against itself: KLD exactly 0, top-1 agreement 100%', () => {
    const k = kldOf(sharedPath('models', 'stories260K.gguf'))
    assert.deepEqual([k.mean, k.median, k.p99, k.max, k.top1_agreement, k.top1_agreement_margin], [0, 0, 0, 0, 1, 1])
  })

  test('Q4_0 against its F32 parent: positive, and below a model with one layer perturbed', async () => {
    const q4 = kldOf(sharedPath('fixtures', 'stories260K-q4_0.gguf'))
    assert.ok(q4.mean > 0 && q4.max > 0 && q4.top1_agreement < 1, JSON.stringify(q4))
    // Perturbed: blk.1.ffn_down replaced by Gaussian noise of the same standard deviation.
    const src = readGgufModel(sharedPath('models', 'stories260K.gguf'))
    const perturbed = join(dir, 'perturbed.gguf')
    const victim = src.tensors.find((t) => t.name === 'blk.1.ffn_down.weight')!
    const original = new Float32Array(readFileSync(victim.file).buffer.slice(victim.offset, victim.offset + victim.byteSize))
    const std = Math.sqrt(original.reduce((a, v) => a + v * v, 0) / original.length)
    const rng = new SeededRandom(7n)
    const noise = Float32Array.from(original, () => std * rng.normal())
    await writeGguf(perturbed, {
      kvs: src.kvs,
      tensors: src.tensors.map((t) => ({
        name: t.name,
        type: t.type,
        shape: t.shape,
        data: t === victim ? new Uint8Array(noise.buffer) : {file: t.file, offset: t.offset},
      })),
    })
    const bad = kldOf(perturbed)
    assert.ok(bad.mean > q4.mean, `perturbed ${bad.mean} should exceed Q4_0 ${q4.mean}`)
    console.log(
      `KLD vs stories260K: Q4_0 mean ${q4.mean.toFixed(4)} (top-1 ${q4.top1_agreement.toFixed(3)}), one layer perturbed mean ${bad.mean.toFixed(4)} (top-1 ${bad.top1_agreement.toFixed(3)})`,
    )
  })

  test('a truncated, altered, foreign or mismatched base file is refused by name', () => {
    const bytes = readFileSync(base)
    const cases: Array<[string, Buffer | undefined, string, RegExp]> = [
      ['truncated', bytes.subarray(0, bytes.length - 100), '128', /KLD_BASE_TRUNCATED/],
      ['altered', Buffer.concat([bytes.subarray(0, 500), Buffer.from([bytes[500]! ^ 1]), bytes.subarray(501)]), '128', /KLD_BASE_CORRUPT/],
      ['foreign', Buffer.from('GGUF not a base file at all, just some bytes that are long enough'), '128', /KLD_BASE_BAD_MAGIC/],
      ['other windows', undefined, '64', /KLD_BASE_MISMATCH/],
    ]
    for (const [name, content, ctx, code] of cases) {
      const path = content ? join(dir, `${name}.bin`) : base
      if (content) writeFileSync(path, content)
      const r = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf'), '--file', CORPUS(), '--ctx', ctx, '--kld', path])
      assert.notEqual(r.status, 0, name)
      assert.match(r.stderr, code, `${name}: ${r.stderr}`)
    }
    const other = join(dir, 'other.txt')
    writeFileSync(other, readFileSync(CORPUS(), 'utf8').slice(0, 2000))
    const r = runCli(['score', '-m', sharedPath('models', 'stories260K.gguf'), '--file', other, '--ctx', '128', '--kld', base])
    assert.equal(r.status, 2)
    assert.match(r.stderr, /another corpus.*\[KLD_BASE_MISMATCH\]/)
  })
})
