import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

test('arrays: items with bounds', () => {
  check(
    {type: 'array', items: {type: 'integer'}, minItems: 1, maxItems: 3},
    ['[1]', '[1, 2,3]', '[ 1 ]'],
    ['[]', '[1,2,3,4]', '[1,]', '["a"]'],
  )
  check({type: 'array'}, ['[]', '[1,"a",null,[{}]]'], ['[', '[,]'])
})

test('arrays: prefixItems / tuple items, then the rest', () => {
  check({type: 'array', prefixItems: [{type: 'string'}, {type: 'integer'}], items: false}, ['[]', '["a"]', '["a",1]'], ['[1]', '["a",1,2]'])
  check(
    {type: 'array', items: [{type: 'string'}], additionalItems: {type: 'boolean'}, minItems: 2},
    ['["a",true,false]'],
    ['["a"]', '["a",1]'],
    {draft: 7},
  )
})

test('arrays: uniqueItems is refused unless at most one item', () => {
  refuses({type: 'array', uniqueItems: true}, 'uniqueItems', '/uniqueItems')
  check({type: 'array', uniqueItems: true, maxItems: 1}, ['[]', '[1]'], ['[1,2]'])
  check({type: 'array', uniqueItems: false}, ['[1,1]'], [])
  refuses({type: 'array', contains: {type: 'integer'}}, 'contains', '/contains')
})
