/**
 * What `runner serve` does around startServer: its flags that need reading (a template file, the
 * timeout), the warning for an open address without a key, the startup line, and the graceful close
 * on SIGINT or SIGTERM.
 */
import {readFileSync} from 'node:fs'

import {listenForInterrupt} from '../cli/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {type RunningServer, SHUTDOWN_GRACE_MS} from './server.js'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i

/** --timeout: seconds, any positive number. */
export function parseTimeoutFlag(text: string): number {
  const seconds = Number(text)
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new RunnerError('BAD_FLAG', `--timeout ${JSON.stringify(text)} must be a positive number of seconds`, ExitCode.usage)
  return seconds
}

/** --chat-template: "chatml", or the text of the Jinja template file it names. */
export function readTemplateFlag(value: string | undefined): string | undefined {
  if (value === undefined || value === 'chatml') return value
  try {
    return readFileSync(value, 'utf8')
  } catch (error) {
    throw new RunnerError('BAD_FLAG', `--chat-template ${value}: ${(error as Error).message}`, ExitCode.usage)
  }
}

/** The warning for serving beyond loopback without a key, if that is what was asked. */
export function exposureWarning(host: string, apiKey: string | undefined): string | undefined {
  return !LOOPBACK.test(host) && apiKey === undefined
    ? `runner: warning: serving on ${host} without --api-key: anyone who can reach this address can use the model`
    : undefined
}

/** The line a client (or a test) waits for: where it listens and with what. */
export function startupLine(server: RunningServer): string {
  const caps = server.state.capabilities as {
    slots: {parallel: number; n_ctx_per_slot: number; threads_per_slot: number}
    chat_template: {origin: string}
  }
  return (
    `runner serve: listening on ${server.url} · model ${server.state.env.modelId} · ${caps.slots.parallel} slot(s) × ${caps.slots.n_ctx_per_slot} tokens, ` +
    `${caps.slots.threads_per_slot} thread(s) each · chat template ${caps.chat_template.origin}`
  )
}

/**
 * Listen now for SIGINT and SIGTERM; on the first, close gracefully (in-flight requests get
 * SHUTDOWN_GRACE_MS). Resolves once the server is closed. Call it before printing the startup line:
 * a client may signal as soon as it reads that line.
 */
export function closeOnSignal(server: RunningServer, diagnostic: (line: string) => void): Promise<void> {
  const interrupt = listenForInterrupt(['SIGINT', 'SIGTERM'])
  return new Promise<void>((resolve) => {
    interrupt.signal.addEventListener('abort', () => {
      diagnostic(`runner: ${String(interrupt.signal.reason)}: closing (in-flight requests get ${SHUTDOWN_GRACE_MS / 1000} s)`)
      server.close().then(resolve, (error: unknown) => {
        diagnostic(`runner: error while closing: ${(error as Error).message}`)
        resolve()
      })
    })
  })
}
