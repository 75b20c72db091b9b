/**
 * `runner serve` as a child process for the scripts that load it (load-test.ts, soak.ts): the
 * compiled CLI on a free loopback port, its URL read from the startup line, stopped with SIGTERM.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {dirname, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

export interface ServeProcess {
  readonly child: ChildProcess
  readonly url: string
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>
}

/** Start `runner serve -m MODEL --port 0 ...flags` and wait for its startup line. */
export async function startServeProcess(model: string, flags: readonly string[]): Promise<ServeProcess> {
  const child = spawn(process.execPath, ['bin/run.js', 'serve', '-m', model, '--port', '0', ...flags], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
  const url = await new Promise<string>((resolveUrl, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolveUrl(m[1]!)
    })
    void exited.then((code) => reject(new Error(`runner serve exited with ${code} before listening`)))
  })
  return {
    child,
    url,
    stop: () => {
      child.kill('SIGTERM')
      return exited
    },
  }
}
