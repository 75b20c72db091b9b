import {test} from 'node:test'
import {check, refuses} from '../../helpers/schema-check.js'

test('integers: bounds are exact, no fraction or exponent, -0 is zero', () => {
  check(
    {type: 'integer', minimum: -12, maximum: 305},
    ['-12', '-0', '0', '9', '10', '99', '305', '300', '-1'],
    ['-13', '306', '1000', '1.0', '1e2', '01', '+1', '-', ''],
  )
  check({type: 'integer', exclusiveMinimum: 0}, ['1', '7', '123456789012345'], ['0', '-0', '-5', '1234567890123456'])
  check({type: 'integer', minimum: 5, exclusiveMinimum: true}, ['6'], ['5'], {draft: 4})
})

test('numbers: decimal bounds compared digit by digit, trailing zeros and exclusivity', () => {
  const s = {type: 'number', minimum: 0.5, exclusiveMaximum: 10}
  check(s, ['0.5', '0.50', '0.51', '1', '9.999', '9'], ['0.49', '0.4999', '10', '10.0', '10.01', '0', '-1', '5e0'])
  check({type: 'number', minimum: -2.5, maximum: -0.25}, ['-2.5', '-0.25', '-1', '-0.3', '-2.49'], ['-2.51', '-0.24', '0', '-0', '1'])
  check({type: 'number', exclusiveMinimum: -1, exclusiveMaximum: 1}, ['0', '-0', '0.999', '-0.5'], ['1', '-1', '1.0', '-1.000'])
  check({type: 'number'}, ['1e5', '-2.5E-3', '0.0', '12'], ['01', '.5', '1.', '1e', '-'])
})

test('numbers: multipleOf', () => {
  check({type: 'integer', multipleOf: 3}, ['0', '3', '-9', '300'], ['1', '10', '3.0'])
  check({type: 'integer', multipleOf: 5, minimum: 1, maximum: 20}, ['5', '20'], ['0', '25', '7'])
  check({type: 'number', multipleOf: 1}, ['4'], ['4.5'])
  refuses({type: 'number', multipleOf: 0.01}, 'multipleOf', '/multipleOf')
})

test('numbers: unsatisfiable bounds are refused', () => {
  refuses({type: 'integer', minimum: 5, maximum: 4}, 'schema')
  check({minimum: 5, maximum: 4}, ['"a"'], ['5', '4'])
})
