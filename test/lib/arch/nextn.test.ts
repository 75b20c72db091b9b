/**
 * Models that carry a multi-token-prediction (NextN) head (issue #23): the fixture plus one block of
 * seeded random weights and llama.cpp's `blk.N.nextn.*` tensors. The main pass must not run that
 * block, so greedy tokens and every logit are bitwise those of the fixture itself (whose greedy ids
 * ../shared/reference has from llama.cpp); families without the feature, more than one NextN block
 * and a head without its tensors are refused by name.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {planModel} from '../../../src/lib/arch/index.js'
import {Model} from '../../../src/lib/engine/index.js'
import {RunnerError} from '../../../src/lib/errors.js'
import {readGgufModel, renderSummary, summarizeModel} from '../../../src/lib/gguf/index.js'
import {bits, greedy} from '../../helpers/engine.js'
import {writeNextnModel} from '../../helpers/nextn-model.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const refused = (code: string, re: RegExp) => (e: unknown) => e instanceof RunnerError && e.code === code && re.test(e.message)

describe('NextN (MTP) heads', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-nextn-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  for (const family of ['llama', 'qwen2', 'qwen3']) {
    test(`${family}: the block is bound but not run: tokens and logits are the fixture's, bitwise`, async () => {
      const plain = sharedPath('fixtures', `${family}.gguf`)
      const path = join(dir, `${family}-nextn.gguf`)
      await writeNextnModel(plain, path)
      const plan = planModel(readGgufModel(path))
      const blocks = planModel(readGgufModel(plain)).config.nLayer
      assert.equal(plan.config.nLayer, blocks + 1)
      assert.equal(plan.config.nNextn, 1)
      const heads = plan.tensors.filter((t) => t.role.startsWith('nextn_'))
      assert.deepEqual(heads.map((t) => `${t.role}@${t.layer}`).sort(), [
        `nextn_eh_proj@${blocks}`,
        `nextn_enorm@${blocks}`,
        `nextn_hnorm@${blocks}`,
        `nextn_shared_head_norm@${blocks}`,
      ])
      assert.match(renderSummary(summarizeModel(readGgufModel(path))), /MTP head\s+1 NextN block/)

      const a = await Model.load(plain)
      const b = await Model.load(path)
      try {
        const prompt = a.tokenizer.encode('Once upon a time, there was a little girl', {addSpecial: true})
        const outs = []
        for (const m of [a, b]) {
          const ctx = await m.createContext({nCtx: 128, threads: 1, kvType: 'f32'})
          outs.push(ctx.kvBytes)
          const logits = (await ctx.decode(prompt, {pos: 0, logits: 'all'}))!
          const tokens = (await ctx.generate(prompt, {maxTokens: 24, sampling: greedy(), pos: 0}).result).tokens
          outs.push({logits: bits(logits), tokens})
          ctx.dispose()
        }
        const [kvPlain, plainOut, kvHead, headOut] = outs as [number, {logits: Buffer; tokens: number[]}, number, typeof plainOut]
        assert.ok(plainOut.logits.equals(headOut.logits), 'every logit bitwise equal')
        assert.deepEqual(headOut.tokens, plainOut.tokens)
        assert.equal(kvHead, kvPlain, "the model's contexts hold no KV cache for the head's block")
        if (family === 'llama') {
          // The fixture's greedy continuation is llama.cpp's: with the head added, still.
          const ref = (
            JSON.parse(readFileSync(sharedPath('reference', 'llama.json'), 'utf8')) as {
              greedy: Array<{prompt_ids: number[]; ids: number[]}>
            }
          ).greedy[0]!
          const ctx = await b.createContext({nCtx: 256, threads: 1, kvType: 'f32'})
          const got = (await ctx.generate(ref.prompt_ids, {maxTokens: ref.ids.length, sampling: greedy(), pos: 0}).result).tokens
          ctx.dispose()
          assert.deepEqual(got, ref.ids)
        }
      } finally {
        a.dispose()
        b.dispose()
      }
    })
  }

  test('refused by name: another family, more than one block, a head without its tensors', async () => {
    const gemma = join(dir, 'gemma2-nextn.gguf')
    await writeNextnModel(sharedPath('fixtures', 'gemma2.gguf'), gemma, {keyOnly: true})
    assert.throws(
      () => planModel(readGgufModel(gemma)),
      refused(
        'ARCH_UNSUPPORTED',
        /gemma2\.nextn_predict_layers: a NextN \(MTP\) head is not supported for gemma2 \(only llama, qwen2, qwen3\)/,
      ),
    )
    const two = join(dir, 'llama-nextn2.gguf')
    await writeNextnModel(sharedPath('fixtures', 'llama.gguf'), two, {predictLayers: 2})
    assert.throws(
      () => planModel(readGgufModel(two)),
      refused('ARCH_UNSUPPORTED', /llama\.nextn_predict_layers 2: only one NextN \(MTP\) block/),
    )
    const bare = join(dir, 'llama-nextn-bare.gguf')
    await writeNextnModel(sharedPath('fixtures', 'llama.gguf'), bare, {withHeadTensors: false})
    assert.throws(() => planModel(readGgufModel(bare)), refused('ARCH_MISSING_TENSOR', /tensor blk\.3\.nextn\.eh_proj\.weight is missing/))
    // NextN tensors in a file that declares no head are not part of the architecture.
    const plain = readGgufModel(sharedPath('fixtures', 'llama.gguf'))
    assert.equal(planModel(plain).config.nNextn, undefined)
  })
})
