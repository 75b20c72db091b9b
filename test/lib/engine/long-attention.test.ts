/**
 * The determinism contract on long prompts, where the tiled attention walks many key blocks
 * (ops/attn_tile.h): 2,048 tokens give bitwise the same logits in one batch, chunked three ways and
 * on 1 or 2 threads, and the same bytes at every kernel level (RUNNER_CPU_MAX, a process each). The
 * models: 8 query heads sharing one KV head of 64 values (a tile of a whole GQA group), and gemma2
 * with soft-caps, a 100-token sliding window (windows that start inside a block) and heads of 20
 * values (the AVX2 value sum's scalar tail past 16).
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel, type TestModelSpec} from '../../../scripts/make-test-model.js'
import {cpuFeatures, CPU_LEVELS, effectiveCpuLevel} from '../../../src/lib/engine/index.js'
import {Model} from '../../../src/lib/engine/model.js'
import {bits} from '../../helpers/engine.js'
import {logitsDigest, promptIds} from '../../helpers/logits-digest.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const N_TOKENS = 2048
const N_CTX = 2112

const MODELS: ReadonlyArray<{name: string; kvType: 'f16' | 'f32'; spec: Omit<TestModelSpec, 'tokenizerFrom'>}> = [
  {
    name: 'llama, 8 heads on 1 KV head of 64',
    kvType: 'f16',
    spec: {arch: 'llama', nEmbd: 128, nLayer: 2, nHead: 8, nHeadKv: 1, headDim: 64, nFf: 256, nCtx: 4096, type: 'q8_0', seed: 71n},
  },
  {
    name: 'gemma2, soft-caps, window 100, heads of 20',
    kvType: 'f32',
    spec: {
      arch: 'gemma2',
      nEmbd: 80,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 192,
      nCtx: 4096,
      type: 'f32',
      seed: 72n,
      slidingWindow: 100,
      attnSoftcap: 5,
      finalSoftcap: 10,
    },
  },
]

describe('long prompts through the tiled attention', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-long-attn-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  for (const m of MODELS) {
    describe(m.name, () => {
      let path: string
      let model: Model
      let prompt: number[]
      before(async () => {
        path = join(dir, `${m.spec.arch}-${m.spec.seed}.gguf`)
        await makeTestModel(path, {...m.spec, tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
        model = await Model.load(path)
        prompt = promptIds(model.config.nVocab, N_TOKENS, 9n)
      })
      after(() => model?.dispose())

      async function logits(threads: number, nBatch: number, chunks: number[]): Promise<Buffer> {
        const ctx = await model.createContext({nCtx: N_CTX, nBatch, threads, kvType: m.kvType})
        const nVocab = model.config.nVocab
        const out = new Float32Array(N_TOKENS * nVocab)
        let pos = 0
        for (const n of chunks) {
          out.set((await ctx.decode(prompt.slice(pos, pos + n), {pos, logits: 'all'}))!, pos * nVocab)
          pos += n
        }
        assert.equal(pos, N_TOKENS)
        ctx.dispose()
        // Equal NaNs would pass the comparison: every logit must be a number.
        assert.ok(
          out.every((x) => Number.isFinite(x)),
          'a logit is not finite',
        )
        return bits(out)
      }

      test('2,048 tokens: bitwise equal in one batch, chunked three ways, on 1 and 2 threads', async () => {
        const base = await logits(1, N_TOKENS, [N_TOKENS])
        const variants: Array<[string, number, number, number[]]> = [
          ['2 threads, one batch', 2, N_TOKENS, [N_TOKENS]],
          ['1 thread, batches of 33', 1, 33, [N_TOKENS]],
          ['2 threads, chunks 700 + 1000 + 348', 2, 1024, [700, 1000, 348]],
          ['2 threads, chunks 1 + 30 + 2017 in batches of 512', 2, 512, [1, 30, 2017]],
        ]
        for (const [name, threads, nBatch, chunks] of variants)
          assert.ok(base.equals(await logits(threads, nBatch, chunks)), `${name} differs from 1 thread, one batch`)
      })

      test('the same logits at every kernel level (scalar, avx2, the best here)', async (t) => {
        // 300 tokens (10 key blocks): the scalar level's software fmaf is slow.
        const best = await logitsDigest(path, 320, m.kvType, 300, 9n)
        // The levels below this machine's best (a cap at or above it compares the best with itself).
        const here = effectiveCpuLevel(cpuFeatures(), {})
        const below = CPU_LEVELS.slice(0, CPU_LEVELS.indexOf(here))
        if (below.length === 0) return t.skip(`this CPU runs only the scalar kernels`)
        for (const level of below) {
          const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/helpers/logits-digest.ts', path, '320', m.kvType, '300', '9'], {
            encoding: 'utf8',
            env: {...process.env, RUNNER_CPU_MAX: level},
          })
          assert.equal(r.status, 0, r.stderr)
          assert.equal(r.stdout.trim(), best, `RUNNER_CPU_MAX=${level} gives other logits than the best level`)
        }
      })
    })
  }
})
