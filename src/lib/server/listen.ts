/**
 * Why `runner serve` cannot listen, in one line that says what to do: the errno codes Node's listen
 * gives, as a table. The address is tried once before the model loads (a large model takes a while
 * to load, only to fail on a port in use) and the real listen reports the same way.
 */
import {createServer} from 'node:net'

import {ExitCode, RunnerError} from '../errors.js'

/** What to do about each errno code; others get Node's own message. */
const LISTEN_HINTS: Readonly<Record<string, (where: string, host: string) => string>> = {
  EADDRINUSE: (where) => `${where}: the port is in use; stop what holds it, choose another --port, or --port 0 for any free port`,
  EACCES: (where) => `${where}: permission denied (ports below 1024 need privileges); choose a --port above 1023, or --port 0`,
  EADDRNOTAVAIL: (where, host) => `${where}: this machine has no address ${host}; give --host an address of one of its interfaces`,
  ENOTFOUND: (where, host) => `${where}: the host name ${host} does not resolve; give --host an address or a known name`,
}

/** A host and port as a URL writes them ([::1]:8080). */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/**
 * The listen error as a RunnerError: SERVE_PORT_IN_USE for a taken port, SERVE_LISTEN otherwise.
 * Exit 1 (failure): the flags were valid, the machine's state is what stops it, and the exit-code
 * table has no code for an unavailable resource.
 */
export function listenError(error: unknown, host: string, port: number): RunnerError {
  const code = (error as NodeJS.ErrnoException).code ?? ''
  const where = `cannot listen on ${hostPort(host, port)}`
  const hint = LISTEN_HINTS[code]
  return new RunnerError(
    code === 'EADDRINUSE' ? 'SERVE_PORT_IN_USE' : 'SERVE_LISTEN',
    hint ? hint(where, host) : `${where}: ${(error as Error).message}`,
    ExitCode.failure,
    {cause: error},
  )
}

/** Bind host:port and let go at once; the refusal as listenError says it. Port 0 always succeeds. */
export async function checkCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error) => reject(listenError(error, host, port)))
    probe.listen({host, port, exclusive: true}, () => probe.close(() => resolve()))
  })
}
