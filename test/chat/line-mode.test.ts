/**
 * The line mode's cut marker, in process on stories260K (no CLI spawn, a few dozen tokens): a reply
 * that `-n` cut off is followed on stderr by `[cut: -n N reached]` (N the limit in force, also after
 * `/params n=`), stdout keeps one line per message, and a reply that ended otherwise (here the
 * context filling up) has no marker.
 */
import assert from 'node:assert/strict'
import {Readable} from 'node:stream'
import {after, before, describe, test} from 'node:test'

import {ChatTemplate} from '../../src/lib/chat/index.js'
import {ChatConversation} from '../../src/lib/chat-ui/conversation.js'
import {cutMarker} from '../../src/lib/chat-ui/cut-marker.js'
import {runLineMode} from '../../src/lib/chat-ui/line-mode.js'
import {Model} from '../../src/lib/engine/model.js'
import {Session} from '../../src/lib/engine/session.js'
import {resolveSamplingOptions} from '../../src/lib/sampling/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

test('cutMarker names the -n that cut a reply and nothing for any other end', () => {
  assert.equal(cutMarker({finishReason: 'length', maxTokens: 64}), '[cut: -n 64 reached]')
  for (const finishReason of ['eos', 'context', 'aborted', 'stop'] as const)
    assert.equal(cutMarker({finishReason, maxTokens: 64}), undefined, finishReason)
})

describe('line mode on stories260K', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  before(async () => {
    model = await Model.load(sharedPath('models/stories260K.gguf'))
  })
  after(() => model?.dispose())

  test('a reply cut by -n is marked on stderr, one line per message on stdout; a reply the context ended is not', async () => {
    // 256 positions: with -n -1 the reply's room is 64, so the third reply runs into the end of the context.
    const nCtx = 256
    const ctx = await model.createContext({nCtx, threads: 1})
    try {
      const conversation = new ChatConversation({
        tokenizer: model.tokenizer,
        template: ChatTemplate.forModel(model.gguf, model.tokenizer),
        session: new Session(ctx),
        nCtx,
        contextShift: false,
        params: {sampling: resolveSamplingOptions({temperature: 0, seed: 1n}), maxTokens: 8},
        modelName: 'stories260K',
      })
      let stdout = ''
      let stderr = ''
      const code = await runLineMode({
        conversation,
        input: Readable.from(['Hello\n/params n=5\nOnce upon a time\n/params n=-1\nThe end\n']),
        write: (s) => (stdout += s),
        diagnostic: (s) => (stderr += s),
        json: false,
      })
      assert.equal(code, 0, stderr)
      assert.equal(stdout.split('\n').length - 1, 3, `one line per message on stdout: ${JSON.stringify(stdout)}`)
      const marks = stderr.split('\n').filter((l) => l.includes('[cut:'))
      assert.deepEqual(marks, ['runner: [cut: -n 8 reached]', 'runner: [cut: -n 5 reached]'], stderr)
      assert.match(stderr, /the reply stopped because the context is full/, 'the third reply ended by the context, unmarked')
    } finally {
      ctx.dispose()
    }
  })
})
