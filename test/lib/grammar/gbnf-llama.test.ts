/**
 * Our GBNF parser against llama.cpp's own grammars and grammar tests, read at test time from the
 * llama.cpp release bundle (./gbnf-llama-source.ts): the outside anchor is llama.cpp's verdicts.
 *
 * - every grammars/*.gbnf parses;
 * - tests/test-grammar-integration.cpp: every `test_grammar(desc, grammar, passing, failing)` call is
 *   extracted and judged with the IR recognizer (cases that use token matches, `token(10)`, are
 *   checked to be refused by name instead); the grammars of its test_failure_* functions are refused;
 * - tests/test-grammar-parser.cpp: `verify_failure` grammars are refused, `verify_parsing` ones parse;
 * - tests/test-json-schema-to-grammar.cpp: the grammars llama.cpp's schema converter is expected to
 *   produce (SUCCESS cases) parse — a large corpus of machine-written GBNF.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'

import {GrammarSyntaxError, parseGbnf} from '../../../src/lib/grammar/gbnf.js'
import {recognizes} from '../../helpers/ir-recognize.js'
import {callsOf, functionBody, llamaSource, stringListOf, stringOf, tokenizeCpp} from './gbnf-llama-source.js'

const source = llamaSource()
const skip = typeof source === 'string' ? source : false
const src = typeof source === 'string' ? undefined : source

function refused(grammar: string, start?: string): GrammarSyntaxError {
  try {
    parseGbnf(grammar, start === undefined ? {} : {start})
  } catch (e) {
    if (e instanceof GrammarSyntaxError) return e
    throw e
  }
  assert.fail(`accepted a grammar llama.cpp refuses:\n${grammar}`)
}

describe("llama.cpp's grammars/ folder", {skip}, () => {
  test('every .gbnf file parses', () => {
    const files = src!.list('grammars').filter((f) => f.endsWith('.gbnf'))
    assert.ok(files.length >= 8, `only ${files.length} grammars found`)
    for (const file of files) assert.doesNotThrow(() => parseGbnf(src!.read(file)), file)
    console.log(`parsed ${files.length} grammars from llama.cpp ${src!.commit.slice(0, 10)}: ${files.join(', ')}`)
  })
})

describe("llama.cpp's tests/test-grammar-integration.cpp", {skip}, () => {
  const text = src ? src.read('tests/test-grammar-integration.cpp') : ''
  // (The definition `static void test_grammar(const std::string & ...)` is a "call" too: dropped.)
  const calls = src ? callsOf(tokenizeCpp(text), 'test_grammar').filter((args) => args[1] && stringOf(args[1]) !== undefined) : []

  test('test_grammar cases: passing strings are recognized, failing ones are not', () => {
    let cases = 0
    let strings = 0
    let tokenCases = 0
    assert.ok(calls.length >= 12, `only ${calls.length} test_grammar calls extracted`)
    for (const args of calls) {
      assert.equal(args.length, 4, 'test_grammar(desc, grammar, passing, failing)')
      const desc = stringOf(args[0]!)!
      const grammar = stringOf(args[1]!)!
      const passing = stringListOf(args[2]!)
      const failing = stringListOf(args[3]!)
      if ([...passing, ...failing].includes(undefined)) {
        // Strings built with token(id): the grammar matches token ids, which we refuse by name.
        assert.match(refused(grammar).message, /token matches/, desc)
        tokenCases++
        continue
      }
      const g = parseGbnf(grammar)
      for (const s of passing) assert.ok(recognizes(g, s!), `${desc}: should accept ${JSON.stringify(s)}`)
      for (const s of failing) assert.ok(!recognizes(g, s!), `${desc}: should reject ${JSON.stringify(s)}`)
      cases++
      strings += passing.length + failing.length
    }
    assert.ok(cases >= 12)
    console.log(`${cases} test_grammar cases, ${strings} strings agree with llama.cpp; ${tokenCases} token-match cases refused`)
  })

  test('the grammars of test_failure_missing_root, _missing_reference and _left_recursion are refused', () => {
    const expect: Record<string, RegExp> = {
      test_failure_missing_root: /start rule 'root'/,
      test_failure_missing_reference: /undefined rule 'numero'/,
      test_failure_left_recursion: /left recursion: rule '[a-z]+'/,
    }
    let n = 0
    for (const [fn, message] of Object.entries(expect)) {
      const grammars = tokenizeCpp(functionBody(text, fn)).filter((t) => t.kind === 'string' && t.value.includes('::='))
      assert.ok(grammars.length > 0, fn)
      for (const g of grammars) {
        assert.match(refused(g.value).message, message, `${fn}:\n${g.value}`)
        n++
      }
    }
    assert.ok(n >= 6)
  })

  // Transcribed from test_failure_missing_root_symbol and test_custom_root_symbol_check (they pass the
  // start rule to llama_grammar_init_impl, which the extractor does not follow).
  test('a start rule other than root, and a missing one', () => {
    assert.match(refused('root ::= "foobar"', 'nonexistent').message, /start rule 'nonexistent'/)
    assert.match(refused('foobar ::= "foobar"').message, /start rule 'root'/)
    assert.ok(recognizes(parseGbnf('foobar ::= "foobar"', {start: 'foobar'}), 'foobar'))
  })
})

describe("llama.cpp's tests/test-grammar-parser.cpp", {skip}, () => {
  const tokens = src ? tokenizeCpp(src.read('tests/test-grammar-parser.cpp')) : []

  test('every verify_failure grammar is refused', () => {
    const grammars = grammarsOf(callsOf(tokens, 'verify_failure'))
    assert.ok(grammars.length >= 6)
    for (const g of grammars) refused(g)
  })

  test('every verify_parsing grammar parses', () => {
    const grammars = grammarsOf(callsOf(tokens, 'verify_parsing'))
    assert.ok(grammars.length >= 10)
    for (const g of grammars) {
      if (/<\[\d+\]>/.test(g)) assert.match(refused(g).message, /token matches/)
      else assert.doesNotThrow(() => parseGbnf(g), g)
    }
  })
})

describe("llama.cpp's tests/test-json-schema-to-grammar.cpp", {skip}, () => {
  test("the grammars llama.cpp's schema converter produces (SUCCESS cases) parse", () => {
    const calls = callsOf(tokenizeCpp(src!.read('tests/test-json-schema-to-grammar.cpp')), 'test')
    let n = 0
    for (const [arg] of calls) {
      if (arg?.[0]?.value !== '{') continue
      const fields = stringListOfLoose(arg)
      if (fields[0] !== 'SUCCESS') continue
      const grammar = fields[3]
      if (grammar === undefined) continue
      assert.doesNotThrow(() => parseGbnf(grammar), `${fields[1]}:\n${grammar}`)
      n++
    }
    assert.ok(n >= 50, `only ${n} schema grammars extracted`)
    console.log(`${n} grammars from llama.cpp's JSON-schema converter tests parse`)
  })
})

/** The first arguments that are string literals (the definition's `const char *` parameter is not). */
function grammarsOf(calls: ReturnType<typeof callsOf>): string[] {
  return calls.map(([arg]) => (arg ? stringOf(arg) : undefined)).filter((g) => g !== undefined)
}

/** `{SUCCESS, "name", schema, grammar}`: the status word, then strings (undefined where not one). */
function stringListOfLoose(arg: Parameters<typeof stringListOf>[0]): (string | undefined)[] {
  const inner = arg.slice(1, -1)
  const status = inner[0]?.kind === 'word' ? inner[0].value : undefined
  return [status, ...stringListOf([arg[0]!, ...inner.slice(2), arg[arg.length - 1]!])]
}
