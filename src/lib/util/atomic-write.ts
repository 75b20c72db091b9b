import {unlink} from 'node:fs/promises'

import {checkFreeSpace} from './output-path.js'
import {TempFile} from './temp-files.js'

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0o644 less the umask). */
  readonly mode?: number
  /** Refuse to replace an existing file (OUTPUT_EXISTS) instead of replacing it. */
  readonly exclusive?: boolean
}

export interface AtomicFile {
  readonly path: string
  readonly data: string | Uint8Array
  /** File mode (default 0o644 less the umask). */
  readonly mode?: number
}

/**
 * Write `data` to `path` so that a reader (or a crash) sees either the old file or the whole new
 * one: a temporary name in the same folder, fsync, then rename (or, when exclusive, a hard link,
 * which fails instead of replacing an existing file).
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  await writeFilesAtomic([{path, data, mode: options.mode}], {exclusive: options.exclusive})
}

/**
 * Write several files as one: all or none (a key pair's two halves). Every file is written and
 * fsynced under its temporary name first; only then are they published, in order, and when one
 * cannot be, those already published by this call are removed again. A kill between two
 * publications can still leave the first alone (POSIX has no rename of two names at once), which
 * is why the window is as short as two links.
 */
export async function writeFilesAtomic(files: readonly AtomicFile[], options: {readonly exclusive?: boolean} = {}): Promise<void> {
  const temps: TempFile[] = []
  const published: string[] = []
  try {
    for (const f of files) {
      const bytes = typeof f.data === 'string' ? Buffer.from(f.data, 'utf8') : f.data
      await checkFreeSpace(f.path, bytes.length)
      const temp = await TempFile.create(f.path, {mode: f.mode})
      temps.push(temp)
      await temp.write(bytes, 0)
      await temp.sync()
    }
    for (const temp of temps) {
      await temp.publish({exclusive: options.exclusive})
      published.push(temp.target)
    }
  } catch (error) {
    for (const path of published) await unlink(path).catch(() => {})
    for (const temp of temps) await temp.discard()
    throw error
  }
}
