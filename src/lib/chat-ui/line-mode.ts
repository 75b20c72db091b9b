/**
 * `runner chat` when standard input or output is not a terminal: one message per input line, one
 * answer per output line, so the chat scripts and tests simply. Newlines inside a message or an
 * answer are escaped (escape.ts). Slash commands work as in the UI; what they say goes to stderr, so
 * stdout holds exactly one line per message. Empty lines are skipped.
 */
import {createInterface} from 'node:readline'

import {ExitCode, RunnerError} from '../errors.js'
import {decodeRate} from '../util/index.js'
import {runSlashCommand} from './commands.js'
import type {ChatConversation, TurnResult} from './conversation.js'
import {cutMarker} from './cut-marker.js'
import {escapeLine, unescapeLine} from './escape.js'
import {parseInput} from './slash.js'

export interface LineModeOptions {
  readonly conversation: ChatConversation
  readonly input: NodeJS.ReadableStream
  readonly write: (text: string) => void
  readonly diagnostic: (text: string) => void
  /** One JSON document per answer instead of the escaped text. */
  readonly json: boolean
  /** Raised on Ctrl+C: stops the reply in progress (printed as far as it got) and ends the loop. */
  readonly interrupt?: AbortSignal
}

/** Runs until the input ends or /exit; resolves with the exit code (0, or 130 when interrupted). */
export async function runLineMode(options: LineModeOptions): Promise<number> {
  const {conversation, write, diagnostic, json, interrupt} = options
  const lines = createInterface({input: options.input, crlfDelay: Infinity, terminal: false})
  const onInterrupt = () => lines.close()
  interrupt?.addEventListener('abort', onInterrupt)
  try {
    for await (const raw of lines) {
      if (interrupt?.aborted) break
      const line = unescapeLine(raw.replace(/\r$/, ''))
      if (line.trim() === '') continue
      const parsed = parseInput(line)
      if (parsed.kind === 'command') {
        const outcome = await runSlashCommand(conversation, parsed.command)
        if (!outcome.ok) throw new RunnerError('CHAT_COMMAND_FAILED', outcome.text, ExitCode.usage)
        if (outcome.text) diagnostic(`${outcome.text}\n`)
        if (outcome.exit) break
        continue
      }
      const turn = conversation.send(parsed.text, interrupt)
      if (turn.plan.dropped > 0)
        diagnostic(`runner: dropped the ${turn.plan.dropped} oldest messages to fit the context (--context-shift)\n`)
      for await (const t of turn.stream) if (!json && t.text) write(escapeLine(t.text))
      const result = await turn.result
      write(json ? `${JSON.stringify(answerJson(result))}\n` : '\n')
      // On stderr, after the answer's line: stdout keeps exactly one line per message.
      const cut = cutMarker(result)
      if (cut) diagnostic(`runner: ${cut}\n`)
      if (result.shifts.count > 0)
        diagnostic(
          `runner: the context was full: shifted ${result.shifts.count} time(s), dropping ${result.shifts.discarded} tokens after the system prompt (--context-shift)\n`,
        )
      if (result.finishReason === 'context')
        diagnostic('runner: the reply stopped because the context is full; /reset starts over, --context-shift drops old turns\n')
      if (result.finishReason === 'aborted') return ExitCode.interrupted
    }
  } finally {
    interrupt?.removeEventListener('abort', onInterrupt)
    lines.close()
  }
  return interrupt?.aborted ? ExitCode.interrupted : ExitCode.ok
}

function round(x: number): number {
  return Math.round(x * 10) / 10
}

/** The --json form of one answer (token ids and prompt ids as `runner run --json` names them). */
export function answerJson(r: TurnResult) {
  return {
    text: r.reply,
    tokens: r.tokens,
    finishReason: r.finishReason,
    promptTokens: r.promptTokens,
    cachedTokens: r.cachedTokens,
    evaluatedTokens: r.evaluatedTokens,
    contextUsed: r.contextUsed,
    dropped: r.dropped,
    contextShifts: r.shifts.count,
    seed: r.seed.toString(),
    timings: {
      promptMs: round(r.promptMs),
      decodeMs: round(r.decodeMs),
      promptTokensPerSecond: round((1000 * r.evaluatedTokens) / Math.max(r.promptMs, 1e-9)),
      decodeTokensPerSecond: decodeRate(r.tokens.length, r.decodeMs),
    },
    ...(r.speculation ? {speculation: r.speculation} : {}),
  }
}
