// Batched decode across slots (serve -P N): the slots' decode steps run as one forward pass, and
// each request's completion and log-probabilities are bitwise what a one-slot server gives it
// (anchor: the same requests one at a time on -P 1), through the official `openai` client; the
// capabilities and metrics say the steps were batched, and --no-batch-decode turns it off.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeSlowModel} from '../helpers/slow-model.js'
import {hasShared, NO_SHARED_REASON} from '../helpers/shared.js'
import {metric, startTestServer, type TestServer} from './helpers.js'

const PROMPTS = ['Once upon a time', 'The little dog ran', 'Lily and Ben', 'One day a bird', 'The sun was hot']

describe('batched decode across slots', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-batched-'))
  const model = join(dir, 'slow.gguf')
  let batched: TestServer
  let single: TestServer
  let unbatched: TestServer
  before(async () => {
    await makeSlowModel(model)
    batched = await startTestServer({modelPath: model, parallel: 4, nCtx: 256, threadsPerSlot: 1})
    single = await startTestServer({modelPath: model, parallel: 1, nCtx: 256, threadsPerSlot: 1})
    unbatched = await startTestServer({modelPath: model, parallel: 2, nCtx: 256, threadsPerSlot: 1, batchDecode: false})
  })
  after(async () => {
    await Promise.all([batched?.close(), single?.close(), unbatched?.close()])
    rmSync(dir, {recursive: true, force: true})
  })

  const request = (prompt: string, i: number) =>
    ({model: 'slow', prompt, max_tokens: 20 + 3 * i, temperature: 0.8, seed: 100 + i, logprobs: 2}) as const

  test('five requests on four batched slots each get what one slot alone gives them, bitwise', async () => {
    const steps0 = await metric(batched.url, 'runner_batched_decode_steps_total')
    const tokens0 = await metric(batched.url, 'runner_batched_decode_tokens_total')
    const together = await Promise.all(PROMPTS.map((p, i) => batched.client.completions.create(request(p, i))))
    for (let i = 0; i < PROMPTS.length; i++) {
      const alone = await single.client.completions.create(request(PROMPTS[i]!, i))
      const a = together[i]!.choices[0]!
      const b = alone.choices[0]!
      assert.equal(a.text, b.text, `request ${i}: the text differs beside the others`)
      assert.deepEqual(a.logprobs, b.logprobs, `request ${i}: the log-probabilities differ beside the others`)
      assert.equal(together[i]!.usage?.completion_tokens, 20 + 3 * i)
    }
    const steps = (await metric(batched.url, 'runner_batched_decode_steps_total')) - steps0
    const tokens = (await metric(batched.url, 'runner_batched_decode_tokens_total')) - tokens0
    assert.ok(steps > 0 && tokens > steps, `${tokens} tokens in ${steps} steps: the slots' steps were not batched`)
  })

  test('the capabilities say which: batched with -P 4, not with --no-batch-decode or one slot', async () => {
    const caps = async (t: TestServer) =>
      ((await (await fetch(`${t.url}/v1/capabilities`)).json()) as {slots: {batched_decode: boolean; batched_decode_threads?: number}})
        .slots
    const b = await caps(batched)
    assert.equal(b.batched_decode, true)
    assert.ok(Number.isInteger(b.batched_decode_threads) && b.batched_decode_threads! >= 1)
    assert.equal((await caps(unbatched)).batched_decode, false)
    assert.equal((await caps(single)).batched_decode, false)
    assert.equal(await metric(unbatched.url, 'runner_batched_decode_steps_total'), 0)
  })
})
