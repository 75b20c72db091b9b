/**
 * Reading answers back: each family's call syntax as its model cards and llama.cpp's chat parsers
 * (common/chat.cpp) write it, thinking blocks, and text that only looks like a call. The anchor for
 * arguments is JSON.parse of what the model wrote; for streaming, the whole answer fed at once: any
 * split of the same text must release the same content, thinking and calls.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {AnswerParser, parseAnswer, TOOL_FORMATS, type AnswerOptions, type ToolFormatId} from '../../../src/lib/tools/index.js'

const options = (format: ToolFormatId, think: AnswerOptions['think'] = 'none', names = ['get_weather', 'get_time']): AnswerOptions => ({
  format: TOOL_FORMATS[format],
  toolNames: new Set(names),
  think,
  api: 'openai',
})

/** Feed in pieces of `size` characters; returns content, reasoning and calls (ids aside) as released. */
function streamed(o: AnswerOptions, text: string, size: number) {
  const p = new AnswerParser(o)
  const events = []
  for (let i = 0; i < text.length; i += size) events.push(...p.push(text.slice(i, i + size)))
  events.push(...p.finish())
  return {
    content: events.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join(''),
    reasoning: events.flatMap((e) => (e.type === 'reasoning' ? [e.text] : [])).join(''),
    calls: events.flatMap((e) => (e.type === 'call' ? [{index: e.index, name: e.call.name, arguments: e.call.arguments}] : [])),
  }
}

function whole(o: AnswerOptions, text: string) {
  const r = parseAnswer(o, text)
  return {content: r.content, reasoning: r.reasoning, calls: r.calls.map((c, index) => ({index, name: c.name, arguments: c.arguments}))}
}

const CASES: Array<{
  format: ToolFormatId
  think?: AnswerOptions['think']
  text: string
  content: string
  reasoning?: string
  calls: Array<[string, unknown]>
}> = [
  {
    format: 'hermes',
    text: 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    content: 'Let me check.',
    calls: [['get_weather', {city: 'Paris'}]],
  },
  {
    format: 'hermes',
    text: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
    content: '',
    calls: [
      ['get_weather', {city: 'Paris'}],
      ['get_time', {}],
    ],
  },
  // The model stopped before closing the block (end of turn right after the JSON): still a call.
  {
    format: 'hermes',
    text: '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}',
    content: '',
    calls: [['get_time', {tz: 'UTC'}]],
  },
  // A function nobody offered is not a call: the text stays the model's text.
  {
    format: 'hermes',
    text: '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>',
    content: '<tool_call>\n{"name": "rm_rf", "arguments": {}}\n</tool_call>',
    calls: [],
  },
  {format: 'hermes', text: 'It is sunny <in> Paris.', content: 'It is sunny <in> Paris.', calls: []},
  {
    format: 'hermes',
    think: 'optional',
    text: '<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    content: '',
    reasoning: 'The user wants weather.',
    calls: [['get_weather', {city: 'Oslo'}]],
  },
  {format: 'hermes', think: 'inside', text: 'hmm\n</think>\n\nHello!', content: 'Hello!', reasoning: 'hmm', calls: []},
  {format: 'hermes', think: 'optional', text: 'No thinking here.', content: 'No thinking here.', reasoning: '', calls: []},
  {
    format: 'llama3-json',
    text: '{"name": "get_weather", "parameters": {"city": "Rome"}}',
    content: '',
    calls: [['get_weather', {city: 'Rome'}]],
  },
  {format: 'llama3-json', text: '<|python_tag|>{"name": "get_time", "parameters": {}}', content: '', calls: [['get_time', {}]]},
  {format: 'llama3-json', text: 'The weather is fine.', content: 'The weather is fine.', calls: []},
  {format: 'llama3-json', text: '{"not": "a call"}', content: '{"not": "a call"}', calls: []},
  {
    format: 'mistral',
    text: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lima"}}, {"name": "get_time", "arguments": {}}]',
    content: '',
    calls: [
      ['get_weather', {city: 'Lima'}],
      ['get_time', {}],
    ],
  },
  {format: 'mistral', text: '[{"name": "get_time", "arguments": {"tz": "CET"}}]', content: '', calls: [['get_time', {tz: 'CET'}]]},
  {format: 'mistral', text: '[1, 2, 3] are numbers', content: '[1, 2, 3] are numbers', calls: []},
  {format: 'generic', text: '{"response": "Hi \\"there\\""}', content: 'Hi "there"', calls: []},
  {
    format: 'generic',
    text: '{"tool_calls": [{"name": "get_time", "arguments": {"tz": "UTC"}}]}',
    content: '',
    calls: [['get_time', {tz: 'UTC'}]],
  },
]

describe('answers read back per call syntax', () => {
  for (const c of CASES) {
    test(`${c.format}${c.think ? ` (${c.think} thinking)` : ''}: ${JSON.stringify(c.text.slice(0, 50))}`, () => {
      const o = options(c.format, c.think)
      const expected = {
        content: c.content,
        reasoning: c.reasoning ?? '',
        calls: c.calls.map(([name, args], index) => ({index, name, arguments: JSON.stringify(args)})),
      }
      const got = whole(o, c.text)
      // Arguments come back as the model wrote them: the same values, the very text.
      const normal = (r: ReturnType<typeof whole>) => ({
        ...r,
        calls: r.calls.map((x) => ({...x, arguments: JSON.stringify(JSON.parse(x.arguments))})),
      })
      assert.deepEqual(normal(got), expected)
      for (const call of got.calls) assert.ok(c.text.includes(call.arguments), `${call.arguments} is a piece of the answer`)
      for (const size of [1, 2, 3, 7]) assert.deepEqual(streamed(o, c.text, size), got, `fed ${size} characters at a time`)
    })
  }

  test('arguments pass through as written: numbers JSON.parse would change, the closing marker inside a string', () => {
    const o = options('hermes', 'none', ['f'])
    for (const args of ['{"n": 1e999, "i": 12345678901234567890}', '{"s": "</tool_call>"}', '{"s": "a</tool_call>b"}']) {
      const text = `<tool_call>\n{"name": "f", "arguments": ${args}}\n</tool_call>`
      for (const size of [1, 5, text.length]) {
        const r = streamed(o, text, size)
        assert.deepEqual(r.calls, [{index: 0, name: 'f', arguments: args}], `${args}, fed ${size} at a time`)
        assert.equal(r.content, '')
      }
    }
  })

  test('a region that turns out not to be calls is the text as written, its spacing kept', () => {
    const o = options('hermes')
    const text = 'Look: <tool_call> is how calls start.'
    assert.equal(whole(o, text).content, text)
    assert.equal(streamed(o, text, 1).content, text)
  })

  test('without callable tools (tool_choice none) a call-shaped answer is text', () => {
    const o = {...options('hermes'), toolNames: new Set<string>()}
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    assert.deepEqual(whole(o, text), {content: text, reasoning: '', calls: []})
  })

  test('text streams as it comes, holding back only what could begin a call', () => {
    const p = new AnswerParser(options('hermes'))
    assert.deepEqual(p.push('Hello wor'), [{type: 'text', text: 'Hello wor'}])
    assert.deepEqual(p.push('ld <tool'), [{type: 'text', text: 'ld'}])
    assert.deepEqual(p.push('s> are'), [{type: 'text', text: ' <tools> are'}])
  })

  test('call ids follow the family: Mistral templates take 9 letters and digits, OpenAI call_, Anthropic toolu_', () => {
    assert.match(TOOL_FORMATS.mistral.newId('openai'), /^[a-zA-Z0-9]{9}$/)
    assert.match(TOOL_FORMATS.hermes.newId('openai'), /^call_[a-zA-Z0-9]{24}$/)
    assert.match(TOOL_FORMATS.hermes.newId('anthropic'), /^toolu_[a-zA-Z0-9]{24}$/)
  })
})
