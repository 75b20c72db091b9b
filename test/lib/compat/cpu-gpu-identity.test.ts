/** cpu_gpu_identity: not executed in this build (no GPU backend on main), and says so. */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {cpuGpuIdentity} from '../../../src/lib/compat/checks/cpu-gpu-identity.js'
import type {CheckEnv, RosterRow} from '../../../src/lib/compat/types.js'

const row: RosterRow = {
  id: 'stories260K',
  path: '/nonexistent/stories260K.gguf',
  rosterPath: 'stories260K.gguf',
  sha256: '',
  architecture: 'llama',
  type: 'F32',
  checks: {cpu_gpu_identity: {}},
  expectedFailures: {},
}
const env: CheckEnv = {tmpDir: '/nonexistent', signal: new AbortController().signal, threads: 1}

test('cpu_gpu_identity: not executed, no GPU backend on main; run() defensively fails', async () => {
  assert.equal(cpuGpuIdentity.name, 'cpu_gpu_identity')
  assert.deepEqual(cpuGpuIdentity.params, {})
  assert.equal(await cpuGpuIdentity.when(row, {}, env), 'no GPU backend in this build (the CUDA backend, issue #25, is not on main)')
  const out = await cpuGpuIdentity.run(row, {}, env)
  assert.equal(out.outcome, 'fail')
  assert.match(out.evidence, /^no GPU backend/)
})
