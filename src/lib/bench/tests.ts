/**
 * What `runner bench` measures: the parameter lists (one value per flag item) and the tests they
 * expand to, in llama-bench's order (tools/llama-bench/llama-bench.cpp get_cmd_params_instances):
 * for each batch size, KV type, thread count and depth, first every pp test, then every tg test,
 * then every pg pair. A zero in -p or -n means "no such test", as llama-bench reads `-p 0`.
 */
export type KvType = 'f16' | 'f32'

export interface BenchParams {
  /** -p: prompt lengths (0: no pp test). */
  readonly nPrompt: readonly number[]
  /** -n: generated lengths (0: no tg test). */
  readonly nGen: readonly number[]
  /** --pg: prompt then generation, timed together. */
  readonly pg: ReadonlyArray<readonly [number, number]>
  /** -d: tokens already in the cache before each test (not timed). */
  readonly nDepth: readonly number[]
  readonly nBatch: readonly number[]
  readonly kvType: readonly KvType[]
  readonly threads: readonly number[]
  /** -r: timed runs per test. */
  readonly repetitions: number
  /** A pp and a one-token tg run before the timed ones, as llama-bench does unless --no-warmup. */
  readonly warmup: boolean
}

export interface BenchTest {
  readonly nPrompt: number
  readonly nGen: number
  readonly nDepth: number
  readonly nBatch: number
  readonly kvType: KvType
  readonly threads: number
}

/** The tests of the cross product, in llama-bench's order. */
export function expandTests(p: BenchParams): BenchTest[] {
  const tests: BenchTest[] = []
  for (const nBatch of p.nBatch)
    for (const kvType of p.kvType)
      for (const threads of p.threads)
        for (const nDepth of p.nDepth) {
          const base = {nDepth, nBatch, kvType, threads}
          for (const nPrompt of p.nPrompt) if (nPrompt > 0) tests.push({...base, nPrompt, nGen: 0})
          for (const nGen of p.nGen) if (nGen > 0) tests.push({...base, nPrompt: 0, nGen})
          for (const [nPrompt, nGen] of p.pg) tests.push({...base, nPrompt, nGen})
        }
  return tests
}

/** llama-bench's test column: pp512, tg128, pp512+tg128, with " @ d512" at a depth. */
export function testName(t: BenchTest): string {
  const name = t.nGen === 0 ? `pp${t.nPrompt}` : t.nPrompt === 0 ? `tg${t.nGen}` : `pp${t.nPrompt}+tg${t.nGen}`
  return t.nDepth > 0 ? `${name} @ d${t.nDepth}` : name
}

/** KV positions a test needs, the context it gets (llama-bench sizes n_ctx = n_prompt + n_gen + n_depth). */
export function contextFor(t: BenchTest): number {
  return t.nDepth + t.nPrompt + t.nGen
}
