/**
 * Sampling options: defaults are llama.cpp's common_params_sampling (common/common.h: temp 0.80,
 * top_k 40, top_p 0.95, min_p 0.05, penalty_last_n 64, penalty_repeat 1.00, penalty_freq 0.00,
 * penalty_present 0.00), and every out-of-range field is refused by name with its value
 * (ARCHITECTURE.md rule 4: honoured or refused, never ignored).
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'

import {ExitCode, RunnerError} from '../../../src/lib/errors.js'
import {type SamplingInput, resolveSamplingOptions} from '../../../src/lib/sampling/index.js'

function refuses(input: unknown, ...mustMention: string[]): void {
  assert.throws(
    () => resolveSamplingOptions(input as SamplingInput),
    (error: unknown) => {
      assert.ok(error instanceof RunnerError, `a RunnerError, got ${String(error)}`)
      assert.equal(error.code, 'SAMPLING_BAD_OPTION')
      assert.equal(error.exitCode, ExitCode.usage)
      for (const word of mustMention) assert.ok(error.message.includes(word), `"${error.message}" mentions ${word}`)
      return true
    },
  )
}

describe('resolveSamplingOptions', () => {
  it("fills llama.cpp's common defaults", () => {
    const o = resolveSamplingOptions({})
    assert.equal(o.temperature, 0.8)
    assert.equal(o.topK, 40)
    assert.equal(o.topP, 0.95)
    assert.equal(o.minP, 0.05)
    assert.equal(o.repeatPenalty, 1)
    assert.equal(o.presencePenalty, 0)
    assert.equal(o.frequencyPenalty, 0)
    assert.equal(o.penaltyLastN, 64)
    assert.equal(o.logprobs, false)
    assert.equal(o.topLogprobs, 0)
    assert.equal(o.logitBias.size, 0)
  })

  it('draws a random 64-bit seed when none is given and reports it; keeps a given one (0 included)', () => {
    const a = resolveSamplingOptions().seed
    const b = resolveSamplingOptions().seed
    assert.equal(typeof a, 'bigint')
    assert.ok(a >= 0n && a < 1n << 64n)
    assert.notEqual(a, b, 'two random seeds differ (a 2^-64 chance of a false failure)')
    assert.equal(resolveSamplingOptions({seed: 0}).seed, 0n)
    assert.equal(resolveSamplingOptions({seed: 0n}).seed, 0n)
    assert.equal(resolveSamplingOptions({seed: (1n << 64n) - 1n}).seed, (1n << 64n) - 1n)
    assert.equal(resolveSamplingOptions({seed: 12345}).seed, 12345n)
  })

  it('keeps given values and accepts the edges of each range', () => {
    const o = resolveSamplingOptions({
      temperature: 0,
      topK: 0,
      topP: 1,
      minP: 1,
      repeatPenalty: 0.5,
      presencePenalty: -2,
      frequencyPenalty: 3,
      penaltyLastN: 0,
      logprobs: true,
      topLogprobs: 20,
    })
    assert.deepEqual(
      [
        o.temperature,
        o.topK,
        o.topP,
        o.minP,
        o.repeatPenalty,
        o.presencePenalty,
        o.frequencyPenalty,
        o.penaltyLastN,
        o.logprobs,
        o.topLogprobs,
      ],
      [0, 0, 1, 1, 0.5, -2, 3, 0, true, 20],
    )
  })

  it('treats null as not given (JSON bodies)', () => {
    assert.equal(resolveSamplingOptions({temperature: null} as unknown as SamplingInput).temperature, 0.8)
  })

  it('takes the logit bias as a Map, [token, bias] pairs or an OpenAI-style record', () => {
    const want = new Map([
      [3, -Infinity],
      [7, 2.5],
    ])
    assert.deepEqual(resolveSamplingOptions({logitBias: want}).logitBias, want)
    assert.deepEqual(
      resolveSamplingOptions({
        logitBias: [
          [3, -Infinity],
          [7, 2.5],
        ],
      }).logitBias,
      want,
    )
    assert.deepEqual(resolveSamplingOptions({logitBias: {'3': -Infinity, '7': 2.5}}).logitBias, want)
  })

  it('refuses every out-of-range field by name and value', () => {
    refuses({temperature: -0.1}, 'temperature', '-0.1')
    refuses({temperature: Number.NaN}, 'temperature', 'NaN')
    refuses({temperature: Infinity}, 'temperature', 'Infinity')
    refuses({temperature: 1e39}, 'temperature', '1e+39')
    refuses({temperature: '1'}, 'temperature', '"1"')
    refuses({topK: -1}, 'topK', '-1')
    refuses({topK: 2.5}, 'topK', '2.5')
    refuses({topP: 0}, 'topP', '0')
    refuses({topP: 1.01}, 'topP', '1.01')
    refuses({minP: -0.01}, 'minP', '-0.01')
    refuses({minP: 1.5}, 'minP', '1.5')
    refuses({repeatPenalty: 0}, 'repeatPenalty', '0')
    refuses({repeatPenalty: -1}, 'repeatPenalty', '-1')
    refuses({presencePenalty: Number.NaN}, 'presencePenalty', 'NaN')
    refuses({frequencyPenalty: -Infinity}, 'frequencyPenalty', '-Infinity')
    refuses({penaltyLastN: -1}, 'penaltyLastN', '-1')
    refuses({penaltyLastN: 2 ** 24 + 1}, 'penaltyLastN', String(2 ** 24 + 1))
    refuses({seed: -1}, 'seed', '-1')
    refuses({seed: 1.5}, 'seed', '1.5')
    refuses({seed: 2 ** 53}, 'seed')
    refuses({seed: 1n << 64n}, 'seed', '18446744073709551616n')
    refuses({seed: -1n}, 'seed', '-1n')
    refuses({seed: '7'}, 'seed', '"7"')
    refuses({logprobs: 1}, 'logprobs', '1')
    refuses({topLogprobs: 21}, 'topLogprobs', '21')
    refuses({topLogprobs: -1}, 'topLogprobs', '-1')
    refuses({topLogprobs: 3}, 'topLogprobs', '3', 'logprobs')
    refuses({logitBias: [[1, Infinity]]}, 'logitBias[1]', 'Infinity')
    refuses({logitBias: [[1, Number.NaN]]}, 'logitBias[1]', 'NaN')
    refuses({logitBias: [[-1, 1]]}, 'logitBias token', '-1')
    refuses({logitBias: [[1.5, 1]]}, 'logitBias token', '1.5')
    refuses(
      {
        logitBias: [
          [2, 1],
          [2, 3],
        ],
      },
      'logitBias token',
      '2',
      'more than once',
    )
    refuses({logitBias: {'01': 1}}, 'logitBias key', '"01"')
    refuses({logitBias: [[1, 2, 3]]}, 'logitBias[0]')
    refuses({logitBias: 5}, 'logitBias', '5')
  })

  it('refuses unknown options by name instead of ignoring them', () => {
    refuses({top_k: 5}, '"top_k"')
    refuses({temprature: 1}, '"temprature"')
  })
})
