// serve_smoke: passes on stories260K (the server falls back to ChatML; the openai client drives it);
// a copy whose chat template raises fails it with the server's refusal as the client saw it; the
// verdict fails a streamed text that differs from the non-streamed one; no openai package:
// not_executed. The server's prompt workers run from dist/ under tsx: build first (`npx tsc -p .`).
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {NO_OPENAI_REASON, openaiMissing} from '../../../src/lib/compat/checks/serve-common.js'
import {serveSmoke, streamVerdict} from '../../../src/lib/compat/checks/serve-smoke.js'
import {BROKEN_TEMPLATE, checkEnv, PLAIN_TEMPLATE, rowFor, scratch, withTemplate} from '../../helpers/compat-chat.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

describe('serve_smoke', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const tmp = scratch('runner-compat-serve-')
  const env = checkEnv(tmp.dir)
  let templated: string
  let broken: string
  before(async () => {
    templated = await withTemplate(STORIES, tmp.dir, PLAIN_TEMPLATE, 'stories-templated')
    broken = await withTemplate(STORIES, tmp.dir, BROKEN_TEMPLATE, 'stories-broken')
  })
  after(() => tmp.remove())

  test('passes on stories260K: the model listed, a greedy reply, the same streamed', async () => {
    assert.equal(await serveSmoke.when(rowFor(STORIES), {}, env), undefined)
    const out = await serveSmoke.run(rowFor(STORIES), {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^model stories260K \(template fallback-chatml\): reply ".+" \(finish (stop|length)\), streamed the same; start [\d.]+ ms, list [\d.]+ ms, completion [\d.]+ ms, stream [\d.]+ ms$/,
    )
  })

  test("passes on a copy with a template of its own, and names the model's template", async () => {
    const out = await serveSmoke.run(rowFor(templated), {maxTokens: 4, nCtx: 256}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(out.evidence, /^model stories-templated \(template model\): /)
  })

  test('mutation: a chat template that raises fails it with what the client got', async () => {
    const out = await serveSmoke.run(rowFor(broken), {}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /^the chat completion failed: HTTP 400: .*this chat template is broken on purpose/)
  })

  test('not_executed without the openai package', async () => {
    assert.equal(await openaiMissing(() => Promise.reject(new Error("Cannot find package 'openai'"))), NO_OPENAI_REASON)
    assert.equal(NO_OPENAI_REASON, 'the openai package is not installed')
  })
})

describe('serve_smoke verdict', () => {
  test('the same text and finish reason pass', () => {
    assert.equal(streamVerdict({text: 'Once', finishReason: 'length'}, {text: 'Once', finishReason: 'length'}), undefined)
  })

  test('a streamed text that differs fails, naming the first differing character', () => {
    assert.equal(
      streamVerdict({text: 'Once upon', finishReason: 'length'}, {text: 'Once apon', finishReason: 'length'}),
      'the streamed text "Once apon" differs from the non-streamed "Once upon" from character 5',
    )
    assert.equal(
      streamVerdict({text: 'Once', finishReason: 'length'}, {text: 'Once', finishReason: 'stop'}),
      'the stream ended with finish_reason stop, the completion with length',
    )
  })

  test('a completion without text, or that did not end, fails', () => {
    assert.equal(
      streamVerdict({text: null, finishReason: 'stop'}, {text: '', finishReason: 'stop'}),
      'the completion has no text content (null)',
    )
    assert.equal(
      streamVerdict({text: 'x', finishReason: 'content_filter'}, {text: 'x', finishReason: 'content_filter'}),
      'the completion ended with finish_reason content_filter, not stop or length',
    )
  })
})
