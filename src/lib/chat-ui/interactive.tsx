/**
 * `runner chat` on a terminal: the Ink app over a conversation, leaving the screen clean on a signal
 * from outside, and (RUNNER_CHAT_STATS) a count of frames and terminal bytes for the render tests.
 */
import {writeFileSync} from 'node:fs'

import {render} from 'ink'

import type {ChatTemplate} from '../chat/index.js'
import {listenForInterrupt} from '../cli/index.js'
import {ExitCode} from '../errors.js'
import {ChatApp, type RenderStats} from './app.js'
import {chatColor} from './color.js'
import type {ChatConversation} from './conversation.js'

export async function runInteractive(
  conversation: ChatConversation,
  modelName: string,
  origin: ChatTemplate['origin'],
  nCtx: number,
): Promise<number> {
  const stats: RenderStats = {frames: 0, streamFrames: 0, tokens: 0, generating: false, redraws: 0}
  const statsFile = process.env.RUNNER_CHAT_STATS
  const output = statsFile ? countOutput() : undefined
  let code = ExitCode.ok as number
  const instance = render(
    <ChatApp
      conversation={conversation}
      modelName={modelName}
      templateOrigin={origin}
      nCtx={nCtx}
      stats={stats}
      color={chatColor()}
      onExit={(c) => {
        code = c
      }}
    />,
    {
      exitOnCtrlC: false,
      // Ink 6.8's incremental mode left stale input lines behind after <Static> output (seen in tmux);
      // the standard mode rewrites only the live area, which is a few lines, so it costs little.
      incrementalRendering: false,
      maxFps: 30,
      kittyKeyboard: {mode: 'auto'},
      onRender: () => {
        stats.frames++
        if (stats.generating) stats.streamFrames++
      },
    },
  )
  // A signal from outside (kill -INT/-TERM; Ctrl+C on the keyboard is a key here): leave the screen clean.
  const interrupt = listenForInterrupt(['SIGINT', 'SIGTERM'])
  interrupt.signal.addEventListener('abort', () => {
    code = ExitCode.interrupted
    void conversation.stop().then(() => instance.unmount())
  })
  try {
    await instance.waitUntilExit()
  } finally {
    interrupt.dispose()
    output?.restore()
  }
  if (statsFile && output) {
    const {frames, streamFrames, tokens, redraws} = stats
    writeFileSync(
      statsFile,
      `${JSON.stringify({frames, streamFrames, tokens, streamFramesPerToken: tokens ? streamFrames / tokens : 0, stdoutBytes: output.bytes, fullClears: output.clears - redraws, redraws})}\n`,
    )
  }
  return code
}

/**
 * RUNNER_CHAT_STATS: count what reaches the terminal: bytes, and full-screen clears (Ink's fallback
 * that rewrites history; the chat's own redraws after a resize are counted apart, in RenderStats).
 */
function countOutput(): {bytes: number; clears: number; restore: () => void} {
  const original = process.stdout.write.bind(process.stdout)
  const counter = {
    bytes: 0,
    clears: 0,
    restore: () => {
      process.stdout.write = original
    },
  }
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
    counter.bytes += Buffer.byteLength(text)
    if (text.includes('\u001B[2J') || text.includes('\u001Bc')) counter.clears++
    return (original as (...a: unknown[]) => boolean)(chunk, ...rest)
  }) as typeof process.stdout.write
  return counter
}
