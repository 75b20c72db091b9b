// tool_call: passes on stories260K (ChatML, so the server's generic JSON call format, forced by its
// grammar); a copy whose chat template raises fails it; the verdicts fail a call of another function,
// arguments that are not JSON or not valid under the schema (ajv), a missing call, and an answer to
// the result that calls again; no openai package: not_executed. Build first (`npx tsc -p .`): the
// server's prompt workers run from dist/ under tsx.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {NO_OPENAI_REASON, openaiMissing} from '../../../src/lib/compat/checks/serve-common.js'
import {
  type ChoiceLike,
  finalVerdict,
  TOOL_NAME,
  toolCall,
  toolCallVerdict,
  WEATHER_SCHEMA,
} from '../../../src/lib/compat/checks/tool-call.js'
import {BROKEN_TEMPLATE, checkEnv, rowFor, scratch, withTemplate} from '../../helpers/compat-chat.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

describe('tool_call', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const tmp = scratch('runner-compat-tools-')
  const env = checkEnv(tmp.dir)
  let broken: string
  before(async () => {
    broken = await withTemplate(STORIES, tmp.dir, BROKEN_TEMPLATE, 'stories-broken')
  })
  after(() => tmp.remove())

  test('passes on stories260K: a forced call with valid arguments, then a text answer to its result', async () => {
    assert.equal(await toolCall.when(rowFor(STORIES), {}, env), undefined)
    const out = await toolCall.run(rowFor(STORIES), {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^model stories260K \(template fallback-chatml\): get_weather\(\{.*\}\) validates against its schema \(ajv\) in [\d.]+ ms; the answer to the result: ".*" \(finish (stop|length), [\d.]+ ms\)$/,
    )
  })

  test('mutation: a chat template that raises fails it', async () => {
    const out = await toolCall.run(rowFor(broken), {}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /^the forced tool call failed: HTTP 400: .*this chat template is broken on purpose/)
  })

  test('a budget too small for the call fails it, naming why', async () => {
    const out = await toolCall.run(rowFor(STORIES), {maxTokens: 8}, env)
    assert.equal(out.outcome, 'fail')
    // Cut short, the generic format's JSON is text, not a call.
    assert.match(out.evidence, /^model stories260K \(template fallback-chatml\): the reply has 0 tool calls, not 1 \(content ".*"\)$/)
  })

  test('not_executed without the openai package', async () => {
    assert.equal(await openaiMissing(() => Promise.reject(new Error("Cannot find package 'openai'"))), NO_OPENAI_REASON)
  })
})

describe('tool_call verdicts', () => {
  const call = (name: string, args: string): ChoiceLike => ({
    finish_reason: 'tool_calls',
    message: {content: null, tool_calls: [{id: 'call_1', type: 'function', function: {name, arguments: args}}]},
  })

  test('a call of the forced function with valid arguments passes', () => {
    assert.deepEqual(toolCallVerdict(call(TOOL_NAME, '{"city": "Paris", "unit": "celsius"}'), TOOL_NAME, WEATHER_SCHEMA), {
      ok: true,
      id: 'call_1',
      args: {city: 'Paris', unit: 'celsius'},
    })
  })

  test('arguments that ajv refuses, or that are not JSON, fail', () => {
    const kelvin = toolCallVerdict(call(TOOL_NAME, '{"city": "Paris", "unit": "kelvin"}'), TOOL_NAME, WEATHER_SCHEMA)
    assert.equal(kelvin.ok, false)
    assert.match(
      !kelvin.ok ? kelvin.why : '',
      /^the arguments \{"city":"Paris","unit":"kelvin"\} do not validate: arguments\/unit must be equal to one of the allowed values$/,
    )
    const extra = toolCallVerdict(call(TOOL_NAME, '{"city": "", "unit": "celsius", "x": 1}'), TOOL_NAME, WEATHER_SCHEMA)
    assert.match(!extra.ok ? extra.why : '', /must NOT have additional properties, arguments\/city must NOT have fewer than 1 characters$/)
    const text = toolCallVerdict(call(TOOL_NAME, '{"city": "Par'), TOOL_NAME, WEATHER_SCHEMA)
    assert.deepEqual(text, {ok: false, why: 'the arguments "{\\"city\\": \\"Par" are not JSON'})
  })

  test('another function, no call, or a finish reason other than tool_calls fails', () => {
    assert.deepEqual(toolCallVerdict(call('get_time', '{}'), TOOL_NAME, WEATHER_SCHEMA), {
      ok: false,
      why: 'the call names "get_time", not the forced get_weather',
    })
    assert.deepEqual(toolCallVerdict({finish_reason: 'length', message: {content: 'hello'}}, TOOL_NAME, WEATHER_SCHEMA), {
      ok: false,
      why: 'the reply has 0 tool calls, not 1 (content "hello")',
    })
    assert.deepEqual(toolCallVerdict({...call(TOOL_NAME, '{}'), finish_reason: 'length'}, TOOL_NAME, WEATHER_SCHEMA), {
      ok: false,
      why: 'finish_reason length, not tool_calls',
    })
  })

  test('the answer to the result must be text that ended', () => {
    assert.equal(finalVerdict({finish_reason: 'stop', message: {content: 'Sunny.'}}), undefined)
    assert.equal(finalVerdict(call(TOOL_NAME, '{}')), 'the answer to the tool result makes 1 more tool calls')
    assert.equal(
      finalVerdict({finish_reason: 'stop', message: {content: null}}),
      'the answer to the tool result has no text content (null)',
    )
  })
})
