/**
 * The grammar that makes calls valid, judged by outside validators: ajv for arguments against each
 * function's schema, JSON.parse for the JSON layouts, String.prototype.includes for "text without
 * the marker". Each accepted text is also read back by the answer parser as exactly the calls it holds.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {Ajv} from 'ajv'

import {GrammarMatcher, NativeGrammar} from '../../../src/lib/engine/index.js'
import {compileConstraint, piecesGrammar} from '../../../src/lib/grammar/index.js'
import {lowerGrammar} from '../../../src/lib/grammar/lower.js'
import {parseAnswer, toolConstraint, TOOL_FORMATS, type ToolChoice, type ToolFormatId, type ToolSpec} from '../../../src/lib/tools/index.js'

const weather: ToolSpec = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: {city: {type: 'string', minLength: 1, maxLength: 20}, days: {type: 'integer', minimum: 1, maximum: 7}},
    required: ['city'],
    additionalProperties: false,
  },
  strict: false,
  at: 'tools[0].function',
}
const time: ToolSpec = {
  name: 'get_time',
  parameters: {type: 'object', properties: {}, additionalProperties: false},
  strict: false,
  at: 'tools[1].function',
}
const enc = new TextEncoder()

function acceptor(format: ToolFormatId, choice: ToolChoice, parallel = true, tools = [weather, time]) {
  const source = toolConstraint({format: TOOL_FORMATS[format], tools, choice, parallel, think: 'none'})
  assert.ok(source)
  const native = NativeGrammar.create(compileConstraint(source).program)
  return (text: string): boolean => {
    const m = GrammarMatcher.create(native)
    try {
      return m.acceptBytes(enc.encode(text)) === -1 && m.complete
    } finally {
      m.dispose()
    }
  }
}

/** A call in a family's syntax (as the format table says the model writes it). */
function call(format: ToolFormatId, name: string, args: string): string {
  const f = TOOL_FORMATS[format]
  return `${f.before}${name}${f.between}${args}${f.after}`
}

function calls(format: ToolFormatId, items: Array<[string, string]>): string {
  const f = TOOL_FORMATS[format]
  return `${f.open}${items.map(([n, a]) => call(format, n, a)).join(f.separator)}${f.close}`
}

const validate = new Ajv({strict: false}).compile(weather.parameters)
const ARGS = [
  '{"city": "Paris"}',
  '{"city":"Oslo","days":3}',
  '{"days": 2, "city": "Rome"}',
  '{}',
  '{"city": ""}',
  '{"city": "Paris", "days": 9}',
  '{"city": "Paris", "x": 1}',
  '{"city": 5}',
  '[]',
  '{"city": "Lima"',
]

describe('forced calls: the grammar accepts exactly the calls whose arguments the schema validates', () => {
  for (const format of ['hermes', 'llama3-json', 'mistral', 'generic'] as const) {
    test(`${format}: tool_choice required`, () => {
      const accepts = acceptor(format, {mode: 'required'})
      for (const args of ARGS) {
        let valid = false
        try {
          valid = validate(JSON.parse(args)) as boolean
        } catch {
          valid = false
        }
        const text = calls(format, [['get_weather', args]])
        assert.equal(accepts(text), valid, text)
        if (valid) {
          const read = parseAnswer(
            {format: TOOL_FORMATS[format], toolNames: new Set(['get_weather', 'get_time']), think: 'none', api: 'openai'},
            text,
          )
          assert.deepEqual(
            read.calls.map((c) => [c.name, JSON.parse(c.arguments)]),
            [['get_weather', JSON.parse(args)]],
          )
        }
      }
      assert.equal(accepts(calls(format, [['get_time', '{}']])), true)
      assert.equal(accepts(calls(format, [['get_date', '{}']])), false, 'a function that was not offered')
      assert.equal(accepts('Sure, let me check.'), false, 'text instead of a call')
      assert.equal(accepts(''), false, 'no call')
    })
  }

  test('parallel calls: several when allowed (not for Llama 3, whose templates take one), one when not', () => {
    const two: Array<[string, string]> = [
      ['get_weather', '{"city": "Paris"}'],
      ['get_time', '{}'],
    ]
    assert.equal(acceptor('hermes', {mode: 'required'})(calls('hermes', two)), true)
    assert.equal(acceptor('mistral', {mode: 'required'})(calls('mistral', two)), true)
    assert.equal(acceptor('hermes', {mode: 'required'}, false)(calls('hermes', two)), false)
    assert.equal(acceptor('llama3-json', {mode: 'required'})(calls('llama3-json', two)), false)
  })

  test('a named function: only that one', () => {
    const accepts = acceptor('hermes', {mode: 'named', name: 'get_time'})
    assert.equal(accepts(calls('hermes', [['get_time', '{}']])), true)
    assert.equal(accepts(calls('hermes', [['get_weather', '{"city": "Paris"}']])), false)
  })

  test('auto with a strict function: any text without the call marker, then only valid calls', () => {
    const strict = {...weather, strict: true}
    const accepts = acceptor('hermes', {mode: 'auto'}, true, [strict, time])
    assert.equal(accepts('It is sunny.'), true)
    assert.equal(accepts(''), true)
    assert.equal(accepts(`Checking.\n${call('hermes', 'get_weather', '{"city": "Paris"}')}`), true)
    assert.equal(accepts(`Checking.\n${call('hermes', 'get_weather', '{"city": 5}')}`), false)
    assert.equal(accepts('<tool_call>nonsense'), false)
    const llama = acceptor('llama3-json', {mode: 'auto'}, true, [strict])
    assert.equal(llama('The weather is fine.'), true)
    assert.equal(llama(call('llama3-json', 'get_weather', '{"city": "Paris"}')), true)
    assert.equal(llama('{"name": "get_weather", "parameters": {"city": 5}}'), false)
    const generic = acceptor('generic', {mode: 'auto'}, true, [weather])
    assert.equal(generic('{"response": "hello"}'), true)
    assert.equal(generic('hello'), false, 'the generic format answers in JSON')
  })

  test('arguments escape only what needs it: JSON.stringify and Python ensure_ascii spellings pass, \\u0061 for a does not', () => {
    const accepts = acceptor('hermes', {mode: 'required'})
    const text = (city: string) => calls('hermes', [['get_weather', `{"city": "${city}"}`]])
    for (const city of ['Zürich', 'Z\\u00fcrich', 'a\\"b', 'tab\\there', 'x\\u0007y']) {
      assert.equal(JSON.parse(`"${city}"`).length > 0, true)
      assert.equal(accepts(text(city)), true, city)
    }
    for (const city of ['P\\u0061ris', '\\/x', 'tab\there']) assert.equal(accepts(text(city)), false, city)
  })

  test('a parameter schema the compiler refuses is refused naming the tool', () => {
    const bad = {...weather, parameters: {type: 'object', properties: {tags: {type: 'array', uniqueItems: true}}}}
    const source = toolConstraint({format: TOOL_FORMATS.hermes, tools: [bad], choice: {mode: 'required'}, parallel: true, think: 'none'})!
    assert.throws(() => compileConstraint(source), /tools\[0\]\.function's parameters: .*uniqueItems/)
  })
})

describe('text without a marker', () => {
  test('accepts exactly the strings in which the marker does not occur', () => {
    for (const marker of ['<tool_call>', 'aab', '</think>', 'xx']) {
      const native = NativeGrammar.create(lowerGrammar(piecesGrammar({pieces: [{textWithout: marker}]})).program)
      const alphabet = [...new Set([...marker, 'z', ' '])]
      // Every string over the marker's letters up to 5 long, plus the marker inside longer text.
      const strings: string[] = ['', `pre${marker}post`, `${marker.slice(0, -1)}${marker}`, marker.repeat(2).slice(1)]
      const grow = (s: string) => {
        strings.push(s)
        if (s.length < 5) for (const c of alphabet) grow(s + c)
      }
      grow('')
      for (const s of strings) {
        const m = GrammarMatcher.create(native)
        const accepted = m.acceptBytes(enc.encode(s)) === -1 && m.complete
        m.dispose()
        assert.equal(accepted, !s.includes(marker), `${JSON.stringify(marker)} in ${JSON.stringify(s)}`)
      }
    }
  })
})
