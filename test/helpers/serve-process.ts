// `runner serve` as a process for tests: the compiled CLI spawned on port 0, resolved once it prints
// its startup line with the URL (build first: the CLI runs from dist/).
import {type ChildProcess, spawn} from 'node:child_process'

import {REPO_ROOT} from './shared.js'

export interface Served {
  readonly child: ChildProcess
  readonly url: string
  stderr(): string
  /** Exit code (or signal) once the process ends. */
  readonly exited: Promise<number | string | null>
}

/** Start `runner serve -m MODEL --port 0 ...args`; rejects if it exits first or prints no URL in 30 s. */
export function serveProcess(model: string, args: string[]): Promise<Served> {
  const child = spawn(process.execPath, ['bin/run.js', 'serve', '-m', model, '--port', '0', ...args], {
    cwd: REPO_ROOT,
    env: {...process.env, NO_COLOR: '1'},
  })
  let out = ''
  let err = ''
  // 'close', not 'exit': stderr has been read to its end by then.
  const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no startup line after 30 s; stderr: ${err}`)), 30_000)
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()))
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      if (url) {
        clearTimeout(timer)
        resolve({child, url, stderr: () => err, exited})
      }
    })
    void exited.then((code) => reject(new Error(`serve exited (${code}) before listening: ${err}`)))
  })
}
