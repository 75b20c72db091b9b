import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {ChatHistoryError, validateHistory} from '../../../src/lib/chat/index.js'

function refusal(input: unknown): {param: string; message: string} {
  try {
    validateHistory(input)
  } catch (error) {
    assert.ok(error instanceof ChatHistoryError, `expected ChatHistoryError, got ${String(error)}`)
    return {param: error.param, message: error.message}
  }
  assert.fail('the history was accepted')
}

describe('chat history validation', () => {
  test('canonical form: developer is system, text parts are joined', () => {
    const got = validateHistory([
      {role: 'developer', content: 'Be brief.'},
      {
        role: 'user',
        content: [
          {type: 'text', text: 'Hello, '},
          {type: 'text', text: 'world'},
        ],
      },
      {role: 'assistant', content: ''},
      {role: 'user', content: 'again'},
    ])
    assert.deepEqual(got, [
      {role: 'system', content: 'Be brief.'},
      {role: 'user', content: 'Hello, world'},
      {role: 'assistant', content: ''},
      {role: 'user', content: 'again'},
    ])
  })

  const cases: Array<[string, unknown, string, RegExp]> = [
    ['not an array', {role: 'user'}, 'messages', /must be an array/],
    ['empty', [], 'messages', /at least one/],
    ['not an object', ['hi'], 'messages[0]', /must be an object/],
    ['no role', [{content: 'x'}], 'messages[0].role', /missing/],
    ['role not a string', [{role: 3, content: 'x'}], 'messages[0].role', /must be a string/],
    ['unknown role', [{role: 'narrator', content: 'x'}], 'messages[0].role', /not one of/],
    ['tool role', [{role: 'tool', content: 'x'}], 'messages[0].role', /tool results need a request with tools/],
    ['no content', [{role: 'user'}], 'messages[0].content', /missing/],
    ['null content', [{role: 'user', content: null}], 'messages[0].content', /missing/],
    ['numeric content', [{role: 'user', content: 5}], 'messages[0].content', /string or an array/],
    ['empty user content', [{role: 'user', content: ''}], 'messages[0].content', /empty/],
    ['image part', [{role: 'user', content: [{type: 'image_url', image_url: {url: 'x'}}]}], 'messages[0].content[0].type', /text-only/],
    ['text part without text', [{role: 'user', content: [{type: 'text'}]}], 'messages[0].content[0].text', /must be a string/],
    ['name not a string', [{role: 'user', content: 'x', name: 5}], 'messages[0].name', /must be a string/],
    [
      'tool_calls field',
      [{role: 'user', content: 'x', tool_calls: [{id: 'a', type: 'function', function: {name: 'f', arguments: '{}'}}]}],
      'messages[0].tool_calls',
      /is not a field of a "user" message/,
    ],
    ['unknown field', [{role: 'user', content: 'x', colour: 'red'}], 'messages[0].colour', /is not a field of a "user" message/],
    [
      'late system message',
      [
        {role: 'user', content: 'a'},
        {role: 'system', content: 'b'},
        {role: 'user', content: 'c'},
      ],
      'messages[1].role',
      /must come first/,
    ],
    [
      'assistant last',
      [
        {role: 'user', content: 'a'},
        {role: 'assistant', content: 'b'},
      ],
      'messages[1].role',
      /user.*last/,
    ],
    ['system only', [{role: 'system', content: 'a'}], 'messages[0].role', /user.*last/],
  ]
  for (const [name, input, param, message] of cases) {
    test(`refuses ${name}, naming ${param}`, () => {
      const r = refusal(input)
      assert.equal(r.param, param)
      assert.match(r.message, message)
    })
  }
})
