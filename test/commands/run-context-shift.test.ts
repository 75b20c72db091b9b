// --context-shift on run and serve (issue #23): the flags reach the engine's shift (the tokens are the
// library's own with the same keep, whose shifts test/differential/context-shift.test.ts holds against
// llama.cpp), the shifts are reported (run's summary and --json, serve's usage), --keep counts as
// llama.cpp's (N tokens after BOS), and a context that cannot shift exactly is refused by name.
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, test} from 'node:test'

import {Model} from '../../src/lib/engine/model.js'
import {encodePrompt} from '../../src/lib/tokenizer/index.js'
import {greedy} from '../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, runCliWithInput, sharedPath} from '../helpers/shared.js'
import {startTestServer} from '../server/helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const GEMMA3 = sharedPath('fixtures', 'gemma3.gguf')
const PROMPT = 'Once upon a time'

describe('--context-shift', {skip: hasShared() ? false : NO_SHARED_REASON, timeout: 120_000}, () => {
  test('run: generation goes on past a full context; the tokens are the engine’s with BOS + --keep kept; the shifts are reported', async () => {
    const args = ['run', STORIES, '-p', PROMPT, '-n', '200', '--temp', '0', '-c', '64', '-t', '1', '--context-shift', '--keep', '2']
    const [json, text] = await Promise.all([runCliAsync([...args, '--json']), runCliAsync(args)])
    assert.equal(json.status, 0, json.stderr)
    const doc = JSON.parse(json.stdout)
    assert.equal(doc.tokens.length, 200)
    assert.equal(doc.finishReason, 'length')
    assert.equal(doc.contextShift.keep, 3) // BOS + 2
    assert.ok(doc.contextShift.shifts >= 3, JSON.stringify(doc.contextShift))
    assert.match(
      text.stderr,
      new RegExp(` \\(${doc.contextShift.shifts} context shifts, ${doc.contextShift.discarded} tokens dropped\\) · `),
    )

    const model = await Model.load(STORIES)
    const ctx = await model.createContext({nCtx: 64, threads: 1})
    try {
      const ids = encodePrompt(model.tokenizer, PROMPT, {addBos: true, parseSpecial: false})
      const r = await ctx.generate(ids, {maxTokens: 200, sampling: greedy(), pos: 0, contextShift: {keep: 3}}).result
      assert.deepEqual(doc.tokens, r.tokens)
      assert.deepEqual(
        {shifts: r.shifts.count, discarded: r.shifts.discarded},
        {shifts: doc.contextShift.shifts, discarded: doc.contextShift.discarded},
      )
    } finally {
      ctx.dispose()
      model.dispose()
    }
    // Without the flag the same run ends at the full context.
    const plain = await runCliAsync(['run', STORIES, '-p', PROMPT, '-n', '200', '--temp', '0', '-c', '64', '--json'])
    assert.equal(JSON.parse(plain.stdout).finishReason, 'context')
    assert.equal(JSON.parse(plain.stdout).contextShift, undefined)
  })

  test('run: refused by name on a sliding-window ring (exit 5), allowed with --swa-full', async () => {
    const args = ['run', GEMMA3, '-p', PROMPT, '-n', '100', '--temp', '0', '-c', '64', '-b', '16', '--context-shift']
    const [ring, full] = await Promise.all([runCliAsync(args), runCliAsync([...args, '--swa-full', '--json'])])
    assert.equal(ring.status, 5)
    assert.match(
      ring.stderr,
      /--context-shift: context shift is refused on this context: its sliding-window layers hold a ring.*--swa-full.*\[CONTEXT_SHIFT_UNSUPPORTED\]/,
    )
    assert.equal(full.status, 0, full.stderr)
    assert.ok(JSON.parse(full.stdout).contextShift.shifts > 0)
  })

  test('run: --keep needs --context-shift; a receipt records the shift and verify replays it', async () => {
    const keep = await runCliAsync(['run', STORIES, '-p', PROMPT, '-n', '4', '--keep', '3'])
    assert.equal(keep.status, 2)
    assert.match(keep.stderr, /context-shift/)
    const dir = mkdtempSync(join(tmpdir(), 'runner-shift-receipt-'))
    try {
      const file = join(dir, 'shift.receipt.json')
      const args = ['run', STORIES, '-p', PROMPT, '-n', '150', '--temp', '0.8', '--seed', '3', '-c', '64', '-t', '1']
      const r = await runCliAsync([...args, '--context-shift', '--keep', '2', '--transcript', file])
      assert.equal(r.status, 0, r.stderr)
      const body = JSON.parse(readFileSync(file, 'utf8')) as {config: {contextShift: {keep: number}}; output: {tokens: number[]}}
      assert.deepEqual(body.config.contextShift, {keep: 3}, '--keep 2 after the BOS token: 3 positions')
      // More tokens than a 64-position context holds: a replay without the shift would end at a full context, so VERIFIED means it shifted.
      assert.equal(body.output.tokens.length, 150, 'it shifted')
      const v = await runCliAsync(['verify', file, '--model', STORIES, '--json'])
      assert.equal(v.status, 0, v.stdout + v.stderr)
      assert.equal((JSON.parse(v.stdout) as {verdict: string}).verdict, 'VERIFIED')
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  test('chat: a reply that fills the context shifts it, keeping the system prompt; a ring says why it cannot', async () => {
    const r = await runCliWithInput(
      ['chat', STORIES, '--temp', '0', '-c', '128', '-n', '150', '-t', '1', '--context-shift', '--json', '--system', 'Be brief.'],
      'Tell me a story\n',
    )
    assert.equal(r.status, 0, r.stderr)
    const answer = JSON.parse(r.stdout.trim())
    assert.equal(answer.tokens.length, 150)
    assert.ok(answer.contextShifts >= 1, r.stdout)
    assert.match(r.stderr, /the context was full: shifted \d+ time\(s\), dropping \d+ tokens after the system prompt/)
    const ring = await runCliWithInput(
      ['chat', GEMMA3, '--temp', '0', '-c', '256', '-b', '16', '-n', '8', '--context-shift', '--json'],
      'Hi\n',
    )
    assert.equal(ring.status, 0, ring.stderr)
    assert.match(ring.stderr, /--context-shift drops old turns, but a reply still ends at a full context: .*ring/)
  })

  test('serve: a completion longer than the slot shifts it and says so in usage; max_tokens may exceed the slot', async () => {
    const s = await startTestServer({modelPath: STORIES, parallel: 1, nCtx: 64, threadsPerSlot: 1, contextShift: {keep: 0}})
    try {
      const r = await s.client.completions.create({model: 'stories260K', prompt: PROMPT, max_tokens: 150, temperature: 0})
      assert.equal(r.usage?.completion_tokens, 150)
      assert.equal(r.choices[0]!.finish_reason, 'length')
      assert.ok(((r.usage as unknown as {context_shifts: number}).context_shifts ?? 0) >= 2, JSON.stringify(r.usage))
      // Anthropic's route too: max_tokens past the slot is no longer refused.
      const a = await fetch(`${s.url}/v1/messages`, {
        method: 'POST',
        headers: {'content-type': 'application/json', 'anthropic-version': '2023-06-01'},
        body: JSON.stringify({model: 'stories260K', max_tokens: 100, temperature: 0, messages: [{role: 'user', content: 'Hi'}]}),
      })
      assert.equal(a.status, 200, await a.clone().text())
      assert.equal(((await a.json()) as {usage: {output_tokens: number}}).usage.output_tokens, 100)
      const caps = (await (await fetch(`${s.url}/v1/capabilities`)).json()) as {slots: {context_shift: unknown}}
      assert.deepEqual(caps.slots.context_shift, {keep: 0})
    } finally {
      await s.close()
    }
    // A context beyond 544 positions (a ring of (16 - 1 + 512) / 32 blocks) gives serve's slots a ring.
    const ring = startTestServer({
      modelPath: GEMMA3,
      parallel: 1,
      nCtx: 1024,
      threadsPerSlot: 1,
      contextShift: {keep: 0},
      onWarning: () => {},
    })
    ring.then((started) => started.close()).catch(() => {})
    await assert.rejects(ring, /CONTEXT_SHIFT_UNSUPPORTED|sliding-window layers hold a ring/)
  })
})
