/**
 * JSON mode against real JSON, with JSON.parse as the outside anchor: every string here is judged by
 * JSON.parse too, and the value grammar must agree with it (modulo the whitespace bound, tested on
 * its own). The documents are maskbench's test instances (../shared/structured/maskbench/*.json,
 * `tests[].data`), serialized compactly and pretty-printed, every one of them judged by the native
 * matcher (what generation runs); the small cases are also judged by the IR's Earley recognizer.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {describe, test} from 'node:test'

import {GrammarMatcher, NativeGrammar} from '../../../src/lib/engine/index.js'
import {jsonModeGrammar, MAX_JSON_WHITESPACE} from '../../../src/lib/grammar/json-mode.js'
import {lowerGrammar} from '../../../src/lib/grammar/lower.js'
import {prefixState, recognizes} from '../../helpers/ir-recognize.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const value = jsonModeGrammar('value')
const object = jsonModeGrammar('object')
const compact = jsonModeGrammar('value', {whitespace: 'compact'})

function jsonParses(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** The longest run of whitespace between tokens (outside strings) in a JSON text. */
function longestWhitespaceRun(text: string): number {
  let longest = 0
  let run = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (' \t\n\r'.includes(c)) {
      longest = Math.max(longest, ++run)
      continue
    } else if (c === '"') inString = true
    run = 0
  }
  return longest
}

const VALID = [
  '0',
  '-0',
  '12',
  '-12.5e+3',
  '1E9',
  '0.0001',
  '1e-0',
  'true',
  'false',
  'null',
  '""',
  '"\\" \\\\ \\/ \\b \\f \\n \\r \\t"',
  '"\\u0041\\uD83D\\uDE00\\uabcd"',
  '"\\uD800"', // a lone surrogate escape: RFC 8259's grammar and JSON.parse allow it
  '"héllo 🌍 \u007f \u2028"',
  '[]',
  '[ ]',
  '[1,[2,[3,[4,[]]]]]',
  '{}',
  '{ }',
  '{"a":1}',
  '{"a" : [true, {"b": null}] , "c":"d"}',
  '[\n  1,\n\t2\r\n]',
  '{"":""}',
  '[1]\n', // one trailing newline
]

const INVALID = [
  '',
  ' 1', // leading whitespace: not allowed at the start (JSON.parse allows it; our policy refuses it)
  '01',
  '-01',
  '.5',
  '1.',
  '1.e5',
  '+1',
  '-',
  '1e',
  '1e+',
  '0x10',
  'NaN',
  'Infinity',
  '-Infinity',
  'True',
  'nul',
  'undefined',
  "'a'",
  '"\\x41"',
  '"\\u12"',
  '"\\u12G4"',
  '"\\U0001F600"',
  '"\\a"',
  '"a\nb"',
  '"a\tb"',
  '"\u0000"',
  '"\u001f"',
  '"abc',
  '[1,]',
  '[,1]',
  '[1 2]',
  '{"a":1,}',
  '{"a"}',
  '{a:1}',
  "{'a':1}",
  '{"a" 1}',
  '{1:2}',
  '[1]]',
  '{"a":1}}',
  '1 2',
  '[] []',
  '// comment\n1',
]

describe('JSON mode: the value grammar agrees with JSON.parse', () => {
  test('valid JSON is accepted (and JSON.parse accepts it)', () => {
    for (const s of VALID) {
      assert.ok(jsonParses(s), `JSON.parse must accept ${JSON.stringify(s)}`)
      assert.ok(recognizes(value, s), `should accept ${JSON.stringify(s)}`)
    }
  })

  test('non-JSON is rejected (and JSON.parse rejects it, except leading whitespace: our policy)', () => {
    for (const s of INVALID) {
      if (s !== ' 1') assert.ok(!jsonParses(s), `JSON.parse must reject ${JSON.stringify(s)}`)
      assert.ok(!recognizes(value, s), `should reject ${JSON.stringify(s)}`)
    }
  })

  test('broken documents are not even viable prefixes at the point they break', () => {
    assert.equal(prefixState(value, '{"a":01').viable, false)
    assert.equal(prefixState(value, '[1,]').viable, false)
    assert.equal(prefixState(value, '{"a":1').viable, true)
    assert.equal(prefixState(value, '{"a":1').complete, false)
  })
})

describe('JSON mode: whitespace policy', () => {
  const ws = (n: number): string => ' '.repeat(n)
  test(`flexible: up to ${MAX_JSON_WHITESPACE} whitespace characters between tokens, no more`, () => {
    assert.ok(recognizes(value, `[${ws(MAX_JSON_WHITESPACE)}1]`))
    assert.ok(recognizes(value, `{"a"${ws(MAX_JSON_WHITESPACE)}:\n${ws(MAX_JSON_WHITESPACE - 1)}1}`))
    assert.ok(!recognizes(value, `[${ws(MAX_JSON_WHITESPACE + 1)}1]`))
    assert.ok(jsonParses(`[${ws(MAX_JSON_WHITESPACE + 1)}1]`), 'only the bound differs from JSON.parse')
  })
  test('flexible: none at the start, up to the bound at the end', () => {
    assert.ok(!recognizes(value, '\n{}'))
    assert.ok(recognizes(value, `{}${'\n'.repeat(MAX_JSON_WHITESPACE)}`))
    assert.ok(!recognizes(value, `{}${'\n'.repeat(MAX_JSON_WHITESPACE + 1)}`))
  })
  test('compact: no whitespace anywhere outside strings', () => {
    assert.ok(recognizes(compact, '{"a b":[1,2,{"c":null}]}'))
    for (const s of ['{ "a":1}', '[1, 2]', '{"a" :1}', '[1]\n', '[\n]']) assert.ok(!recognizes(compact, s), s)
  })
})

describe('JSON mode: the object grammar (response_format json_object)', () => {
  test('accepts objects only', () => {
    for (const s of ['{}', '{"a": [1, 2]}', '{\n  "k": {"n": -1.5e3}\n}\n']) assert.ok(recognizes(object, s), s)
    for (const s of ['[]', '1', '"s"', 'null', 'true', '{"a":}', '{}{}']) assert.ok(!recognizes(object, s), s)
  })
})

describe('JSON mode: maskbench documents', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('every document is accepted by the value grammar, compact and pretty-printed', () => {
    const dir = sharedPath('structured', 'maskbench')
    const native = NativeGrammar.create(lowerGrammar(value).program)
    const enc = new TextEncoder()
    const accepts = (text: string): boolean => {
      const m = GrammarMatcher.create(native)
      try {
        return m.acceptBytes(enc.encode(text)) === -1 && m.complete
      } finally {
        m.dispose()
      }
    }
    let docs = 0
    let tooDeep = 0
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const bench = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as {tests?: {data: unknown}[]}
      const tests = bench.tests ?? []
      for (const {data} of tests) {
        for (const text of [JSON.stringify(data), JSON.stringify(data, null, 2)]) {
          // Pretty-printed deeper than the bound allows (newline + 2 spaces a level): must be refused.
          const withinBound = longestWhitespaceRun(text) <= MAX_JSON_WHITESPACE
          assert.equal(accepts(text), withinBound, `${file}: ${text.slice(0, 200)}`)
          if (withinBound) docs++
          else tooDeep++
        }
      }
    }
    assert.ok(docs > 1000, `only ${docs} documents`)
    console.log(
      `${docs} maskbench documents accepted, ${tooDeep} pretty-printed ones with more than ${MAX_JSON_WHITESPACE} whitespace ` +
        'characters in a row refused',
    )
  })
})
