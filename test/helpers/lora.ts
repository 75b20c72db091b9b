// Random LoRA adapters for the differential tests: every weight an adapter may target (or those
// given), a seeded pair each, written in llama.cpp's format by our writer. b is not zero (PEFT
// starts it at zero, which would test nothing) and the deltas are a sizeable fraction of W x.
import type {TensorRole} from '../../src/lib/arch/index.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {LORA_ROLES, writeLoraAdapter, type LoraPairData} from '../../src/lib/lora/index.js'
import {checkModel} from '../../src/lib/model-check/index.js'
import {deriveSeed, SeededRandom} from '../../src/lib/util/random.js'

export const ADAPTABLE_ROLES: readonly TensorRole[] = [...LORA_ROLES]

export interface AdapterSpec {
  readonly seed: bigint
  readonly rank: number
  readonly alpha: number
  readonly roles?: readonly TensorRole[]
  /** Spread of a's and b's values (uniform in ±spread/sqrt(fan-in)). */
  readonly spread?: number
}

export async function makeLoraAdapter(modelPath: string, outPath: string, spec: AdapterSpec): Promise<LoraPairData[]> {
  const {plan} = checkModel(readGgufModel(modelPath))
  const roles = new Set(spec.roles ?? ADAPTABLE_ROLES)
  const spread = spec.spread ?? 1
  const pairs: LoraPairData[] = []
  for (const t of plan.tensors) {
    if (!roles.has(t.role)) continue
    const [nIn, nOut] = [t.shape[0]!, t.shape[1]!]
    const rng = new SeededRandom(deriveSeed(spec.seed, t.name))
    const fill = (n: number, fan: number) => Float32Array.from({length: n}, () => ((rng.uniform() * 2 - 1) * spread) / Math.sqrt(fan))
    pairs.push({target: t.name, nIn, nOut, rank: spec.rank, a: fill(spec.rank * nIn, nIn), b: fill(nOut * spec.rank, spec.rank)})
  }
  await writeLoraAdapter(outPath, {architecture: plan.config.architecture, alpha: spec.alpha, pairs, name: 'test adapter'})
  return pairs
}
