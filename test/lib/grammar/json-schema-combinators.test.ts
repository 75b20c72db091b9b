import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

test('anyOf with siblings distributes', () => {
  check(
    {type: 'object', properties: {k: {type: 'string'}}, required: ['k'], anyOf: [{required: ['a']}, {required: ['b']}]},
    ['{"k":"x","a":1}', '{"b":1,"k":"x"}'],
    ['{"k":"x"}', '{"a":1}'],
  )
})

test('oneOf: disjoint by type or by discriminator const; overlapping branches refused', () => {
  check({oneOf: [{type: 'string'}, {type: 'integer'}]}, ['"a"', '1'], ['null'])
  const disc = {
    oneOf: [
      {type: 'object', properties: {kind: {const: 'a'}, x: {type: 'integer'}}, required: ['kind']},
      {type: 'object', properties: {kind: {const: 'b'}}, required: ['kind']},
    ],
  }
  check(disc, ['{"kind":"a","x":1}', '{"kind":"b","x":"s"}'], ['{"kind":"c"}', '{"kind":"a","x":"s"}'])
  refuses({oneOf: [{type: 'integer'}, {minimum: 3}]}, 'oneOf', '/oneOf')
})

test('allOf intersects', () => {
  check({allOf: [{type: 'integer', minimum: 0}, {maximum: 10}, {type: ['integer', 'string']}]}, ['0', '10'], ['11', '-1', '"a"'])
  check({allOf: [{properties: {a: {type: 'integer'}}}, {properties: {a: {minimum: 5}}, required: ['a']}]}, ['{"a":5}'], ['{"a":4}', '{}'])
  refuses({allOf: [{type: 'string'}, {type: 'integer'}]}, 'schema')
})

test('not: types, scalar enums and required lists', () => {
  check({not: {type: 'string'}}, ['1', 'null', '{}'], ['"a"'])
  check({enum: [1, 2, 3], not: {const: 2}}, ['1', '3'], ['2'])
  check({type: 'object', not: {required: ['a']}}, ['{}', '{"b":1}'], ['{"a":1}'])
  check({not: {minimum: 3}}, ['2.5', '-1'], ['3', '4', '"a"', 'null'])
  check({not: {anyOf: [{type: 'null'}, {maxLength: 2}]}}, ['"abc"'], ['1', 'null', '"ab"'])
  refuses({not: {type: 'array', items: {type: 'string'}}}, 'not')
})

test('enum/const: JSON equality', () => {
  check({const: 1}, ['1', '1.0', '1.000'], ['2', '"1"', 'true'])
  check({type: 'integer', const: 1}, ['1'], ['1.0'])
  check({const: {a: [1, null]}}, ['{"a":[1,null]}', '{ "a" : [ 1 , null ] }'], ['{"a":[1]}'])
  check({enum: [false, 0]}, ['false', '0', '-0', '0.0'], ['true', 'null'])
  refuses({type: 'string', enum: [1, 2]}, 'schema')
})

test('boolean schemas', () => {
  check(true, ['1', '{"a":[]}'], ['', 'nul'])
  refuses(false, 'schema')
  check({type: 'array', items: false}, ['[]'], ['[1]'])
})

test('unsupported constraining keywords are refused; annotations and vendor keywords ignored', () => {
  refuses({if: {type: 'string'}, then: {minLength: 1}}, 'if', '/if')
  refuses({type: 'object', propertyNames: {maxLength: 3}}, 'propertyNames')
  refuses({$dynamicRef: '#x'}, '$dynamicRef')
  check(
    {type: 'integer', title: 't', description: 'd', examples: [1], default: 0, 'x-vendor': {minimum: 9}, deprecated: true},
    ['0'],
    ['"0"'],
  )
})

test('oneOf: a property one branch requires and the other forbids; disjoint patterns', () => {
  const s = {
    oneOf: [
      {type: 'object', properties: {src: {type: 'string'}}, required: ['src'], additionalProperties: false},
      {type: 'object', properties: {replace: {type: 'string'}}, required: ['replace'], additionalProperties: false},
    ],
  }
  check(s, ['{"src":"a"}', '{"replace":"b"}'], ['{"src":"a","replace":"b"}', '{}'])
  check(
    {
      oneOf: [
        {type: 'string', pattern: '^a'},
        {type: 'string', pattern: '^b'},
      ],
    },
    ['"ax"', '"b"'],
    ['"c"'],
  )
  check(
    {
      oneOf: [
        {type: 'string', pattern: 'a'},
        {type: 'string', pattern: 'b'},
      ],
    },
    ['"a"', '"xb"'],
    ['"ab"', '"c"'],
  )
  refuses(
    {
      oneOf: [
        {type: 'array', items: {type: 'string'}},
        {type: 'array', maxItems: 2},
      ],
    },
    'oneOf',
  )
})

test('oneOf with overlapping branches: each branch minus the others, when their complement is exact', () => {
  const s = {type: 'object', oneOf: [{required: ['login']}, {required: ['password']}]}
  check(s, ['{"login":"a"}', '{"password":"b"}'], ['{"login":"a","password":"b"}', '{}'])
  check({oneOf: [{maximum: 2}, {maximum: 5}], type: 'number'}, ['3', '5'], ['2', '1', '6'])
})

test('not enum: values outside a scalar enum', () => {
  check({type: 'string', not: {enum: ['a', 'b']}}, ['"c"', '"ab"', '""'], ['"a"', '"\\u0062"'])
  check({not: {enum: [1, 'x', null]}}, ['2', '0.5', '"y"', 'true', '[]'], ['1', '1.0', '"x"', 'null'])
})
