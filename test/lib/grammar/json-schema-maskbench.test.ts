/**
 * A fixed sample of MaskBench (every 60th file by name, of the 3,766 in shared/) through the JSON
 * Schema compiler and the IR recognizer (maskbench.test.ts takes every 20th through the native matcher), both serializations of each instance (see
 * scripts/maskbench-ir.ts). Asserts no invalid instance is ever accepted and a passing-share floor
 * measured on this sample. Skipped when the shared data is absent.
 */
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {test} from 'node:test'
import {runMaskbench} from '../../../scripts/maskbench-ir.js'

const DIR = '../shared/structured/maskbench'
/** Measured on this sample (63 schemas: 58 passing, 92.1 %, on 2026-12-02); raise it when the compiler improves. */
const PASS_FLOOR = 0.9

test(
  'MaskBench sample: zero invalidation errors, passing share above the floor',
  {skip: existsSync(DIR) ? false : `no MaskBench data at ${DIR}`},
  () => {
    const r = runMaskbench(DIR, 60, 3000)
    const refused = [...r.refused.values()].reduce((a, b) => a + b, 0)
    console.log(
      `maskbench sample: ${r.schemas} schemas, ${r.compiled} compiled, ${refused} refused, ${r.passing} passing, ${r.validationErrors} validation errors, ${r.invalidationErrors} invalidation errors`,
    )
    assert.equal(r.crashed, 0, r.details.filter((d) => d.startsWith('CRASH')).join('\n'))
    assert.equal(r.invalidationErrors, 0, r.details.filter((d) => d.startsWith('ACCEPTED')).join('\n'))
    assert.ok(r.passing / r.schemas >= PASS_FLOOR, `passing ${r.passing}/${r.schemas}`)
  },
)
