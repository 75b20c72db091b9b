import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

const two = {type: 'object', properties: {a: {type: 'integer'}, b: {type: 'string'}}, required: ['a']}

test('objects: properties in any order (few of them), required, additional allowed by default', () => {
  check(
    two,
    ['{"a":1}', '{"a":1,"b":"x"}', '{"b":"x","a":1}', '{ "a" : 1 , "c" : [null] }', '{"c":{},"a":1}', '{"\\u0061":1}'],
    ['{}', '{"b":"x"}', '{"a":"1"}', '{"a":1,"a":2}', '{"a":1,"\\u0061":2}', '{"a":1,}'],
  )
})

test('objects: additionalProperties false or a schema; additional keys never spell a known one', () => {
  check({...two, additionalProperties: false}, ['{"a":1,"b":"x"}'], ['{"a":1,"c":1}'])
  check(
    {...two, additionalProperties: {type: 'boolean'}},
    ['{"a":1,"zz":true}', '{"a":1,"ab":true}'],
    ['{"a":1,"zz":1}', '{"a":1,"b":true}', '{"a":1,"\\u0062":true}'],
  )
})

test('objects: definition order beyond the any-order limit', () => {
  const props = Object.fromEntries('abcdefgh'.split('').map((k) => [k, {type: 'integer'}]))
  check({type: 'object', properties: props}, ['{"a":1,"c":3,"h":8}', '{}'], ['{"c":3,"a":1}', '{"a":1,"a":1}'])
})

test('objects: minProperties/maxProperties', () => {
  check(
    {type: 'object', properties: {a: {}, b: {}}, minProperties: 1, maxProperties: 2},
    ['{"a":1}', '{"b":1,"a":2}', '{"a":1,"x":2}'],
    ['{}', '{"a":1,"b":2,"c":3}'],
  )
  refuses({type: 'object', minProperties: 3, maxProperties: 2}, 'schema')
})

test('objects: patternProperties with additionalProperties false', () => {
  check(
    {type: 'object', properties: {id: {type: 'integer'}}, patternProperties: {'^x-': {type: 'string'}}, additionalProperties: false},
    ['{"id":1,"x-a":"s"}', '{"x-b":"t"}'],
    ['{"y":"s"}', '{"x-a":1}'],
  )
  const pp = {type: 'object', properties: {id: {type: 'integer'}}, patternProperties: {'^x_': {type: 'string'}, '^[0-9]+$': {type: 'null'}}}
  check(
    pp,
    ['{"id":1,"x_b":"s","12":null,"y":1}', '{"x_\\u0062":"s"}'],
    ['{"x_b":1}', '{"id":"s"}', '{"12":1}', '{"1\\n":null}', '{"1\\n":3}'],
  )
  // "1\\n" matches ^[0-9]+$ in Python ($ before a final newline), not in ECMAScript: excluded either way
  refuses({type: 'object', patternProperties: {'^x': {type: 'string'}, y$: {type: 'null'}}}, 'patternProperties')
})

test('objects: a required property whose schema is false is refused', () => {
  refuses({type: 'object', properties: {a: false}, required: ['a']}, 'schema')
  check({type: 'object', properties: {a: false}}, ['{}', '{"b":1}'], ['{"a":1}'])
})

test('objects: dependencies / dependentRequired / dependentSchemas', () => {
  const s = {type: 'object', properties: {a: {}, b: {}, c: {}}, dependentRequired: {a: ['b']}}
  check(s, ['{}', '{"b":1}', '{"a":1,"b":2}', '{"b":2,"a":1}'], ['{"a":1}', '{"a":1,"c":2}'])
  check(
    {properties: {a: {}, n: {}}, dependencies: {a: {properties: {n: {type: 'integer'}}, required: ['n']}}},
    ['{"a":1,"n":2}', '{"n":"x"}', '"s"'],
    ['{"a":1}', '{"a":1,"n":"x"}'],
    {draft: 7},
  )
})

test('objects: additional members count once toward minProperties (they might repeat a key)', () => {
  check({type: 'object', minProperties: 1}, ['{"x":1}', '{"x":1,"y":2}'], ['{}'])
  check({type: 'object', properties: {a: {}}, minProperties: 2}, ['{"a":1,"x":2}', '{"a":1,"x":2,"y":3}'], ['{"a":1}', '{"x":1}'])
  // policy: two additional members may be one key twice, so they do not prove two properties
  refuses({type: 'object', minProperties: 2}, 'schema')
})
