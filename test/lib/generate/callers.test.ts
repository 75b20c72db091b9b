/**
 * The four callers of the generation loop give the same tokens for the same request: `runner run
 * --json`, `runner chat --json` (with a template that renders the message alone), a /v1/completions
 * request at temperature 0, receipt replay (`verify`), and generate() called directly. The anchor is
 * llama.cpp's: shared/reference/stories260K.json greedy[0] (its prompt ids, its 48 greedy ids and
 * their text), the same anchor test/commands/run.test.ts checks `runner run` against.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {Model} from '../../../src/lib/engine/model.js'
import {Session} from '../../../src/lib/engine/session.js'
import {generate} from '../../../src/lib/generate/index.js'
import {verifyReceipt} from '../../../src/lib/receipt/index.js'
import {greedy} from '../../helpers/engine.js'
import {type CliResult, runCliWithInput, hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../../helpers/shared.js'
import {startTestServer} from '../../server/helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const dir = mkdtempSync(join(tmpdir(), 'runner-callers-'))
after(() => rmSync(dir, {recursive: true, force: true}))

interface ReferenceGreedy {
  prompt: string
  prompt_ids: number[]
  ids: number[]
  text: string
}

function chat(args: string[], input: string): Promise<CliResult> {
  return runCliWithInput(['chat', '-m', STORIES, ...args], input)
}

describe("one request, five ways through the loop, llama.cpp's tokens each time", {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let reference: ReferenceGreedy
  before(() => {
    reference = (JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {greedy: ReferenceGreedy[]}).greedy[0]!
  })

  test("run --json, chat --json, /v1/completions, verify and generate() agree with llama.cpp's 48 greedy tokens", async () => {
    const receipt = join(dir, 'r.json')
    const template = join(dir, 'bare.jinja')
    // The message alone: encodeChatPrompt adds BOS as the vocabulary asks, so the prompt is run's.
    writeFileSync(template, '{% for m in messages %}{{ m.content }}{% endfor %}')
    const settings = ['--temp', '0', '-n', '48', '-c', '256', '-t', '1', '--kv-type', 'f32']
    const [run, chatted] = await Promise.all([
      runCliAsync(['run', '-m', STORIES, '-p', reference.prompt, ...settings, '--json', '--transcript', receipt]),
      chat([...settings, '--json', '--chat-template', template], `${reference.prompt}\n`),
    ])

    assert.equal(run.status, 0, run.stderr)
    const r = JSON.parse(run.stdout) as {tokens: number[]; promptTokens: number[]; text: string; finishReason: string}
    assert.deepEqual(r.promptTokens, reference.prompt_ids)
    assert.deepEqual(r.tokens, reference.ids, 'run')
    assert.equal(r.text, reference.text)
    assert.equal(r.finishReason, 'length')

    assert.equal(chatted.status, 0, chatted.stderr)
    const c = JSON.parse(chatted.stdout.split('\n')[0]!) as {tokens: number[]; promptTokens: number[]; text: string; finishReason: string}
    assert.deepEqual(c.promptTokens, reference.prompt_ids)
    assert.deepEqual(c.tokens, reference.ids, 'chat')
    assert.equal(c.text, reference.text)

    const t = await startTestServer({modelPath: STORIES, parallel: 1, nCtx: 256, threadsPerSlot: 1, kvType: 'f32'})
    try {
      const completion = await t.client.completions.create({
        model: 'stories260K',
        prompt: reference.prompt,
        max_tokens: 48,
        temperature: 0,
        logprobs: 0,
      })
      const choice = completion.choices[0]!
      assert.equal(choice.text, reference.text, 'completions')
      assert.equal(completion.usage?.prompt_tokens, reference.prompt_ids.length)
      assert.equal(completion.usage?.completion_tokens, 48)
      assert.equal(choice.finish_reason, 'length')
      const model = await Model.load(STORIES)
      try {
        const pieces = reference.ids.map((id) => Buffer.from(model.tokenizer.pieceBytes(id)).toString('utf8'))
        assert.deepEqual(choice.logprobs?.tokens, pieces, "the completion's tokens are llama.cpp's, one by one")

        const ctx = await model.createContext({nCtx: 256, threads: 1, kvType: 'f32'})
        try {
          const direct = await generate(new Session(ctx), {prompt: reference.prompt_ids, maxTokens: 48, sampling: greedy()}).result
          assert.deepEqual(direct.tokenIds, reference.ids, 'generate()')
        } finally {
          ctx.dispose()
        }
      } finally {
        model.dispose()
      }
    } finally {
      await t.close()
    }

    const report = await verifyReceipt({receiptPath: receipt, modelPath: STORIES})
    assert.equal(report.verdict, 'VERIFIED', report.reason)
    const recorded = JSON.parse(readFileSync(receipt, 'utf8')) as {output: {tokens: number[]}}
    assert.deepEqual(recorded.output.tokens, reference.ids, 'the receipt the replay reproduced')
  })
})
