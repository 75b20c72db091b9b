/**
 * `keep_alive` as Ollama takes it: how long a model stays loaded after a request. A number is
 * seconds; a string is a Go duration ("5m", "1h30m", "300ms", "-1m") or a bare number of seconds; 0
 * unloads the model once the request is done; any negative value keeps it loaded until the server
 * stops. The server's default is --keep-alive, in the same spelling.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {badParam} from './api-error.js'

/** Milliseconds to stay loaded after the last request, or 'forever'. */
export type KeepAlive = number | 'forever'

const UNIT_MS: Readonly<Record<string, number>> = {ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000}
const GO_DURATION = /^([-+]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/
const PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g

/** Node's timers hold at most 2^31 - 1 ms; a longer keep_alive is as good as forever while the server runs. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** The keep_alive a value means, or undefined when the text is not one (the caller names the field). */
export function parseKeepAlive(value: unknown): KeepAlive | undefined {
  let ms: number
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined
    ms = value * 1000
  } else if (typeof value === 'string') {
    const text = value.trim()
    if (/^[-+]?\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000
    else {
      const m = GO_DURATION.exec(text)
      if (!m) return undefined
      ms = 0
      for (const [, amount, unit] of m[2]!.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit!]!
      if (m[1] === '-') ms = -ms
    }
  } else return undefined
  if (ms < 0 || ms > MAX_TIMER_MS) return 'forever'
  return Math.round(ms)
}

/** A request's `keep_alive` (undefined: the server's default); 400 naming the field when it is not a duration. */
export function requestKeepAlive(value: unknown): KeepAlive | undefined {
  if (value === undefined || value === null) return undefined
  const k = parseKeepAlive(value)
  if (k === undefined)
    throw badParam(
      'keep_alive',
      `keep_alive = ${JSON.stringify(value)} must be a number of seconds or a duration such as "5m", "1h30m", "0" (unload after this request) or "-1" (keep loaded)`,
    )
  return k
}

/** --keep-alive's value; exit 2 naming the flag when it is not a duration. */
export function keepAliveFlag(text: string): KeepAlive {
  const k = parseKeepAlive(text)
  if (k === undefined)
    throw new RunnerError(
      'SERVE_BAD_OPTION',
      `--keep-alive ${JSON.stringify(text)} must be a number of seconds or a duration such as "5m", "1h", "0" or "-1" (forever)`,
      ExitCode.usage,
    )
  return k
}

/** The time a keep_alive ends, as Ollama's /api/ps `expires_at` shows it (forever: far in the future). */
export function expiresAt(lastUsed: number, keep: KeepAlive): string {
  return keep === 'forever' ? FOREVER : new Date(lastUsed + keep).toISOString()
}

/** What /api/ps shows for a model that never expires (Ollama shows a date far ahead too). */
export const FOREVER = '9999-12-31T23:59:59Z'

/** keep_alive as a request or the capabilities would spell it. */
export function describeKeepAlive(k: KeepAlive): string {
  return k === 'forever' ? '-1' : `${k / 1000}s`
}
