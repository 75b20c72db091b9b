import {randomBytes} from 'node:crypto'
import {constants as fsConstants} from 'node:fs'
import {type FileHandle, link, lstat, open, readdir, rename, unlink} from 'node:fs/promises'
import {basename, dirname, join, resolve} from 'node:path'

import {writeError} from './output-path.js'

/**
 * Our temporary files. Every writer (GGUF models, receipts, key pairs, base logits) writes
 * `.NAME.PID.RANDHEX.tmp` beside its target NAME, fsyncs it, then publishes it under NAME with one
 * rename (or link), so a reader or a crash sees the old file or the whole new one. A kill inside
 * that window leaves the temporary file behind; the next write into the same folder removes ours
 * whose writer is gone (ESRCH) and that nothing has written for STALE_AFTER_MS. Nothing else is
 * touched: not a name outside the pattern, not a file whose process is alive (or may be: EPERM),
 * not this process's own, not anything but a plain file. The age matters where pids do not: a
 * writer in another container's pid namespace, or on another host sharing the folder, looks gone to
 * kill(pid, 0), but it writes its file as it goes, so its file is never ten minutes old.
 */
export const STALE_AFTER_MS = 10 * 60 * 1000

const TEMP_NAME = /^\.(.+)\.([1-9]\d{0,9})\.([0-9a-f]{8})\.tmp$/

/** The temporary name for `target`: same folder, so the final rename never crosses a filesystem. */
export function tempPathFor(target: string): string {
  const path = resolve(target)
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

/** The target name and writer pid of one of our temporary files, or undefined for any other name. */
export function parseTempName(name: string): {readonly target: string; readonly pid: number} | undefined {
  const m = TEMP_NAME.exec(name)
  return m ? {target: m[1]!, pid: Number(m[2])} : undefined
}

/** True only when no process has this pid: signal 0 checks without sending anything (a lock's or a temporary file's writer). */
export function writerGone(pid: number): boolean {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/** Remove the temporary files of ours in `dir` whose writer process is gone; returns their paths. */
export async function removeStaleTempFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[])
  const removed: string[] = []
  for (const name of names) {
    const temp = parseTempName(name)
    if (!temp || !writerGone(temp.pid)) continue
    const path = join(dir, name)
    const st = await lstat(path).catch(() => undefined)
    if (!st?.isFile() || Date.now() - st.mtimeMs < STALE_AFTER_MS) continue
    try {
      await unlink(path)
      removed.push(path)
    } catch {
      // Another run removed it first: losing that race is fine.
    }
  }
  return removed
}

/**
 * One temporary file on its way to `target`: created exclusively (after removing stale ones of ours
 * in the folder), written, published or discarded. Failures of the filesystem become RunnerErrors
 * naming the target and the errno code (output-path.ts writeError).
 */
export class TempFile {
  private handle: FileHandle | undefined

  private constructor(
    readonly target: string,
    readonly path: string,
    handle: FileHandle,
  ) {
    this.handle = handle
  }

  static async create(target: string, options: {readonly mode?: number} = {}): Promise<TempFile> {
    const path = resolve(target)
    await removeStaleTempFiles(dirname(path))
    const temp = tempPathFor(path)
    try {
      const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL
      return new TempFile(path, temp, await open(temp, flags, options.mode ?? 0o644))
    } catch (error) {
      throw writeError(error, path)
    }
  }

  /** Write all of `bytes` at `position`. */
  async write(bytes: Uint8Array, position: number): Promise<void> {
    const fh = this.handleOrThrow()
    try {
      for (let done = 0; done < bytes.length;) {
        const {bytesWritten} = await fh.write(bytes, done, bytes.length - done, position + done)
        done += bytesWritten
      }
    } catch (error) {
      throw writeError(error, this.target)
    }
  }

  /** fsync and close: the bytes are on the disk, under the temporary name. */
  async sync(): Promise<void> {
    const fh = this.handleOrThrow()
    try {
      await fh.sync()
      this.handle = undefined
      await fh.close()
    } catch (error) {
      throw writeError(error, this.target)
    }
  }

  /**
   * Give the file its real name (after sync(), which it does itself if not yet done): rename over any
   * file there, or, when exclusive, a hard link that fails (OUTPUT_EXISTS) rather than replace one.
   * Then fsync the folder, which makes the rename itself durable (some filesystems refuse that; harmless).
   */
  async publish(options: {readonly exclusive?: boolean} = {}): Promise<void> {
    if (this.handle) await this.sync()
    try {
      if (options.exclusive) await linkExclusive(this.path, this.target)
      else await rename(this.path, this.target)
    } catch (error) {
      throw writeError(error, this.target)
    }
    await syncDirectory(dirname(this.target))
  }

  /** Close and remove the temporary file; never throws (it runs on the way out of a failure). */
  async discard(): Promise<void> {
    await this.handle?.close().catch(() => {})
    this.handle = undefined
    await unlink(this.path).catch(() => {})
  }

  private handleOrThrow(): FileHandle {
    if (!this.handle) throw new Error(`${this.path} is already closed`)
    return this.handle
  }
}

/** Errors of link() on filesystems without hard links (FAT, some network and FUSE mounts). */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'])

/**
 * Publish `temp` as `target` unless a file is there: link() does it atomically; where the filesystem
 * has no hard links, a rename after checking the name is free (a race with another writer's file
 * appearing in between is the price there).
 */
async function linkExclusive(temp: string, target: string): Promise<void> {
  try {
    await link(temp, target)
  } catch (error) {
    if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error
    const taken = await lstat(target).catch(() => undefined)
    if (taken) throw Object.assign(new Error(`${target} exists`), {code: 'EEXIST'})
    await rename(temp, target)
    return
  }
  await unlink(temp)
}

async function syncDirectory(dir: string): Promise<void> {
  const fh = await open(dir, 'r').catch(() => undefined)
  if (!fh) return
  await fh.sync().catch(() => {})
  await fh.close()
}
