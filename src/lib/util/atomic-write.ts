import {randomBytes} from 'node:crypto'
import {link, open, rename, unlink} from 'node:fs/promises'
import {basename, dirname, join, resolve} from 'node:path'

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0o644 less the umask). */
  readonly mode?: number
  /** Refuse to replace an existing file (EEXIST) instead of replacing it. */
  readonly exclusive?: boolean
}

/**
 * Write `data` to `path` so that a reader (or a crash) sees either the old file or the whole new
 * one: a temporary name in the same folder, fsync, then rename (or, when exclusive, a hard link,
 * which fails instead of replacing an existing file).
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const target = resolve(path)
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  const fh = await open(tmp, 'wx', options.mode ?? 0o644)
  try {
    await fh.writeFile(data)
    await fh.sync()
    await fh.close()
    if (options.exclusive) {
      await link(tmp, target)
      await unlink(tmp)
    } else {
      await rename(tmp, target)
    }
  } catch (error) {
    await fh.close().catch(() => {})
    await unlink(tmp).catch(() => {})
    throw error
  }
}
