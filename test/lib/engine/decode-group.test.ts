/**
 * Batched decode across sequences (DecodeGroup, native/src/model/group.c): four generations that
 * step together in one forward pass per token give each sequence bitwise the tokens and
 * log-probabilities it gets alone, greedy and sampled, whatever joins or leaves the group meanwhile;
 * on a model whose steps take long enough for the four to meet, the group did batch.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel} from '../../../scripts/make-test-model.js'
import type {Context} from '../../../src/lib/engine/context.js'
import {DecodeGroup} from '../../../src/lib/engine/decode-group.js'
import {Model} from '../../../src/lib/engine/model.js'
import {resolveSamplingOptions, type SamplingOptions} from '../../../src/lib/sampling/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const PROMPTS = ['Once upon a time', 'The little dog', 'Lily and Ben went to the park. They', 'One day']
// Different lengths, so members leave the group at different steps and the rest go on without them.
const MAX_TOKENS = [40, 25, 33, 12]
const CASES = [
  {file: 'models/stories260K.gguf', kvType: 'f16', checkBatching: false},
  {file: 'fixtures/llama-q4_0.gguf', kvType: 'f16', checkBatching: false},
  {file: 'fixtures/gemma2.gguf', kvType: 'f32', checkBatching: false},
  // Steps of a few milliseconds: the four generations (started together) surely meet in them.
  {file: 'generated: llama 544 x 4 layers, Q4_0', kvType: 'f16', checkBatching: true},
] as const

interface Run {
  tokens: number[]
  logprobBits: number[]
  topBits: number[]
}

const bitsOf = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0]!

describe('decode groups', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-group-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  for (const c of CASES) {
    describe(`${c.file} (KV ${c.kvType})`, () => {
      let model: Model
      let prompts: number[][]
      let contexts: Context[]
      before(async () => {
        let path = c.file.startsWith('generated') ? join(dir, 'wide.gguf') : sharedPath(c.file)
        if (c.file.startsWith('generated')) {
          // Q4_0 rows of 17 and 48 blocks: the few-token decode kernel's whole groups of 16 and its tail.
          const spec = {arch: 'llama', nEmbd: 544, nLayer: 4, nHead: 8, nHeadKv: 2, nFf: 1536, nCtx: 256, type: 'q4_0', seed: 77n} as const
          await makeTestModel(path, {...spec, tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
        } else path = sharedPath(c.file)
        model = await Model.load(path)
        prompts = PROMPTS.map((p) => model.tokenizer.encode(p, {addSpecial: true}))
        contexts = await Promise.all(PROMPTS.map(() => model.createContext({nCtx: 128, threads: 1, kvType: c.kvType})))
      })
      after(() => {
        for (const ctx of contexts ?? []) ctx.dispose()
        model?.dispose()
      })

      async function generate(i: number, sampling: SamplingOptions, group?: DecodeGroup): Promise<Run> {
        const ctx = contexts[i]!
        ctx.kvTruncate(0)
        const run: Run = {tokens: [], logprobBits: [], topBits: []}
        const stream = ctx.generate(prompts[i]!, {maxTokens: MAX_TOKENS[i]!, sampling, stopTokens: [], pos: 0, ...(group ? {group} : {})})
        for await (const t of stream) {
          run.tokens.push(t.token) // a last token -1 carries the decoder's tail, alone and together alike
          run.logprobBits.push(bitsOf(t.logprob))
          for (const x of t.top ?? []) run.topBits.push(x.token, bitsOf(x.logprob))
        }
        assert.equal((await stream.result).tokens.length, MAX_TOKENS[i])
        return run
      }

      for (const [name, sampling] of [
        ['greedy', resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n, logprobs: true, topLogprobs: 3})],
        [
          'sampled',
          resolveSamplingOptions({temperature: 0.9, topK: 40, topP: 0.95, minP: 0.05, seed: 99n, logprobs: true, topLogprobs: 2}),
        ],
      ] as const) {
        test(`${name}: each of four sequences stepping together equals it alone, bitwise`, async () => {
          const alone: Run[] = []
          for (let i = 0; i < PROMPTS.length; i++) alone.push(await generate(i, sampling))
          const group = DecodeGroup.create(model, {threads: 2, maxMembers: 4})
          try {
            const together = await Promise.all(PROMPTS.map((_, i) => generate(i, sampling, group)))
            for (let i = 0; i < PROMPTS.length; i++) assert.deepEqual(together[i], alone[i], `sequence ${i} differs beside the others`)
            const s = group.stats()
            const total = MAX_TOKENS.reduce((a, b) => a + b, 0) - PROMPTS.length // the last token of each is never evaluated
            assert.equal(s.tokens, total, 'every generated token but the last of each was evaluated in the group')
            if (c.checkBatching)
              assert.ok(s.tokens / s.steps > 1.5, `the group stepped ${s.tokens} tokens in ${s.steps} steps: it did not batch`)
          } finally {
            group.dispose()
          }
        })
      }

      // On the model whose steps take milliseconds: the abort lands while the others still generate.
      if (c.checkBatching)
        test('a member aborted mid-generation leaves the group; the others still get what they get alone', async () => {
          const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n, logprobs: true})
          const run = async (i: number, group?: DecodeGroup, abortAfter?: number) => {
            const ctx = contexts[i]!
            ctx.kvTruncate(0)
            const abort = new AbortController()
            const stream = ctx.generate(prompts[i]!, {
              maxTokens: 40,
              sampling,
              stopTokens: [],
              pos: 0,
              signal: abort.signal,
              ...(group ? {group} : {}),
            })
            const out: number[] = []
            for await (const t of stream) {
              out.push(t.token, bitsOf(t.logprob))
              if (out.length === 2 * (abortAfter ?? -1)) abort.abort()
            }
            return {out, finish: (await stream.result).finishReason}
          }
          const alone = []
          for (let i = 0; i < PROMPTS.length; i++) alone.push(await run(i))
          const group = DecodeGroup.create(model, {threads: 2, maxMembers: 4})
          try {
            const together = await Promise.all(PROMPTS.map((_, i) => run(i, group, i === 1 ? 5 : undefined)))
            assert.equal(together[1]!.finish, 'aborted')
            assert.deepEqual(together[1]!.out.slice(0, 10), alone[1]!.out.slice(0, 10), 'the aborted one, up to its abort')
            for (const i of [0, 2, 3]) assert.deepEqual(together[i], alone[i], `sequence ${i} differs after a member left`)
          } finally {
            group.dispose()
          }
        })
    })
  }

  test('a group refuses a context of another model, and options out of range', async () => {
    const a = await Model.load(sharedPath('models', 'stories260K.gguf'))
    const b = await Model.load(sharedPath('fixtures', 'llama-q4_0.gguf'))
    try {
      const group = DecodeGroup.create(a, {threads: 1})
      const ctx = await b.createContext({nCtx: 64, threads: 1})
      const sampling = resolveSamplingOptions({temperature: 0, topK: 0, topP: 1, minP: 0, seed: 0n})
      await assert.rejects(ctx.generate([1, 2], {maxTokens: 2, sampling, group}).result, {code: 'GROUP_OTHER_MODEL'})
      ctx.dispose()
      group.dispose()
      assert.throws(() => DecodeGroup.create(a, {maxMembers: 0}), {code: 'GROUP_BAD_OPTION'})
      assert.throws(() => DecodeGroup.create(a, {waitUs: -1}), {code: 'GROUP_BAD_OPTION'})
    } finally {
      a.dispose()
      b.dispose()
    }
  })
})
