import {readFileSync, writeFileSync} from 'node:fs'
import {basename} from 'node:path'

import {Flags} from '@oclif/core'
import {render} from 'ink'

import {ChatTemplate} from '../lib/chat/index.js'
import {ChatApp, ChatConversation, type RenderStats, runLineMode} from '../lib/chat-ui/index.js'
import {RunnerCommand} from '../lib/cli/runner-command.js'
import {samplingFlags, samplingFromFlags} from '../lib/cli/sampling-flags.js'
import {Model, Session} from '../lib/engine/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {formatBytes} from '../lib/util/format.js'

export default class Chat extends RunnerCommand {
  static override summary = 'Chat with a GGUF model in the terminal.'
  static override description =
    'An interactive chat (Ink): the conversation above, an input line below, replies streamed as they are generated, and a ' +
    'status line with the model, context use, cached tokens and the last turn\'s prompt and decode speed. Each turn ' +
    "renders the whole history through the model's chat template (ChatML when it has none) and evaluates only what is " +
    'new: the earlier turns come from the KV cache. Enter sends; Shift+Enter, Alt+Enter or a trailing backslash adds a ' +
    'line; Up/Down recall earlier inputs; Esc or Ctrl+C stops a reply; Ctrl+C twice or Ctrl+D exits; /help lists the ' +
    'slash commands (/reset, /system, /save, /load, /params, /exit).\n\n' +
    'When standard input or output is not a terminal (or with --json), it reads one message per line and writes one ' +
    'answer per line; a newline inside a message or an answer is written \\n and a backslash \\\\ (docs/chat.md).'

  static override examples = [
    {description: 'Chat (greedy, short replies)', command: '<%= config.bin %> chat -m ../shared/models/stories260K.gguf --temp 0 -n 48'},
    {description: 'With a system prompt, dropping the oldest turns when the context is full', command: '<%= config.bin %> chat -m model.gguf --system "You are terse." --context-shift'},
    {description: 'Scripted: one message per line in, one answer per line out', command: 'printf "Hi\\nTell me a story\\n" | <%= config.bin %> chat -m model.gguf --temp 0 -n 32'},
    {description: 'One JSON document per answer (token ids, cached tokens, timings)', command: 'echo "Hi" | <%= config.bin %> chat -m model.gguf --json'},
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
    system: Flags.string({description: 'system prompt', helpValue: 'TEXT'}),
    'n-predict': Flags.integer({char: 'n', description: 'most tokens per reply; -1 = until the end of the reply or a full context', default: -1, min: -1}),
    'ctx-size': Flags.integer({char: 'c', description: "context size in tokens (default: the model's, at most 4096)", min: 1}),
    'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step while reading a prompt', default: 512, min: 1}),
    ...samplingFlags,
    threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
    'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: 'f16'}),
    'context-shift': Flags.boolean({description: 'when a message does not fit the context, drop the oldest turns (default: refuse it and say so)'}),
    'chat-template': Flags.string({description: '"chatml", or a file holding a Jinja chat template (default: the model\'s own)', helpValue: 'chatml|FILE'}),
    json: Flags.boolean({description: 'line mode with one JSON document per answer: text, tokens, promptTokens, cachedTokens, finishReason, timings'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Chat)
    const sampling = samplingFromFlags(flags)
    const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && !flags.json
    const override = flags['chat-template'] === undefined || flags['chat-template'] === 'chatml' ? flags['chat-template'] : readTemplate(flags['chat-template'])

    const model = await Model.load(flags.model, {onProgress: interactive ? progressLine : undefined})
    const template = ChatTemplate.forModel(model.gguf, model.tokenizer, override)
    const nCtx = flags['ctx-size'] ?? Math.min(model.config.nCtxTrain, 4096)
    const ctx = await model.createContext({nCtx, nBatch: flags['batch-size'], threads: flags.threads, kvType: flags['kv-type'] as 'f16' | 'f32'})
    const modelName = basename(flags.model).replace(/(-\d{5}-of-\d{5})?\.gguf$/i, '')
    const conversation = new ChatConversation({
      tokenizer: model.tokenizer,
      template,
      session: new Session(ctx),
      nCtx,
      contextShift: flags['context-shift'],
      params: {sampling, maxTokens: flags['n-predict']},
      ...(flags.system === undefined ? {} : {system: flags.system}),
      modelName,
    })

    let code: number
    try {
      code = interactive ? await runInteractive(conversation, modelName, template.origin, nCtx) : await runLines(conversation, flags.json)
    } finally {
      // A reply still being generated (exit or an error mid-turn) must end before its context goes.
      await conversation.stop()
      ctx.dispose()
      model.dispose()
    }
    if (code !== ExitCode.ok) this.exit(code)
  }
}

function readTemplate(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new RunnerError('CHAT_TEMPLATE_FILE', `cannot read the chat template ${file}: ${(error as Error).message}`, ExitCode.usage)
  }
}

async function runLines(conversation: ChatConversation, json: boolean): Promise<number> {
  const interrupt = new AbortController()
  const onSigint = () => interrupt.abort()
  process.on('SIGINT', onSigint)
  try {
    return await runLineMode({
      conversation,
      input: process.stdin,
      write: (s) => process.stdout.write(s),
      diagnostic: (s) => process.stderr.write(s),
      json,
      interrupt: interrupt.signal,
    })
  } finally {
    process.removeListener('SIGINT', onSigint)
  }
}

async function runInteractive(conversation: ChatConversation, modelName: string, origin: ChatTemplate['origin'], nCtx: number): Promise<number> {
  const stats: RenderStats = {frames: 0, streamFrames: 0, tokens: 0, generating: false}
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
  // A signal from outside (kill -INT/-TERM): leave the screen clean.
  const onSignal = () => {
    code = ExitCode.interrupted
    void conversation.stop().then(() => instance.unmount())
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  try {
    await instance.waitUntilExit()
  } finally {
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
    output?.restore()
  }
  if (statsFile && output) {
    const {frames, streamFrames, tokens} = stats
    writeFileSync(
      statsFile,
      `${JSON.stringify({frames, streamFrames, tokens, streamFramesPerToken: tokens ? streamFrames / tokens : 0, stdoutBytes: output.bytes, fullClears: output.clears})}\n`,
    )
  }
  return code
}

/** RUNNER_CHAT_STATS: count what reaches the terminal (bytes, and full-screen clears, which would redraw history). */
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

function progressLine(done: number, total: number): void {
  if (!process.stderr.isTTY) return
  process.stderr.write(`\rloading ${((100 * done) / Math.max(total, 1)).toFixed(0)}% (${formatBytes(done)} of ${formatBytes(total)})`)
  if (done >= total) process.stderr.write('\r\u001B[K')
}
