/**
 * A refused sampling value names the flag as the user typed it (issue #22): `--temp -1` said
 * `Sampling option temperature = -1` and `--top-p 2` said `topP = 2`, names no flag has. Library
 * callers keep the option names (the HTTP routes map those to their request fields), or pass their
 * own naming table.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {applyParams} from '../../../src/lib/chat-ui/params.js'
import {samplingFromFlags} from '../../../src/lib/cli/index.js'
import {resolveSamplingOptions} from '../../../src/lib/sampling/index.js'

const refusal = (re: RegExp) => (e: unknown) =>
  e instanceof Error && (e as {code?: string}).code === 'SAMPLING_BAD_OPTION' && re.test(e.message)

test('the flags, as typed', () => {
  const cases: Array<[Record<string, string | number>, RegExp]> = [
    [{temp: '-1'}, /^--temp -1: must be a finite number >= 0/],
    [{'top-p': '2'}, /^--top-p 2: must be in \(0, 1\]/],
    [{'min-p': '1.5'}, /^--min-p 1\.5: /],
    [{'top-k': -3}, /^--top-k -3: /],
    [{'repeat-penalty': '0'}, /^--repeat-penalty 0: /],
    [{'repeat-last-n': -2}, /^--repeat-last-n -2: /],
  ]
  for (const [flags, re] of cases) assert.throws(() => samplingFromFlags(flags), refusal(re), JSON.stringify(flags))
})

test("the chat's /params names them as typed there", () => {
  const base = applyParams({sampling: resolveSamplingOptions({seed: 1}), maxTokens: -1}, '')
  assert.throws(() => applyParams(base, 'top-p=2'), refusal(/^top-p 2: must be in \(0, 1\]/))
  assert.throws(() => applyParams(base, 'temperature=-1'), refusal(/^temp -1: /))
})

test('library callers: the option names by default, or their own table', () => {
  assert.throws(() => resolveSamplingOptions({topP: 2}), refusal(/^Sampling option topP = 2 must be in \(0, 1\]/))
  assert.throws(() => resolveSamplingOptions({topP: 2}, {topP: 'top_p'}), refusal(/^top_p 2: must be in \(0, 1\]/))
  // the table is the call's own: the next call without one names the option again
  assert.throws(() => resolveSamplingOptions({temperature: -1}), refusal(/^Sampling option temperature = -1/))
})
