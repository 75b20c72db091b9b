/**
 * The native sampler (native/src/sample/sample.c) against outside facts:
 *  - argmax, softmax and log-softmax computed here in float64 (math);
 *  - llama.cpp's rules (src/llama-sampling.cpp): repeat penalty divides a positive logit and
 *    multiplies a non-positive one, once per distinct token in the window; frequency subtracts
 *    count * penalty; presence subtracts once; top-p keeps the smallest most-likely prefix whose
 *    cumulative probability reaches p; min-p keeps p_i >= min_p * p_max; top-k, top-p and min-p see
 *    probabilities before temperature (its default chain: penalties, top-k, top-p, min-p, temperature);
 *  - chi-square goodness of fit of 20000 seeded draws (deterministic, so the threshold cannot flake).
 */
import assert from 'node:assert/strict'
import {after, describe, it} from 'node:test'

import {ExitCode, RunnerError} from '../../../src/lib/errors.js'
import {loadAddon, type NativeSamplerHandle, type NativeSamplingParams} from '../../../src/lib/engine/addon.js'
import {createNativeSampler, type NativeSampler, type SampleResult} from '../../../src/lib/engine/index.js'
import {resolveSamplingOptions, type SamplingInput} from '../../../src/lib/sampling/index.js'
import {SeededRandom} from '../../../src/lib/util/random.js'

const live: NativeSampler[] = []
after(() => {
  for (const s of live) s.dispose()
})

/** A sampler with every truncation off unless asked, temperature 1, a fixed seed. */
function sampler(nVocab: number, input: SamplingInput = {}, exemptTokens: number[] = []): NativeSampler {
  const opts = resolveSamplingOptions({temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1234n, ...input})
  const s = createNativeSampler(opts, nVocab, {exemptTokens})
  live.push(s)
  return s
}

function max(xs: ArrayLike<number>): number {
  let m = -Infinity
  for (let i = 0; i < xs.length; i++) if (xs[i]! > m) m = xs[i]!
  return m
}

function softmax(logits: ArrayLike<number>, temperature = 1): number[] {
  const xs = Array.from(logits, (l) => l / temperature)
  const m = max(xs)
  const e = xs.map((x) => Math.exp(x - m))
  const z = e.reduce((a, b) => a + b, 0)
  return e.map((x) => x / z)
}

function logSoftmax(logits: ArrayLike<number>): number[] {
  const xs = Array.from(logits).filter((l) => Number.isFinite(l))
  const m = max(xs)
  const lse = m + Math.log(xs.reduce((a, l) => a + Math.exp(l - m), 0))
  return Array.from(logits, (l) => (Number.isFinite(l) ? l - lse : -Infinity))
}

function counts(s: NativeSampler, logits: Float32Array, n: number): number[] {
  const c = new Array<number>(logits.length).fill(0)
  for (let i = 0; i < n; i++) {
    const t = s.sample(logits).token
    c[t] = (c[t] ?? 0) + 1
  }
  return c
}

/** Pearson chi-square of observed counts against expected probabilities (cells with p > 0). */
function chiSquare(observed: number[], probs: number[]): {chi2: number; df: number} {
  const n = observed.reduce((a, b) => a + b, 0)
  let chi2 = 0
  let cells = 0
  probs.forEach((p, i) => {
    if (p <= 0) {
      assert.equal(observed[i], 0, `token ${i} has probability 0 but was drawn`)
      return
    }
    const e = n * p
    chi2 += (observed[i]! - e) ** 2 / e
    cells += 1
  })
  return {chi2, df: cells - 1}
}

// Upper 0.1% points of the chi-square distribution (standard tables).
const CHI2_999: Record<number, number> = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 6: 22.458, 7: 24.322}

function assertFits(observed: number[], probs: number[], what: string): void {
  const {chi2, df} = chiSquare(observed, probs)
  const limit = CHI2_999[df]
  assert.ok(limit !== undefined, `df ${df} in table`)
  assert.ok(chi2 < limit, `${what}: chi2 = ${chi2.toFixed(2)} with ${df} df, limit ${limit}; counts ${observed.join(',')}`)
}

function drawnSet(s: NativeSampler, logits: Float32Array, n = 3000): number[] {
  return counts(s, logits, n).flatMap((c, i) => (c > 0 ? [i] : []))
}

function randomLogits(n: number, seed: bigint, scale = 3): Float32Array {
  const r = new SeededRandom(seed)
  return Float32Array.from({length: n}, () => r.normal() * scale)
}

function argmax(xs: ArrayLike<number>): number {
  let best = -1
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]) && (best < 0 || xs[i]! > xs[best]!)) best = i
  return best
}

describe('greedy (temperature 0)', () => {
  it('equals argmax on random rows', () => {
    for (let k = 0; k < 20; k++) {
      const logits = randomLogits(1000 + k, BigInt(k))
      assert.equal(sampler(logits.length, {temperature: 0}).sample(logits).token, argmax(logits))
    }
  })

  it('breaks ties towards the lowest id', () => {
    assert.equal(sampler(5, {temperature: 0}).sample(Float32Array.from([1, 3, 2, 3, 3])).token, 1)
    assert.equal(sampler(4, {temperature: 0}).sample(new Float32Array(4)).token, 0)
  })

  it('sees the logit bias, and a -Infinity bias bans the argmax', () => {
    const logits = Float32Array.from([1, 3, 2, 0])
    assert.equal(sampler(4, {temperature: 0, logitBias: [[3, 3.5]]}).sample(logits).token, 3)
    assert.equal(sampler(4, {temperature: 0, logitBias: [[1, -Infinity]]}).sample(logits).token, 2)
  })

  it('never picks NaN or infinite logits; returns -1 when nothing is finite', () => {
    const logits = Float32Array.from([Number.NaN, 1, Infinity, 2, -Infinity, Number.NaN])
    assert.equal(sampler(6, {temperature: 0}).sample(logits).token, 3)
    assert.deepEqual(drawnSet(sampler(6), logits), [1, 3])
    const none = Float32Array.from([Number.NaN, -Infinity, Infinity])
    assert.deepEqual(sampler(3, {temperature: 0}).sample(none), {token: -1, logprob: null, top: []})
    assert.equal(sampler(3).sample(none).token, -1)
    assert.equal(
      sampler(2, {
        logitBias: [
          [0, -Infinity],
          [1, -Infinity],
        ],
      }).sample(Float32Array.from([1, 2])).token,
      -1,
    )
  })
})

describe('seeded draws', () => {
  const logits = randomLogits(500, 99n, 1.5)
  const run = (seed: bigint, n = 1000) => {
    const s = sampler(logits.length, {seed, temperature: 0.9, topK: 50, topP: 0.97, minP: 0.01, repeatPenalty: 1.1, penaltyLastN: 16})
    const out: number[] = []
    for (let i = 0; i < n; i++) {
      const t = s.sample(logits).token
      s.accept(t)
      out.push(t)
    }
    return out
  }

  it('same seed and inputs give the same 1000 tokens', () => {
    assert.deepEqual(run(5n), run(5n))
  })

  it('different seeds differ; seed 0 is a valid seed and differs from seed 1', () => {
    assert.notDeepEqual(run(5n), run(6n))
    const zero = run(0n)
    assert.equal(zero.length, 1000)
    assert.notDeepEqual(zero, run(1n))
    assert.ok(new Set(zero).size > 10, 'seed 0 still samples (not stuck on one token)')
  })
})

describe('distribution', () => {
  const logits = Float32Array.from([0.5, -1, 1.2, 0, 2, -0.3])

  it('temperature 1, no truncation: 20000 draws fit the softmax (chi-square, p = 0.001)', () => {
    assertFits(counts(sampler(6, {seed: 11n}), logits, 20000), softmax(logits), 'T = 1')
  })

  it('temperature 0.5 and 2 fit softmax(logits / T) and not softmax(logits)', () => {
    for (const temperature of [0.5, 2]) {
      const observed = counts(sampler(6, {seed: 12n, temperature}), logits, 20000)
      assertFits(observed, softmax(logits, Math.fround(temperature)), `T = ${temperature}`)
      assert.ok(chiSquare(observed, softmax(logits)).chi2 > 100, `T = ${temperature} really changes the distribution`)
    }
  })

  it('top-k keeps exactly the k best (ties at the cut: lower ids) and renormalizes', () => {
    assert.deepEqual(drawnSet(sampler(6, {topK: 3}), logits), [0, 2, 4])
    assert.deepEqual(drawnSet(sampler(6, {topK: 1}), logits), [4])
    assert.deepEqual(drawnSet(sampler(5, {topK: 2}), Float32Array.from([1, 1, 1, 1, 0])), [0, 1])
    const observed = counts(sampler(6, {topK: 3, seed: 13n}), logits, 20000)
    const p = softmax([0.5, 1.2, 2])
    assertFits(observed, [p[0]!, 0, p[1]!, 0, p[2]!, 0], 'top-k 3')
  })

  // probabilities 0.5, 0.3, 0.15, 0.05: cumulative 0.5, 0.8, 0.95, 1
  const quarter = Float32Array.from([Math.log(0.15), Math.log(0.5), Math.log(0.05), Math.log(0.3)])

  it('top-p keeps the smallest most-likely prefix whose cumulative probability reaches p', () => {
    assert.deepEqual(drawnSet(sampler(4, {topP: 0.45}), quarter), [1])
    assert.deepEqual(drawnSet(sampler(4, {topP: 0.75}), quarter), [1, 3])
    assert.deepEqual(drawnSet(sampler(4, {topP: 0.9}), quarter), [0, 1, 3])
    assert.deepEqual(drawnSet(sampler(4, {topP: 0.99}), quarter), [0, 1, 2, 3])
    const observed = counts(sampler(4, {topP: 0.9, seed: 14n}), quarter, 20000)
    assertFits(observed, [0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95], 'top-p 0.9')
  })

  it('top-p works on the top-k set, renormalized (llama.cpp order)', () => {
    // top-k 2 leaves 0.5 and 0.3, renormalized to 0.625 / 0.375: top-p 0.6 keeps only the first.
    assert.deepEqual(drawnSet(sampler(4, {topK: 2, topP: 0.6}), quarter), [1])
    assert.deepEqual(drawnSet(sampler(4, {topK: 2, topP: 0.7}), quarter), [1, 3])
  })

  it('min-p keeps p_i >= min_p * p_max', () => {
    assert.deepEqual(drawnSet(sampler(4, {minP: 0.25}), quarter), [0, 1, 3]) // 0.125: keeps .5 .3 .15
    assert.deepEqual(drawnSet(sampler(4, {minP: 0.35}), quarter), [1, 3]) // 0.175
    assert.deepEqual(drawnSet(sampler(4, {minP: 0.05}), quarter), [0, 1, 2, 3]) // 0.025
    assert.deepEqual(drawnSet(sampler(4, {minP: 1}), quarter), [1])
  })

  it('truncation sees probabilities before temperature', () => {
    // At T = 10 the four are nearly uniform, but top-p 0.75 still keeps the two most likely.
    assert.deepEqual(drawnSet(sampler(4, {topP: 0.75, temperature: 10}), quarter), [1, 3])
    assert.deepEqual(drawnSet(sampler(4, {minP: 0.35, temperature: 10}), quarter), [1, 3])
  })

  it('keeps the same sets on a 150000-entry row (the histogram and radix paths)', () => {
    const n = 150000
    const big = randomLogits(n, 5n, 2)
    const ranked = Array.from(big.keys()).sort((a, b) => big[b]! - big[a]! || a - b)
    const p = softmax(big)
    // top-p 0.5 without top-k: the prefix is long enough to go through the histogram path.
    let cum = 0
    let cut = 0
    while (cum < 0.5) cum += p[ranked[cut++]!]!
    const want = new Set(ranked.slice(0, cut))
    const s = sampler(n, {topP: 0.5, seed: 3n})
    for (let i = 0; i < 300; i++) assert.ok(want.has(s.sample(big).token), 'drawn token is inside the top-p prefix')
    // top-k 1000 (above the heap path's limit): every draw is among the 1000 best.
    const top1000 = new Set(ranked.slice(0, 1000))
    const k = sampler(n, {topK: 1000, seed: 4n})
    for (let i = 0; i < 300; i++) assert.ok(top1000.has(k.sample(big).token))
  })
})

describe('penalties (llama.cpp rules)', () => {
  const logits = Float32Array.from([2, -1, 0.5, 1.25])

  /** Log-probabilities of every token, from the top list (n = nVocab). */
  function logprobsAfter(input: SamplingInput, history: number[], exempt: number[] = []): number[] {
    const s = sampler(4, {temperature: 0, logprobs: true, topLogprobs: 4, penaltyLastN: 64, ...input}, exempt)
    for (const t of history) s.accept(t)
    const out = new Array<number>(4)
    for (const [id, lp] of s.sample(logits).top) out[id] = lp
    return out
  }

  /** float32 arithmetic as the sampler does it. */
  const f = Math.fround
  function assertClose(got: number[], want: number[], what: string): void {
    want.forEach((w, i) => assert.ok(Math.abs(got[i]! - w) < 2e-6, `${what}: token ${i} logprob ${got[i]} vs ${w}`))
  }

  it('repeat: divides a positive logit, multiplies a negative one, once per distinct token', () => {
    const got = logprobsAfter({repeatPenalty: 1.5}, [0, 1, 0, 0])
    const want = logSoftmax([f(2 / f(1.5)), f(-1 * f(1.5)), 0.5, 1.25])
    assertClose(
      got,
      want.map((x) => f(x)),
      'repeat 1.5',
    )
  })

  it('frequency subtracts count * penalty, presence subtracts once', () => {
    const got = logprobsAfter({frequencyPenalty: 0.25, presencePenalty: 0.5}, [0, 3, 0, 0])
    const want = logSoftmax([f(2 - f(f(3 * 0.25) + 0.5)), -1, 0.5, f(1.25 - f(f(1 * 0.25) + 0.5))])
    assertClose(got, want, 'frequency 0.25, presence 0.5')
  })

  it('all three together, in llama.cpp order (repeat first, then subtract)', () => {
    const got = logprobsAfter({repeatPenalty: 1.3, frequencyPenalty: 0.1, presencePenalty: 0.2}, [1, 1, 3])
    const want = logSoftmax([2, f(f(-1 * f(1.3)) - f(f(2 * f(0.1)) + f(0.2))), 0.5, f(f(1.25 / f(1.3)) - f(f(1 * f(0.1)) + f(0.2)))])
    assertClose(got, want, 'combined')
  })

  it('leaves exempt tokens untouched', () => {
    const got = logprobsAfter({repeatPenalty: 2, presencePenalty: 1}, [0, 3], [0])
    const want = logSoftmax([2, -1, 0.5, f(f(1.25 / 2) - 1)])
    assertClose(got, want, 'token 0 exempt')
  })

  it('looks only at the last penaltyLastN accepted tokens', () => {
    const got = logprobsAfter({presencePenalty: 1, penaltyLastN: 2}, [0, 3, 2])
    const want = logSoftmax([2, -1, -0.5, 0.25])
    assertClose(got, want, 'window 2: token 0 has left it')
    const off = logprobsAfter({presencePenalty: 1, penaltyLastN: 0}, [0, 3, 2])
    assertClose(off, logSoftmax(logits), 'penaltyLastN 0: off')
  })

  it('changes what greedy picks', () => {
    const s = sampler(4, {temperature: 0, presencePenalty: 1, penaltyLastN: 8})
    assert.equal(s.sample(logits).token, 0)
    s.accept(0)
    assert.equal(s.sample(logits).token, 3) // 2 - 1 = 1 < 1.25
  })
})

describe('logprobs', () => {
  const logits = randomLogits(1000, 21n, 4)
  const want = logSoftmax(logits)
  const ranked = Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]! || a - b)

  it('the token logprob and the top-20 equal a float64 log-softmax; sorted best first', () => {
    const s = sampler(1000, {logprobs: true, topLogprobs: 20, seed: 8n})
    for (let i = 0; i < 50; i++) {
      const r: SampleResult = s.sample(logits)
      assert.ok(Math.abs(r.logprob! - want[r.token]!) < 1e-5, `token ${r.token}: ${r.logprob} vs ${want[r.token]}`)
      assert.deepEqual(
        r.top.map(([id]) => id),
        ranked.slice(0, 20),
      )
      for (const [id, lp] of r.top) assert.ok(Math.abs(lp - want[id]!) < 1e-5)
      for (let j = 1; j < r.top.length; j++) assert.ok(r.top[j - 1]![1] >= r.top[j]![1])
    }
  })

  it('is independent of temperature and truncation (the model’s distribution)', () => {
    const a = sampler(1000, {temperature: 0, logprobs: true, topLogprobs: 5}).sample(logits)
    const b = sampler(1000, {temperature: 0.3, topK: 2, logprobs: true, topLogprobs: 5}).sample(logits)
    assert.deepEqual(a.top, b.top)
  })

  it('honours n, ties by id, and leaves banned tokens out', () => {
    assert.deepEqual(sampler(1000, {logprobs: true}).sample(logits).top, [])
    assert.equal(sampler(1000, {logprobs: true, topLogprobs: 5}).sample(logits).top.length, 5)
    const tiny = sampler(3, {logprobs: true, topLogprobs: 20, logitBias: [[1, -Infinity]]}).sample(Float32Array.from([0, 5, 0]))
    assert.deepEqual(
      tiny.top.map(([id]) => id),
      [0, 2],
    )
    assert.ok(Math.abs(tiny.top[0]![1] - Math.log(0.5)) < 1e-6)
    assert.equal(sampler(3).sample(Float32Array.from([0, 1, 2])).logprob, null, 'not requested: null')
  })
})

describe('refusals', () => {
  const addon = loadAddon()
  const base: NativeSamplingParams = {
    temperature: 1,
    topK: 0,
    topP: 1,
    minP: 0,
    repeatPenalty: 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    penaltyLastN: 0,
    seed: 0n,
    nTopLogprobs: 0,
  }

  function refused(fn: () => unknown, code: string, ...mustMention: string[]): void {
    assert.throws(fn, (error: unknown) => {
      const e = error as Error & {code?: string}
      assert.equal(e.code, code, `code of "${e.message}"`)
      for (const word of mustMention) assert.ok(e.message.includes(word), `"${e.message}" mentions ${word}`)
      return true
    })
  }

  it('names every bad parameter and its value at create', () => {
    const bad: Array<[Partial<NativeSamplingParams>, ...string[]]> = [
      [{temperature: -1}, 'temperature', '-1'],
      [{temperature: Number.NaN}, 'temperature', 'nan'],
      [{temperature: Infinity}, 'temperature', 'inf'],
      [{temperature: 1e300}, 'temperature', '1e+300'],
      [{topK: -1}, 'top_k', '-1'],
      [{topK: 1.5}, 'topK', '1.5'],
      [{topP: 0}, 'top_p', '0'],
      [{topP: 1.5}, 'top_p', '1.5'],
      [{minP: -0.5}, 'min_p', '-0.5'],
      [{minP: 2}, 'min_p', '2'],
      [{repeatPenalty: 0}, 'repeat_penalty', '0'],
      [{repeatPenalty: Number.NaN}, 'repeat_penalty', 'nan'],
      [{presencePenalty: Infinity}, 'presence_penalty', 'inf'],
      [{frequencyPenalty: -Infinity}, 'frequency_penalty', '-inf'],
      [{penaltyLastN: -1}, 'penalty_last_n', '-1'],
      [{penaltyLastN: 2 ** 24 + 1}, 'penalty_last_n', '16777217'],
      [{nTopLogprobs: 21}, 'n_top_logprobs', '21'],
      [{nTopLogprobs: 2}, 'n_top_logprobs', '2', 'logprobs'],
      [{logitBias: [[10, 1]]}, 'logit_bias[0] token', '10'],
      [{logitBias: new Map([[-1, 1]])}, 'logit_bias[0] token', '-1'],
      [
        {
          logitBias: [
            [1, 1],
            [2, Infinity],
          ],
        },
        'logit_bias[1]',
        'inf',
      ],
      [{logitBias: [[1, Number.NaN]]}, 'logit_bias[0]', 'nan'],
      [
        {
          logitBias: [
            [3, 1],
            [3, 2],
          ],
        },
        'logit_bias',
        'token 3',
        'more than once',
      ],
      [{exemptTokens: [0, 10]}, 'exempt_tokens[1]', '10'],
    ]
    for (const [patch, ...words] of bad) {
      refused(() => addon.samplerCreate({...base, ...patch}, 10), 'SAMPLER_BAD_PARAM', ...words)
    }
    refused(() => addon.samplerCreate(base, 0), 'SAMPLER_BAD_PARAM', 'n_vocab', '0')
    refused(() => addon.samplerCreate({...base, seed: 5 as unknown as bigint}, 10), 'SAMPLER_BAD_ARGUMENT', 'seed', 'bigint')
    refused(() => addon.samplerCreate({...base, seed: -1n}, 10), 'SAMPLER_BAD_PARAM', 'seed', '-1')
    refused(() => addon.samplerCreate({...base, seed: 1n << 64n}, 10), 'SAMPLER_BAD_PARAM', 'seed', '18446744073709551616')
    refused(() => addon.samplerCreate({...base, temperature: '1' as unknown as number}, 10), 'SAMPLER_BAD_ARGUMENT', 'temperature')
    refused(() => addon.samplerCreate({...base, logitBias: 'x' as unknown as []}, 10), 'SAMPLER_BAD_ARGUMENT', 'logitBias')
    refused(() => addon.samplerCreate({...base, logitBias: [[1]] as unknown as []}, 10), 'SAMPLER_BAD_ARGUMENT', 'logitBias[0]')
  })

  it('createNativeSampler refuses a bias token outside the vocabulary by name (RunnerError, usage)', () => {
    assert.throws(
      () => createNativeSampler(resolveSamplingOptions({logitBias: [[10, 1]]}), 10),
      (e: unknown) => e instanceof RunnerError && e.exitCode === ExitCode.usage && e.message.includes('token 10'),
    )
  })

  it('refuses logits of the wrong length or type, and out-of-range tokens', () => {
    const h = addon.samplerCreate(base, 10)
    try {
      refused(() => addon.samplerSample(h, new Float32Array(9)), 'SAMPLER_BAD_ARGUMENT', '9', '10')
      refused(() => addon.samplerSample(h, new Float32Array(11)), 'SAMPLER_BAD_ARGUMENT', '11', '10')
      refused(() => addon.samplerSample(h, new Float64Array(10) as unknown as Float32Array), 'SAMPLER_BAD_ARGUMENT', 'Float32Array')
      refused(() => addon.samplerAccept(h, 10), 'SAMPLER_BAD_ARGUMENT', 'token', '10')
      refused(() => addon.samplerAccept(h, -1), 'SAMPLER_BAD_ARGUMENT', 'token', '-1')
      refused(() => addon.samplerAccept(h, 1.5), 'SAMPLER_BAD_ARGUMENT', 'token', '1.5')
      refused(() => addon.samplerSample({} as NativeSamplerHandle, new Float32Array(10)), 'SAMPLER_BAD_ARGUMENT', 'handle')
    } finally {
      addon.samplerFree(h)
    }
  })

  it('refuses a freed handle by name instead of crashing', () => {
    const h = addon.samplerCreate(base, 4)
    addon.samplerFree(h)
    refused(() => addon.samplerSample(h, new Float32Array(4)), 'SAMPLER_FREED', 'samplerSample', 'freed')
    refused(() => addon.samplerAccept(h, 0), 'SAMPLER_FREED', 'samplerAccept', 'freed')
    refused(() => addon.samplerFree(h), 'SAMPLER_FREED', 'samplerFree', 'freed')
    const s = createNativeSampler(resolveSamplingOptions({}), 4)
    s.dispose()
    s.dispose() // idempotent at the wrapper
    assert.throws(
      () => s.sample(new Float32Array(4)),
      (e: unknown) => e instanceof RunnerError && e.code === 'SAMPLER_FREED',
    )
  })
})

describe('speed (printed, not asserted)', () => {
  it('time per sample at n_vocab 150000', () => {
    const n = 150000
    const logits = randomLogits(n, 77n, 3)
    const cases: Array<[string, SamplingInput]> = [
      ['greedy', {temperature: 0}],
      ['llama.cpp defaults (k40 p0.95 minp0.05 T0.8)', {temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05}],
      ['top-k 40, top-p 0.95', {temperature: 0.8, topK: 40, topP: 0.95}],
      [
        'defaults + repeat 1.1 over 64 + logprobs top 5',
        {temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1, logprobs: true, topLogprobs: 5},
      ],
      ['top-p 0.95 alone (no top-k, no min-p)', {temperature: 0.8, topP: 0.95}],
      ['no truncation, T 1', {}],
    ]
    for (const [name, input] of cases) {
      const s = sampler(n, input)
      for (let i = 0; i < 64; i++) s.accept(i * 7)
      s.sample(logits) // warm
      const reps = 100
      const t0 = process.hrtime.bigint()
      for (let i = 0; i < reps; i++) s.sample(logits)
      const us = Number(process.hrtime.bigint() - t0) / 1000 / reps
      console.log(`sampler ${name}: ${us.toFixed(0)} µs per token at n_vocab ${n}`)
    }
  })
})
