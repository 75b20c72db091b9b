/**
 * The real `runner chat` UI in a real terminal: tmux (a private server per test) runs the compiled
 * CLI in a 100x30 pane; the test types keys with send-keys and reads the screen with capture-pane.
 * It types messages and sees the replies, recalls input with Up, writes a multi-line message (a
 * trailing backslash, Shift+Enter, Alt+Enter), interrupts generations with Esc and Ctrl+C, runs
 * /reset and /save, checks the saved file parses
 * and holds what the screen shows, exits with Ctrl+D (0) and Ctrl+C twice (130), and reads the
 * frame counters the CLI writes with RUNNER_CHAT_STATS (frames per token, full-screen clears). Issue
 * #22: under NO_COLOR the pane holds no SGR escape (without it, it does); a reply -n cut is marked and
 * one not cut is not; the status line's context use grows while a reply is written; resizing the
 * window mid-reply (100 → 40 → 100 columns) leaves each row once at the new width and no fragment.
 *
 * Build first (`npx tsc -p .`). Skips with a reason when tmux or ../shared is missing.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {charWidth, displayText} from '../../src/lib/chat-ui/transcript.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const hasTmux = spawnSync('tmux', ['-V']).status === 0
const SKIP = !hasShared()
  ? NO_SHARED_REASON
  : !hasTmux
    ? 'tmux is not installed (apt-get install tmux): the terminal UI test needs a pseudo-terminal'
    : false
const dir = mkdtempSync(join(tmpdir(), 'runner-chat-tui-'))
after(() => rmSync(dir, {recursive: true, force: true}))

/**
 * Ink prints only <Static> output under CI (is-in-ci): the pane must not look like CI. NO_COLOR=1
 * unless `color` (then neither NO_COLOR nor FORCE_COLOR: the chat decides from the terminal).
 */
function terminalEnv(color = false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env))
    if (!(k === 'CI' || k === 'CONTINUOUS_INTEGRATION' || k.startsWith('CI_') || k === 'TMUX' || k === 'NO_COLOR' || k === 'FORCE_COLOR'))
      env[k] = v
  return {...env, ...(color ? {} : {NO_COLOR: '1'}), TERM: 'xterm-256color', SHELL: '/bin/sh'}
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

let terminals = 0

class Terminal {
  /** A private tmux server whose socket lives in the test's folder (removed with it). */
  private readonly socket = join(dir, `tmux-${++terminals}.sock`)
  constructor(
    readonly statsFile: string,
    private readonly color = false,
  ) {}

  tmux(...args: string[]): string {
    const r = spawnSync('tmux', ['-S', this.socket, ...args], {env: terminalEnv(this.color), encoding: 'utf8', timeout: 10_000})
    if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }

  start(args: string[]): void {
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`
    const cmd = `cd ${quote(REPO_ROOT)} && RUNNER_CHAT_STATS=${quote(this.statsFile)} ${quote(process.execPath)} bin/run.js chat ${args.map(quote).join(' ')}; echo "EXIT:$?"; sleep 120`
    this.tmux('-f', '/dev/null', 'new-session', '-d', '-x', '100', '-y', '30', cmd)
    // Pass Shift+Enter on as CSI 27;2;13~ to a program that asks for it (the chat does).
    this.tmux('set-option', '-s', 'extended-keys', 'on')
  }

  /** The pane with its scrollback, wrapped lines joined. */
  screen(): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-')
  }

  /** The pane and its scrollback as the terminal holds them: its rows, with their SGR escapes. */
  rows(): string {
    return this.tmux('capture-pane', '-p', '-e', '-S', '-')
  }

  keys(...keys: string[]): void {
    this.tmux('send-keys', ...keys)
  }

  /** Literal text (no key names), then a pause so that Enter arrives as its own key. */
  async type(text: string): Promise<void> {
    this.tmux('send-keys', '-l', text)
    await sleep(150)
  }

  async waitFor(what: string, predicate: (screen: string) => boolean, timeoutMs = 15_000): Promise<string> {
    const end = Date.now() + timeoutMs
    let screen = ''
    while (Date.now() < end) {
      screen = this.screen()
      if (predicate(screen)) return screen
      await sleep(50)
    }
    throw new Error(`timed out waiting for ${what}; the screen:\n${screen}`)
  }

  kill(): void {
    spawnSync('tmux', ['-S', this.socket, 'kill-server'], {env: terminalEnv()})
  }
}

/** The status line: the last line that names the context use. */
function status(screen: string): string {
  return (
    screen
      .split('\n')
      .filter((l) => /ctx \d+\/\d+/.test(l))
      .at(-1) ?? ''
  )
}
/** The hint line over the status line, if any. */
function hint(screen: string): string {
  const lines = screen.trimEnd().split('\n')
  return lines.at(-2) ?? ''
}
const idle = (s: string) => /decode [\d.-]+ tok\/s$/.test(status(s).trim())
const squash = (s: string) => s.replace(/\s+/g, '')

interface Stats {
  frames: number
  streamFrames: number
  tokens: number
  streamFramesPerToken: number
  stdoutBytes: number
  fullClears: number
}

describe('runner chat in a terminal (tmux)', {skip: SKIP}, () => {
  const slowModel = join(dir, 'slow.gguf')
  before(async () => {
    if (SKIP) return
    // Random weights, big enough that a reply takes seconds (stories260K writes 2000 tokens in well
    // under one), so there is a generation in progress to interrupt. 12 layers, not 4: at 4 the
    // first reply (about 330 tokens, then end of text) was over in 0.4 s on a fast CI run, before the
    // keys that stop it arrived.
    await makeTestModel(slowModel, {
      arch: 'llama',
      nEmbd: 512,
      nLayer: 12,
      nHead: 8,
      nHeadKv: 8,
      nFf: 1376,
      nCtx: 2048,
      type: 'q8_0',
      seed: 3n,
      tokenizerFrom: STORIES,
    })
  })

  test('type, stream, recall, multi-line, /reset, /save (the file matches the screen), Ctrl+D exits 0', async () => {
    const statsFile = join(dir, 'stats1.json')
    const saveFile = join(dir, 'tui.json')
    const t = new Terminal(statsFile)
    try {
      t.start(['-m', STORIES, '--temp', '0', '-n', '24', '-c', '512', '-t', '1'])
      let s = await t.waitFor(
        'the banner and status line',
        (x) => x.includes('runner chat · stories260K') && status(x).includes('ctx 0/512'),
      )
      assert.match(status(s), /^stories260K · ChatML fallback · ctx 0\/512$/)

      await t.type('Hello')
      t.keys('Enter')
      s = await t.waitFor('the first reply', idle)
      assert.ok(s.includes('› Hello'), 'the message is in the transcript')
      const afterFirst = status(s)
      assert.match(afterFirst, /ctx (\d+)\/512 · cached 0 · prompt [\d.]+ tok\/s · decode [\d.]+ tok\/s/)
      assert.match(s, /› Hello\n[^]*\n· \[cut: -n 24 reached\]\n/, 'the reply -n cut is marked')
      assert.ok(!t.rows().includes('\u001B['), `NO_COLOR: no escape on the screen:\n${t.rows()}`)

      // Up recalls the message; Ctrl+U clears it.
      t.keys('Up')
      s = await t.waitFor('the recalled input', (x) => x.trimEnd().split('\n').at(-2)?.trim() === '› Hello')
      t.keys('C-u')
      await t.waitFor('the cleared input', (x) => x.trimEnd().split('\n').at(-2)?.trim() === '›')

      // A trailing backslash, Shift+Enter and Alt+Enter continue the message on a new line.
      await t.type('Line one\\')
      t.keys('Enter')
      await t.type('line two')
      t.keys('S-Enter')
      await t.type('line three')
      t.keys('M-Enter')
      await t.type('line four')
      t.keys('Enter')
      s = await t.waitFor('the second reply', (x) => idle(x) && x.includes('line four') && !status(x).includes(afterFirst.split(' · ')[2]!))
      assert.match(s, /› Line one\n {2}line two\n {2}line three\n {2}line four\n/, 'the four lines of the message')
      const cached = Number(/cached (\d+)/.exec(status(s))![1])
      assert.ok(cached > 0, `the second turn reused the KV cache: ${status(s)}`)

      await t.type('/reset')
      t.keys('Enter')
      s = await t.waitFor('the reset', (x) => x.includes('· conversation reset') && /ctx 0\/512/.test(status(x)))

      await t.type('Tell me a story')
      t.keys('Enter')
      s = await t.waitFor('the reply after /reset', (x) => idle(x) && x.includes('› Tell me a story'))
      assert.match(status(s), /cached 0 /, 'nothing reused after /reset')

      await t.type(`/save ${saveFile}`)
      t.keys('Enter')
      s = await t.waitFor('the save notice', (x) => x.includes('· saved 2 messages'))
      const saved = JSON.parse(readFileSync(saveFile, 'utf8')) as {model: string; messages: Array<{role: string; content: string}>}
      assert.equal(saved.model, 'stories260K')
      assert.deepEqual(
        saved.messages.map((m) => m.role),
        ['user', 'assistant'],
        'only the turn after /reset',
      )
      assert.equal(saved.messages[0]!.content, 'Tell me a story')
      const afterReset = squash(s.slice(s.lastIndexOf('· conversation reset')))
      for (const m of saved.messages) {
        assert.ok(m.content.trim().length > 0)
        assert.ok(
          afterReset.includes(squash(displayText(m.content))),
          `the screen shows the saved ${m.role} message: ${JSON.stringify(m.content)}`,
        )
      }

      t.keys('C-d')
      s = await t.waitFor('the exit', (x) => x.includes('EXIT:'))
      assert.match(s, /EXIT:0/)
      const stats = JSON.parse(readFileSync(statsFile, 'utf8')) as Stats
      assert.equal(stats.tokens, 3 * 24, 'three replies of 24 tokens')
      assert.equal(stats.fullClears, 0, 'the screen was never cleared and redrawn')
      assert.ok(stats.streamFramesPerToken <= 0.5, `frames per token ${stats.streamFramesPerToken}`)
    } finally {
      t.kill()
    }
  })

  test('Esc and Ctrl+C stop a reply in progress (kept, and saved); Ctrl+C twice exits 130', async () => {
    const statsFile = join(dir, 'stats2.json')
    const saveFile = join(dir, 'stopped.json')
    const t = new Terminal(statsFile)
    try {
      t.start(['-m', slowModel, '--temp', '0', '-c', '2048', '-t', '1'])
      await t.waitFor('the banner', (x) => status(x).includes('ctx 0/2048'))
      const generating = (x: string) => {
        const m = /generating (\d+) tok/.exec(status(x))
        return m !== null && Number(m[1]) >= 20
      }
      for (const [message, key] of [
        ['Hello', 'Escape'],
        ['Again', 'C-c'],
      ] as const) {
        await t.type(message)
        t.keys('Enter')
        let s = await t.waitFor(`a reply in progress to ${message}`, generating)
        const live = s.slice(s.lastIndexOf(`› ${message}`) + message.length + 2)
        assert.ok(live.trim().length > 0, 'streamed text is on the screen while the reply is written')
        if (key === 'Escape') {
          // Enter while a reply is written does not send: the text stays, a hint says why.
          await t.type('queued')
          t.keys('Enter')
          s = await t.waitFor('the busy hint', (x) => hint(x).includes('a reply is being written'))
          assert.equal(s.trimEnd().split('\n').at(-3)?.trim(), '› queued')
          t.keys('C-u')
        }
        t.keys(key)
        s = await t.waitFor(
          `the stop (${key})`,
          (x) =>
            /· stopped after \d+ tokens \(kept in the conversation\)/.test(x.slice(x.lastIndexOf(`› ${message}`))) &&
            !/generating/.test(status(x)),
        )
      }
      await t.type(`/save ${saveFile}`)
      t.keys('Enter')
      await t.waitFor('the save notice', (x) => x.includes('· saved 4 messages'))
      const saved = JSON.parse(readFileSync(saveFile, 'utf8')) as {messages: Array<{role: string; content: string}>}
      assert.deepEqual(
        saved.messages.map((m) => m.role),
        ['user', 'assistant', 'user', 'assistant'],
      )
      assert.ok(saved.messages[1]!.content.length > 0 && saved.messages[3]!.content.length > 0, 'the stopped replies are kept')

      t.keys('C-c')
      await t.waitFor('the exit hint', (x) => hint(x).includes('Ctrl+C again exits'))
      t.keys('C-c')
      const s = await t.waitFor('the exit', (x) => x.includes('EXIT:'))
      assert.match(s, /EXIT:130/)
      const stats = JSON.parse(readFileSync(statsFile, 'utf8')) as Stats
      assert.ok(stats.tokens >= 40)
      assert.equal(stats.fullClears, 0, 'the screen was never cleared and redrawn')
      assert.ok(stats.streamFramesPerToken < 0.5, `frames per token ${stats.streamFramesPerToken}`)
      assert.ok(existsSync(statsFile))
    } finally {
      t.kill()
    }
  })
  test('colour without NO_COLOR; live context use; a resize mid-reply redraws each line once at the new width; no cut marker without -n', async () => {
    const saveFile = join(dir, 'resized.json')
    const t = new Terminal(join(dir, 'stats3.json'), true)
    try {
      t.start(['-m', slowModel, '--temp', '0', '-c', '2048', '-t', '1'])
      await t.waitFor('the banner', (x) => status(x).includes('ctx 0/2048'))
      assert.ok(t.rows().includes('\u001B['), 'without NO_COLOR the screen has SGR escapes (so the NO_COLOR check can fail)')

      await t.type('Hello')
      t.keys('Enter')
      // The status line counts the context as the reply is written: prompt plus reply so far.
      const progress = (x: string) => {
        const m = /ctx (\d+)\/2048 · cached \d+ · generating (\d+) tok/.exec(status(x))
        return m ? {ctx: Number(m[1]), generated: Number(m[2])} : undefined
      }
      let s = await t.waitFor('a reply in progress', (x) => (progress(x)?.generated ?? 0) >= 10)
      const first = progress(s)!
      assert.ok(first.ctx > first.generated, `ctx counts the prompt and the reply: ${status(s)}`)
      s = await t.waitFor('the context use growing', (x) => (progress(x)?.ctx ?? 0) > first.ctx)

      // Narrower, mid-reply: the screen is written again at 40 columns, each row once.
      t.tmux('resize-window', '-x', '40')
      const visible = (x: string) => x.split('\n').map((l) => [...l].reduce((n, ch) => n + charWidth(ch), 0))
      s = await t.waitFor('the redraw at 40 columns', (x) => x.startsWith('runner chat · ') && visible(x).every((w) => w <= 40), 30_000)
      const narrow = t.tmux('capture-pane', '-p', '-S', '-')
      assert.equal(narrow.split('\n').filter((l) => l.startsWith('› Hello')).length, 1, `the message once:\n${narrow}`)
      assert.equal(narrow.split('\n').filter((l) => l.startsWith('runner chat')).length, 1, `the banner once:\n${narrow}`)

      // Back to 100 columns (wider: the other way the terminal reflows), then Esc ends the reply (CI
      // time; had it ended by itself first, Esc does nothing): the screen holds it exactly once.
      t.tmux('resize-window', '-x', '100')
      await t.waitFor('the redraw at 100 columns', (x) => x.startsWith('runner chat · slow · no chat template in the model'))
      t.keys('Escape')
      s = await t.waitFor('the end of the reply', idle)
      const final = Number(/ctx (\d+)\/2048/.exec(status(s))![1])
      assert.ok(final > first.ctx, `the final context use ${final} is past the live one`)
      await t.type(`/save ${saveFile}`)
      t.keys('Enter')
      s = await t.waitFor('the save notice', (x) => x.includes('· saved 2 messages'))
      const reply = (JSON.parse(readFileSync(saveFile, 'utf8')) as {messages: Array<{content: string}>}).messages[1]!.content
      const shown = s.slice(s.indexOf('› Hello') + '› Hello'.length, s.indexOf('· saved 2 messages')).split('· stopped after')[0]!
      assert.equal(squash(shown), squash(displayText(reply)), 'the reply on the screen once, with no fragment left by the resizes')
      assert.ok(!s.includes('[cut:'), 'a reply not cut by -n has no cut marker')
      const narrowReply = narrow.slice(narrow.indexOf('› Hello') + '› Hello'.length).split(/\n›/)[0]!
      assert.ok(squash(displayText(reply)).startsWith(squash(narrowReply)), `the 40-column screen held the reply so far, once:\n${narrow}`)
    } finally {
      t.kill()
    }
  })
})
