/**
 * GBNF syntax features and refusals, and known strings for llama.cpp's own grammars (read from its
 * release bundle, ./gbnf-llama-source.ts). The language is llama.cpp's grammars/README.md; the
 * refusals mirror src/llama-grammar.cpp's errors.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {GrammarSyntaxError, parseGbnf} from '../../../src/lib/grammar/gbnf.js'
import {recognizes} from '../../helpers/ir-recognize.js'
import {llamaSource} from './gbnf-llama-source.js'

const accepts = (grammar: string, yes: string[], no: string[]): void => {
  const g = parseGbnf(grammar)
  for (const s of yes) assert.ok(recognizes(g, s), `${grammar}: should accept ${JSON.stringify(s)}`)
  for (const s of no) assert.ok(!recognizes(g, s), `${grammar}: should reject ${JSON.stringify(s)}`)
}

function refusal(grammar: string): GrammarSyntaxError {
  try {
    parseGbnf(grammar)
  } catch (e) {
    assert.ok(e instanceof GrammarSyntaxError, String(e))
    return e
  }
  assert.fail(`accepted ${JSON.stringify(grammar)}`)
}

describe('GBNF syntax', () => {
  test('literals and their escapes', () => {
    accepts(String.raw`root ::= "a\n\t\r\\\"\[\]\-" "\x41\u00e9\U0001F600"`, ['a\n\t\r\\"[]-Aé😀'], ['a'])
    accepts('root ::= "héllo 🌍"', ['héllo 🌍'], ['hello'])
  })
  test('character classes: ranges, negation, escapes, a literal - at the end', () => {
    accepts('root ::= [a-cx]+', ['abcx', 'x'], ['d', ''])
    accepts(String.raw`root ::= [^\n"]`, ['a', 'é'], ['\n', '"'])
    accepts('root ::= [a-]', ['a', '-'], ['b'])
    accepts(String.raw`root ::= [\]\[\x30-\x32]`, [']', '[', '1'], ['3'])
    accepts('root ::= [ぁ-ゟ]', ['ひ'], ['a'])
  })
  test('any character, grouping, alternation, and the repetition operators', () => {
    accepts('root ::= . "b"', ['ab', '😀b'], ['b', 'abb'])
    accepts('root ::= ("a" | "b" "c")* "d"?', ['', 'abc', 'bcad', 'd'], ['b', 'dd'])
    accepts('root ::= "x"{2} "y"{1,} "z"{0,2} "w"{1,3}', ['xxyw', 'xxyyyzzwww'], ['xyw', 'xxywwww', 'xxyzzzw'])
    accepts('root ::= "ab"+', ['ab', 'abab'], ['aba'])
    accepts('root ::= "a"?*', ['', 'aaa'], ['b'])
  })
  test('repetition stays one operator with a counter (not expanded)', () => {
    const g = parseGbnf('root ::= [0-9]{0,500}')
    assert.deepEqual(g.rules.get('root'), {kind: 'repeat', item: {kind: 'chars', set: [[0x30, 0x39]]}, min: 0, max: 500})
    // llama.cpp turns a maximum above 2000 into "unbounded"; we keep what was written.
    const big = parseGbnf('root ::= "a"{0,5000}').rules.get('root')
    assert.equal(big?.kind === 'repeat' && big.max, 5000)
  })
  test('comments, newlines inside parentheses and after |, CRLF, rule names with digits and dashes', () => {
    const grammar = ['# a comment', 'root ::= ( # inside', '  x-1', '  | "b" ) | # after |', '  "c" |', '  "d"', 'x-1 ::= "a"', ''].join(
      '\r\n',
    )
    accepts(grammar, ['a', 'b', 'c', 'd'], ['e'])
  })
  test('a start rule other than root', () => {
    assert.ok(recognizes(parseGbnf('greeting ::= "hi"', {start: 'greeting'}), 'hi'))
  })
  test('nullable repetition of a nullable item is not left recursion (llama.cpp "segfault" case)', () => {
    accepts('root ::= ( [x]* )*', ['', 'xx'], ['y'])
  })
})

describe('GBNF refusals: what was expected, and where', () => {
  const cases: [grammar: string, message: RegExp, line: number, column: number][] = [
    ['root ::= "a"\nroot "b"', /expecting ::=/, 2, 6],
    ['root ::= "a" )', /expecting newline or end/, 1, 14],
    ['root ::= ("a"', /expecting '\)'/, 1, 14],
    ['root ::= "a', /unterminated string literal/, 1, 12],
    ['root ::= [a-', /unexpected end of input/, 1, 13],
    ['root ::= "\\q"', /unknown escape '\\q'/, 1, 11],
    ['root ::= "\\x4"', /expecting 2 hex chars/, 1, 11],
    ['root ::= "\\uD800"', /surrogate/, 1, 11],
    ['root ::= []', /empty character class/, 1, 10],
    ['root ::= [z-a]', /out of order/, 1, 11],
    ['root ::= * "a"', /expecting preceding item/, 1, 10],
    ['root ::= "" *', /expecting preceding item/, 1, 13],
    ['root ::= "a"{,3}', /expecting an int/, 1, 14],
    ['root ::= "a"{2 3}', /expecting ','/, 1, 16],
    ['root ::= "a"{2,3', /expecting '\}'/, 1, 17],
    ['root ::= "a"{3,2}', /maximum is below the minimum/, 1, 13],
    ['root ::= "a"{2001}', /exceeds the limit of 2000/, 1, 13],
    ['root ::= ("a"{0,100}){0,100}', /over the limit of 2000/, 1, 22],
    ['root ::= <[1000]>', /token matches .* not supported/, 1, 10],
    ['root ::= !<[1000]>', /token matches/, 1, 10],
    ['root ::= <think> "x"', /token matches/, 1, 10],
    ['root ::= ::= "a"', /expecting newline or end/, 1, 10],
    ['::= "a"', /expecting a rule name/, 1, 1],
    ['root ::= item\nitem ::= "a" itme', /undefined rule 'itme'/, 2, 14],
    ['rot ::= "a"', /start rule 'root'/, 1, 1],
    ['root ::= "a"\nroot ::= "b"', /rule 'root' is defined twice \(first at line 1\)/, 2, 1],
    ['root ::= a\na ::= b "x" | "y"\nb ::= e a\ne ::= [x]* | "q"?', /left recursion: rule 'a' .*\(a → b → a\)/, 2, 1],
    ['root ::= x "a"\nx ::= ("" | "b")? root', /left recursion: rule 'root'/, 1, 1],
  ]
  for (const [grammar, message, line, column] of cases) {
    test(JSON.stringify(grammar), () => {
      const e = refusal(grammar)
      assert.match(e.detail, message)
      assert.deepEqual([e.line, e.column], [line, column], e.message)
      assert.match(e.message, new RegExp(`at line ${line}, column ${column}$`))
    })
  }
})

const source = llamaSource()
const grammarFile = (name: string): string => (typeof source === 'string' ? '' : source.read(`grammars/${name}`))

describe("known strings for llama.cpp's grammars", {skip: typeof source === 'string' ? source : false}, () => {
  test('json.gbnf: real JSON objects in, broken ones out', () => {
    accepts(
      grammarFile('json.gbnf'),
      [
        '{}',
        '{"a": 1}',
        '{"name": "Ada", "tags": ["x", "y"], "n": -1.5e3, "ok": true, "nil": null}',
        '{\n  "nested": {"deep": [1, [2, {}]]}\n}',
      ],
      ['', '{', '{"a": }', '{"a": 1,}', "{'a': 1}", '[1, 2]', '{"a": 01}', '{"a": "\\x41"}'],
    )
  })
  test('arithmetic.gbnf', () => {
    accepts(grammarFile('arithmetic.gbnf'), ['1+2=3\n', '(3*4)-5/6=x\n2=2\n', 'a = b\n'], ['1+2\n', '1+=3\n', '(1=2\n', ''])
  })
  test('list.gbnf', () => {
    accepts(grammarFile('list.gbnf'), ['- apples\n', '- a\n- b\n'], ['apples\n', '- a', '-a\n'])
  })
  test('chess.gbnf', () => {
    accepts(
      grammarFile('chess.gbnf'),
      ['1. e4 e5\n2. Nf3 Nc6\n', '1. d4 d5\n2. c4 dxc4\n3. O-O O-O-O\n'],
      ['1. e4 e5\n', '1. e9 e5\n2. Nf3 Nc6\n'],
    )
  })
})
