import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

test('string lengths count decoded code points', () => {
  check(
    {type: 'string', minLength: 2, maxLength: 3},
    ['"ab"', '"a\\nb"', '"\\u00e9\\u00E9"', '"😀😀"', '"\\ud83d\\ude00x"', '"abc"'],
    ['"a"', '"abcd"', '"\\u0061"', '"a\\ud83d\\ude00bc"'],
  )
  refuses({type: 'string', minLength: 3, maxLength: 2}, 'schema')
})

test('string characters: raw controls rejected, every escape accepted', () => {
  check({type: 'string'}, ['""', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\u0000"', '"é"'], ['"\n"', '"\\x"', '"\\u12"', '"a', '"\\ud800"'])
})

test('pattern: search semantics, anchors, escapes spelled any way', () => {
  check({type: 'string', pattern: 'b+c'}, ['"abbc"', '"bc"', '"xbcx"', '"\\u0062c"'], ['"ac"', '"cb"'])
  check({type: 'string', pattern: '^[a-z]{2}\\d$'}, ['"ab1"', '"\\u0061b9"'], ['"ab12"', '"ab"', '"Ab1"', '"ab٣"'])
  check({type: 'string', pattern: '^(foo|bar)$|^x'}, ['"foo"', '"bar"', '"xyz"'], ['"foobar"', '"yx"'])
  check({type: 'string', pattern: '^[^a-c]$'}, ['"d"', '"\\""'], ['"a"', '"ab"'])
  check({type: 'string', pattern: '^\\D$'}, ['"a"'], ['"1"', '"٣"'])
})

test('pattern with length bounds folds into the one repetition', () => {
  check({type: 'string', pattern: '^[a-z]+$', maxLength: 3}, ['"a"', '"abc"'], ['"abcd"', '""'])
  check({type: 'string', pattern: '^x[0-9]*$', minLength: 3}, ['"x12"'], ['"x1"'])
  refuses({type: 'string', pattern: 'a', maxLength: 3000}, 'maxLength')
})

test('pattern constructs that are not regular or not portable are refused by name', () => {
  refuses({type: 'string', pattern: '(a)\\1'}, 'pattern', '/pattern')
  refuses({type: 'string', pattern: 'a(?=b)'}, 'pattern')
  refuses({type: 'string', pattern: '\\bword'}, 'pattern')
  refuses({type: 'string', pattern: '\\p{L}'}, 'pattern')
})

test('formats', () => {
  check(
    {type: 'string', format: 'date'},
    ['"2024-02-29"', '"2023-12-31"', '"2000-02-29"'],
    ['"2023-02-29"', '"1900-02-29"', '"2023-04-31"', '"2023-13-01"', '"2023-1-01"'],
  )
  check(
    {type: 'string', format: 'date-time'},
    ['"2023-01-02T03:04:05Z"', '"2023-01-02T03:04:05.123+05:30"'],
    ['"2023-01-02 03:04:05Z"', '"2023-01-02T24:00:00Z"', '"2023-01-02T03:04:05"'],
  )
  check({type: 'string', format: 'ipv4'}, ['"192.168.0.1"'], ['"256.1.1.1"', '"01.1.1.1"', '"1.1.1"'])
  check({type: 'string', format: 'ipv6'}, ['"::1"', '"fe80::1:2"', '"1:2:3:4:5:6:7:8"'], ['"1::2::3"', '"1:2:3:4:5:6:7:8:9"', '"12345::"'])
  check({type: 'string', format: 'uuid'}, ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123e4567e89b12d3a456426614174000"'])
  check({type: 'string', format: 'email'}, ['"a.b@example.com"'], ['"a@b"', '"@example.com"', '"a..b@example.com"'])
  check({type: 'string', format: 'uri'}, ['"https://example.com/a?b=c#d"', '"urn:isbn:123"'], ['"example.com"', '"http://a b"'])
  check({type: 'string', format: 'int32'}, ['"anything"'], [])
  refuses({type: 'string', format: 'duration'}, 'format', '/format')
})

test('string const and enum accept every escape spelling', () => {
  check({const: 'a/b'}, ['"a/b"', '"a\\/b"', '"\\u0061\\u002F\\u0062"'], ['"a\\\\b"', '"ab"'])
  check({enum: ['é', 'x']}, ['"é"', '"\\u00e9"', '"x"'], ['"e"'])
})

test('several patterns, pattern and format, not pattern, unfoldable bounds: one automaton', () => {
  check({type: 'string', allOf: [{pattern: '^a'}, {pattern: 'z$'}]}, ['"az"', '"abz"'], ['"ab"', '"bz"'])
  check({type: 'string', format: 'date', pattern: '^2024'}, ['"2024-01-31"'], ['"2023-01-31"', '"2024-02-30"'])
  check({type: 'string', not: {pattern: '^x'}}, ['"ax"', '""'], ['"xa"', '1'])
  check({not: {type: 'string', pattern: '^x'}}, ['"ax"', '1', 'null'], ['"xa"'])
  check({type: 'string', pattern: 'ab', maxLength: 4}, ['"ab"', '"xaby"'], ['"xxaby"', '"a"'])
})
