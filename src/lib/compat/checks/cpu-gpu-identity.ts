/**
 * `cpu_gpu_identity`: kept for the GPU backend, which is not on main (it lives on branch
 * cuda-backend, issue #25). Once it lands, this check compares the GPU's logits and greedy tokens
 * with the CPU engine's on the same model; until then it is never executed, and says why.
 */
import {type CheckClass, fail} from '../types.js'

export const NO_GPU_BACKEND = 'no GPU backend in this build (the CUDA backend, issue #25, is not on main)'

export const cpuGpuIdentity: CheckClass = {
  name: 'cpu_gpu_identity',
  summary:
    "the GPU backend's logits and greedy tokens against the CPU engine's on the same model (kept for the CUDA backend, issue #25; not executed without it)",
  params: {},
  async when() {
    return NO_GPU_BACKEND
  },
  async run() {
    // Defensive: the orchestrator never runs a check whose `when` gives a reason.
    return fail(`no GPU backend: ${NO_GPU_BACKEND}`)
  },
}
