/**
 * The Ink component in-process, on fake terminal streams (no tmux needed): the stories260K
 * conversation is real, the terminal is an object that records what Ink writes. It checks what
 * the tmux test cannot see byte by byte: once a turn is written it is never written again (later
 * frames hold only the live area), and frames while streaming never outnumber tokens.
 */
import assert from 'node:assert/strict'
import {EventEmitter} from 'node:events'
import {after, before, describe, test} from 'node:test'

import {createElement} from 'react'

import {ChatTemplate} from '../../src/lib/chat/index.js'
import {ChatConversation} from '../../src/lib/chat-ui/conversation.js'
import {Model} from '../../src/lib/engine/model.js'
import {Session} from '../../src/lib/engine/session.js'
import {resolveSamplingOptions} from '../../src/lib/sampling/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

// Ink decides at import time whether it runs under CI (then it prints only <Static> output).
process.env.CI = '0'

class FakeStdin extends EventEmitter {
  readonly isTTY = true
  private readonly queue: string[] = []
  setRawMode(): this {
    return this
  }
  setEncoding(): this {
    return this
  }
  ref(): this {
    return this
  }
  unref(): this {
    return this
  }
  read(): string | null {
    return this.queue.shift() ?? null
  }
  type(s: string): void {
    this.queue.push(s)
    this.emit('readable')
  }
}

class FakeStdout extends EventEmitter {
  readonly isTTY = true
  readonly columns = 100
  readonly rows = 30
  readonly writes: string[] = []
  write(s: string): boolean {
    this.writes.push(s)
    return true
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
async function until(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}
const count = (haystack: string, needle: string) => haystack.split(needle).length - 1

describe('the chat UI on fake terminal streams', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let model: Model
  before(async () => {
    model = await Model.load(sharedPath('models/stories260K.gguf'))
  })
  after(() => model?.dispose())

  test('a finished turn is written once and never redrawn; frames while streaming never outnumber tokens; Ctrl+C twice exits 130', async () => {
    const {render} = await import('ink')
    const {ChatApp} = await import('../../src/lib/chat-ui/app.js')
    const ctx = await model.createContext({nCtx: 512, threads: 1})
    const conversation = new ChatConversation({
      tokenizer: model.tokenizer,
      template: ChatTemplate.forModel(model.gguf, model.tokenizer),
      session: new Session(ctx),
      nCtx: 512,
      contextShift: false,
      params: {sampling: resolveSamplingOptions({temperature: 0, seed: 1n}), maxTokens: 64},
      modelName: 'stories260K',
    })
    const stdin = new FakeStdin()
    const stdout = new FakeStdout()
    const stats = {frames: 0, streamFrames: 0, tokens: 0, generating: false, redraws: 0}
    let exitCode: number | undefined
    const instance = render(
      createElement(ChatApp, {
        conversation,
        modelName: 'stories260K',
        templateOrigin: 'fallback-chatml',
        nCtx: 512,
        stats,
        onExit: (c: number) => (exitCode = c),
      }),
      {
        stdout: stdout as unknown as NodeJS.WriteStream,
        stderr: new FakeStdout() as unknown as NodeJS.WriteStream,
        stdin: stdin as unknown as NodeJS.ReadStream,
        exitOnCtrlC: false,
        patchConsole: false,
        onRender: () => {
          stats.frames++
          if (stats.generating) stats.streamFrames++
        },
      },
    )
    try {
      const all = () => stdout.writes.join('')
      await until('the first frame', () => all().includes('ctx 0/512'))
      assert.ok(all().includes('\u001B[?2004h'), 'bracketed paste is turned on')

      stdin.type('Hello')
      stdin.type('\r')
      await until('the first reply', () => conversation.messages().length === 2 && all().includes('decode'))
      const reply1 = conversation.messages()[1]!.content
      const firstRow = reply1.trim().split('\n')[0]!.slice(0, 40)
      assert.ok(firstRow.length > 5)
      const mark = stdout.writes.length

      stdin.type('Tell me more')
      stdin.type('\r')
      await until('the second reply', () => conversation.messages().length === 4 && /cached [1-9]/.test(stdout.writes.slice(mark).join('')))
      const later = stdout.writes.slice(mark).join('')
      assert.ok(!later.includes('› Hello'), 'the first turn is not written again')
      assert.ok(!later.includes(firstRow), 'nor its reply')
      assert.equal(count(all(), '› Hello'), 1, 'the first message was written exactly once')
      assert.equal(count(all(), firstRow), 1, 'the first reply was written exactly once')
      assert.equal(count(later, '› Tell me more'), 1)
      assert.equal(stats.tokens, 128)
      assert.ok(stats.streamFrames <= stats.tokens, `frames while streaming (${stats.streamFrames}) <= tokens (${stats.tokens})`)
      assert.ok(!all().includes('\u001B[2J'), 'never a full-screen clear')

      stdin.type('\u0003')
      await until('the exit hint', () => stdout.writes.slice(-3).join('').includes('Ctrl+C again exits'))
      stdin.type('\u0003')
      await instance.waitUntilExit()
      assert.equal(exitCode, 130)
      assert.ok(all().includes('\u001B[?2004l'), 'bracketed paste is turned off again')
    } finally {
      instance.unmount()
      await conversation.stop()
      ctx.dispose()
    }
  })
})
