// Shared test helpers: where the repository and the read-only shared data live, and how to run the CLI.
//
// The shared data (models, fixtures, llama.cpp's reference outputs) sits beside the repository as
// `../shared`. Tests that need it call `hasShared()` and skip with a printed reason when it is absent.
// The CLI tests spawn the compiled CLI (`bin/run.js` → dist/), so run `npx tsc -p .` (or `npm test`,
// whose pretest builds) before them.
import {execFile, spawn, spawnSync} from 'node:child_process'
import {existsSync, statSync} from 'node:fs'
import {dirname, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

/** The repository root (this file is test/helpers/shared.ts). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The read-only shared data beside the repository. */
export const SHARED_DIR = resolve(REPO_ROOT, '../shared')

/** True when the shared data is present (a clone elsewhere may not have it). */
export function hasShared(): boolean {
  return existsSync(SHARED_DIR) && statSync(SHARED_DIR).isDirectory()
}

/** A path inside the shared data: `sharedPath('models', 'stories260K.gguf')`. */
export function sharedPath(...parts: string[]): string {
  return resolve(SHARED_DIR, ...parts)
}

/** The reason printed by `t.skip()` when the shared data is missing. */
export const NO_SHARED_REASON = `shared data not found at ${SHARED_DIR}`

export interface CliResult {
  /** Exit status; null if the process was killed by a signal. */
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunCliOptions {
  /** Extra environment variables (merged over process.env). */
  readonly env?: NodeJS.ProcessEnv
  /** Kill the CLI after this many milliseconds (default 60 s). */
  readonly timeoutMs?: number
}

const MAX_BUFFER = 64 << 20

/** The compiled CLI must exist; without it every spawn would fail with a confusing oclif message. */
function requireBuilt(): void {
  if (!existsSync(resolve(REPO_ROOT, 'dist/src/commands'))) {
    throw new Error(`the CLI is not built (no ${resolve(REPO_ROOT, 'dist/src/commands')}): run \`npx tsc -p .\` first`)
  }
}

function cliEnv(opts: RunCliOptions): NodeJS.ProcessEnv {
  // NO_COLOR keeps oclif's output plain, so tests can match text exactly.
  return {...process.env, NO_COLOR: '1', ...opts.env}
}

/** Run the compiled CLI (`node bin/run.js ...args`) from the repository root and wait for it. */
export function runCli(args: string[], opts: RunCliOptions = {}): CliResult {
  requireBuilt()
  const r = spawnSync(process.execPath, ['bin/run.js', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: cliEnv(opts),
    maxBuffer: MAX_BUFFER,
    timeout: opts.timeoutMs ?? 60_000,
  })
  if (r.error) throw r.error
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

/** Like runCli, but does not block, so several CLI runs can proceed in parallel. */
export function runCliAsync(args: string[], opts: RunCliOptions = {}): Promise<CliResult> {
  requireBuilt()
  return new Promise((resolvePromise, reject) => {
    execFile(
      process.execPath,
      ['bin/run.js', ...args],
      {cwd: REPO_ROOT, encoding: 'utf8', env: cliEnv(opts), maxBuffer: MAX_BUFFER, timeout: opts.timeoutMs ?? 60_000},
      (error, stdout, stderr) => {
        // A nonzero exit is a result, not an error; only a failure to run at all (or a kill) rejects.
        if (error && typeof error.code !== 'number') {
          reject(error)
          return
        }
        resolvePromise({status: error ? (error.code as unknown as number) : 0, stdout, stderr})
      },
    )
  })
}

/** Run the CLI with `input` on a pipe as standard input (chat's line mode); killed after 60 s. */
export function runCliWithInput(args: string[], input: string): Promise<CliResult> {
  requireBuilt()
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['bin/run.js', ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1'}})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolvePromise({status, stdout, stderr})
    })
    child.stdin.end(input)
  })
}
