// chat_smoke: passes on stories260K (no template: ChatML) and on a copy carrying a template of its
// own; a copy whose template raises fails it (and only the template-driven checks: structured still
// passes on that copy); the verdict fails a reply that did not end, that is not its tokens decoded,
// or (strictUtf8) that is not UTF-8, as the random-weight llama fixture's reply is not.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {chatReplyVerdict, chatSmoke, utf8Valid} from '../../../src/lib/compat/checks/chat-smoke.js'
import {structured} from '../../../src/lib/compat/checks/structured.js'
import {BROKEN_TEMPLATE, checkEnv, PLAIN_TEMPLATE, rowFor, scratch, withTemplate} from '../../helpers/compat-chat.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

describe('chat_smoke', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const tmp = scratch('runner-compat-chat-')
  const env = checkEnv(tmp.dir)
  let templated: string
  let broken: string
  before(async () => {
    templated = await withTemplate(STORIES, tmp.dir, PLAIN_TEMPLATE, 'stories-templated')
    broken = await withTemplate(STORIES, tmp.dir, BROKEN_TEMPLATE, 'stories-broken')
  })
  after(() => tmp.remove())

  test('passes on stories260K with ChatML, which the model falls back to, and says so', async () => {
    assert.equal(await chatSmoke.when(rowFor(STORIES), {}, env), undefined)
    const out = await chatSmoke.run(rowFor(STORIES), {}, env)
    assert.equal(out.outcome, 'pass', out.evidence)
    assert.match(
      out.evidence,
      /^template chatml \(the model has none\): 2 messages render to \d+ prompt tokens; greedy reply of 16 tokens, /,
    )
    assert.match(out.evidence, /ended on (eos|length); valid UTF-8; \d+ ms$/)
  })

  test("uses the model's own template when it has one, and chatml when the row asks", async () => {
    const own = await chatSmoke.run(rowFor(templated), {maxTokens: 4}, env)
    assert.equal(own.outcome, 'pass', own.evidence)
    assert.match(own.evidence, /^template the model's own: .* greedy reply of 4 tokens/)
    const chatml = await chatSmoke.run(rowFor(templated), {template: 'chatml', maxTokens: 4}, env)
    assert.equal(chatml.outcome, 'pass', chatml.evidence)
    assert.match(chatml.evidence, /^template chatml \(asked for\)/)
  })

  test('mutation: a template that raises fails chat_smoke, and not structured', async () => {
    const out = await chatSmoke.run(rowFor(broken), {}, env)
    assert.equal(out.outcome, 'fail')
    assert.match(out.evidence, /^template the model's own: the conversation does not render: .*this chat template is broken on purpose/)
    // The same copy with ChatML asked for passes: the failure is the template's.
    assert.equal((await chatSmoke.run(rowFor(broken), {template: 'chatml', maxTokens: 2}, env)).outcome, 'pass')
    assert.equal((await structured.run(rowFor(broken), {}, env)).outcome, 'pass')
  })

  test('strictUtf8 fails the random-weight llama fixture, whose byte tokens are not UTF-8', async () => {
    const llama = sharedPath('fixtures', 'llama.gguf')
    const loose = await chatSmoke.run(rowFor(llama), {}, env)
    assert.equal(loose.outcome, 'pass', loose.evidence)
    assert.match(loose.evidence, /not valid UTF-8/)
    const strict = await chatSmoke.run(rowFor(llama), {strictUtf8: true}, env)
    assert.equal(strict.outcome, 'fail')
    assert.match(strict.evidence, /greedy reply of 16 tokens: the reply's \d+ bytes are not valid UTF-8 \(strictUtf8\)$/)
  })

  test('refuses a template parameter it does not know, by name', async () => {
    await assert.rejects(
      chatSmoke.run(rowFor(STORIES), {template: 'jinja'}, env),
      /parameter template must be "model" or "chatml", got "jinja"/,
    )
  })
})

describe('chat_smoke verdict', () => {
  const ok = {text: 'Hi', tokens: [1, 2], finishReason: 'length', decoded: 'Hi', bytes: new TextEncoder().encode('Hi')}

  test('a reply that ended on eos or length, and is its pieces decoded, passes', () => {
    assert.equal(chatReplyVerdict(ok, true), undefined)
    assert.equal(chatReplyVerdict({...ok, finishReason: 'eos'}, true), undefined)
  })

  test('a reply that did not end, or is not its tokens decoded, or not well formed, fails', () => {
    assert.equal(chatReplyVerdict({...ok, finishReason: 'context'}, false), 'the reply ended with finish reason context, not eos or length')
    assert.equal(chatReplyVerdict({...ok, finishReason: 'aborted'}, false), 'the reply ended with finish reason aborted, not eos or length')
    assert.match(chatReplyVerdict({...ok, text: 'Ho'}, false)!, /^the reply's text "Ho" is not its 2 tokens' pieces decoded \("Hi"\)$/)
    assert.equal(chatReplyVerdict({...ok, text: '\uD800', decoded: '\uD800'}, false), 'the reply holds a lone UTF-16 surrogate')
  })

  test('utf8Valid: a stray continuation byte is not UTF-8; a last character cut short is', () => {
    assert.equal(utf8Valid(new Uint8Array([0x41, 0x80, 0x41])), false)
    assert.equal(utf8Valid(new Uint8Array([0x41, 0xf0, 0x9f])), true)
    const bad = {...ok, bytes: new Uint8Array([0xff])}
    assert.equal(chatReplyVerdict(bad, false), undefined)
    assert.equal(chatReplyVerdict(bad, true), "the reply's 1 bytes are not valid UTF-8 (strictUtf8)")
  })
})
