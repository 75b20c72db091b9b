/**
 * The model files as signed and as mapped: each is hashed through one open descriptor, streamed (a
 * multi-GB shard is never read whole, and the event loop keeps turning between chunks), with its
 * identity (device, inode, size, mtime and ctime in nanoseconds) taken before and after. A file that
 * changes while it is hashed is refused; after the engine maps the files, checkMappedFiles compares
 * each path's identity again, so a file swapped or rewritten between the check and the mapping is
 * refused too (the model is then released, never used).
 */
import {createHash} from 'node:crypto'
import type {BigIntStats} from 'node:fs'
import {open, stat} from 'node:fs/promises'
import {resolve} from 'node:path'

import {quoted} from '../text/index.js'
import {refused} from './errors.js'

export interface FileIdentity {
  readonly dev: bigint
  readonly ino: bigint
  readonly size: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
}

export interface HashedFile {
  /** Absolute path. */
  readonly path: string
  readonly bytes: number
  readonly sha256: string
  readonly identity: FileIdentity
}

export type HashProgress = (done: number, total: number) => void

const CHUNK = 4 << 20

function identityOf(s: BigIntStats): FileIdentity {
  return {dev: s.dev, ino: s.ino, size: s.size, mtimeNs: s.mtimeNs, ctimeNs: s.ctimeNs}
}

/** The first field in which two identities differ, or undefined when they are the same file, unchanged. */
export function identityChange(a: FileIdentity, b: FileIdentity): string | undefined {
  if (a.dev !== b.dev || a.ino !== b.ino) return 'it is another file now (device/inode)'
  if (a.size !== b.size) return `its size changed (${a.size} → ${b.size} bytes)`
  if (a.mtimeNs !== b.mtimeNs) return 'it was modified (mtime)'
  if (a.ctimeNs !== b.ctimeNs) return 'its inode changed (ctime)'
  return undefined
}

/** sha256 and identity of one file, read through one descriptor; refused if it changes meanwhile. */
export async function hashFile(path: string, onBytes?: (n: number) => void): Promise<HashedFile> {
  const abs = resolve(path)
  let handle
  try {
    handle = await open(abs, 'r')
  } catch (error) {
    throw refused(
      `model file ${quoted(path)}`,
      `cannot be opened (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      error,
    )
  }
  try {
    const before = identityOf(await handle.stat({bigint: true}))
    const hash = createHash('sha256')
    const buffer = Buffer.allocUnsafe(CHUNK)
    let position = 0
    for (;;) {
      const {bytesRead} = await handle.read(buffer, 0, CHUNK, position)
      if (bytesRead === 0) break
      hash.update(buffer.subarray(0, bytesRead))
      position += bytesRead
      onBytes?.(bytesRead)
    }
    const after = identityOf(await handle.stat({bigint: true}))
    const pathNow = identityOf(await stat(abs, {bigint: true}))
    const change = identityChange(before, after) ?? identityChange(before, pathNow)
    if (change || BigInt(position) !== before.size)
      throw refused(`model file ${quoted(path)}`, `changed while it was hashed (${change ?? 'size'})`)
    return {path: abs, bytes: position, sha256: hash.digest('hex'), identity: before}
  } finally {
    await handle.close()
  }
}

/** Hash the files one after another (they share one disk), reporting bytes done of the total. */
export async function hashFiles(paths: readonly string[], onProgress?: HashProgress): Promise<HashedFile[]> {
  const sizes = await Promise.all(
    paths.map(async (p) =>
      stat(p)
        .then((s) => s.size)
        .catch(() => 0),
    ),
  )
  const total = sizes.reduce((a, b) => a + b, 0)
  let done = 0
  const out: HashedFile[] = []
  for (const p of paths) {
    out.push(
      await hashFile(p, (n) => {
        done += n
        onProgress?.(done, total)
      }),
    )
  }
  return out
}

/**
 * After the engine has mapped the files: each path must still be the file that was hashed, unchanged.
 * The engine opens the paths itself, so a swap that is undone again inside that window is not seen
 * (closing it needs the engine to map the descriptor that was hashed: docs/model-signing.md).
 */
export async function checkMappedFiles(files: readonly Pick<HashedFile, 'path' | 'identity'>[]): Promise<void> {
  for (const f of files) {
    let now: FileIdentity
    try {
      now = identityOf(await stat(f.path, {bigint: true}))
    } catch (error) {
      throw refused(
        `model file ${quoted(f.path)}`,
        `is gone after its signature was checked (${(error as NodeJS.ErrnoException).code ?? 'stat failed'})`,
        error,
      )
    }
    const change = identityChange(f.identity, now)
    if (change) throw refused(`model file ${quoted(f.path)}`, `changed between the signature check and the mapping: ${change}`)
  }
}
