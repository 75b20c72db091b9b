import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

test('$ref to $defs/definitions, recursion through consumed brackets', () => {
  const tree = {
    $defs: {
      node: {type: 'object', properties: {v: {type: 'integer'}, kids: {type: 'array', items: {$ref: '#/$defs/node'}}}, required: ['v']},
    },
    $ref: '#/$defs/node',
  }
  check(tree, ['{"v":1}', '{"v":1,"kids":[{"v":2,"kids":[]}]}'], ['{"v":1,"kids":[{}]}'])
  check({definitions: {'a b': {type: 'null'}}, properties: {x: {$ref: '#/definitions/a%20b'}}}, ['{"x":null}'], ['{"x":1}'])
})

test('$id-relative refs and anchors', () => {
  check(
    {$id: 'https://example.com/root.json', $defs: {s: {$id: 'item.json', type: 'string'}}, items: {$ref: 'item.json'}, type: 'array'},
    ['["a"]'],
    ['[1]'],
  )
  check({$defs: {s: {$anchor: 'str', type: 'string'}}, $ref: '#str'}, ['"a"'], ['1'])
})

test('$ref siblings: applied (2019+, or undeclared draft), replaced in draft 4-7', () => {
  check({$defs: {i: {type: 'integer'}}, $ref: '#/$defs/i', maximum: 3}, ['3'], ['4'])
  check(
    {$schema: 'http://json-schema.org/draft-07/schema#', definitions: {i: {type: 'integer'}}, $ref: '#/definitions/i', maximum: 3},
    ['4'],
    ['"a"'],
  )
})

test('refusals: remote refs, left recursion, missing targets', () => {
  refuses({$ref: 'https://example.com/other.json'}, '$ref', '/$ref')
  refuses({anyOf: [{$ref: '#'}, {type: 'null'}]}, '$ref')
  refuses({$ref: '#/$defs/missing'}, '$ref')
})
