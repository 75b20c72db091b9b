/**
 * The kernel set as stats and bench headers describe it (src/lib/engine/cpu-level.ts): the level
 * under RUNNER_CPU_MAX, and the AMX state the engine reports (native runner_amx_state), each named;
 * RUNNER_AMX's values refused by name unless documented.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {CPU_FEATURE_NAMES, type CpuFeatures} from '../../../src/lib/engine/addon.js'
import {AMX_STATES, amxMode, describeKernels, kernelSet} from '../../../src/lib/engine/cpu-level.js'

const features = (on: string[]): CpuFeatures => Object.fromEntries(CPU_FEATURE_NAMES.map((n) => [n, on.includes(n)])) as CpuFeatures
const SPR = features(['sse4_2', 'avx2', 'fma', 'f16c', 'avx512f', 'avx512bw', 'avx512vl', 'avx512_vnni', 'amx', 'amx_int8', 'amx_bf16'])

test('every AMX state has its own description, and describeKernels names it', () => {
  const seen = new Set<string>()
  for (const state of AMX_STATES) {
    const k = kernelSet(SPR, state, {})
    assert.equal(k.amxState, state)
    assert.ok(!seen.has(k.amx), `${state}: a description of its own`)
    seen.add(k.amx)
    assert.equal(describeKernels(k), `avx512 (dots avx512-vnni, attention avx512, AMX ${k.amx})`)
  }
  assert.equal(kernelSet(SPR, 'active', {}).amx, 'active (Q8_0, Q4_0 prompt matmuls)')
  assert.equal(kernelSet(SPR, 'absent', {RUNNER_CPU_MAX: 'avx2'}).level, 'avx2')
})

test('RUNNER_AMX: unset or empty is auto; off and emulate as given; anything else refused by name', () => {
  assert.equal(amxMode({}), 'auto')
  assert.equal(amxMode({RUNNER_AMX: ''}), 'auto')
  for (const m of ['auto', 'off', 'emulate'] as const) assert.equal(amxMode({RUNNER_AMX: m}), m)
  assert.throws(
    () => amxMode({RUNNER_AMX: 'on'}),
    (e: Error & {code?: string}) => e.code === 'BAD_ENV' && /RUNNER_AMX="on" must be one of auto, off, emulate/.test(e.message),
  )
})
