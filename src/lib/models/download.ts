import {createHash, type Hash, randomBytes} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {link, mkdir, open, readFile, rename, stat, truncate, unlink, writeFile} from 'node:fs/promises'
import {dirname} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {printable, writerGone} from '../util/index.js'
import type {HubClient, HubFile} from './hub-client.js'

/** The name a file has while it downloads: kept on failure or Ctrl+C, so the next pull resumes from it. */
export const partialPath = (path: string) => `${path}.download`

/** The hash the Hub's digest is of: sha256 of the bytes (LFS), or git's blob id (sha1 of `blob N\0` and the bytes). */
function digestHash(file: HubFile): Hash {
  if (file.digest.algorithm === 'sha256') return createHash('sha256')
  return createHash('sha1').update(`blob ${file.bytes}\0`)
}

/** The Hub digest of a file on disk. */
export async function fileDigest(path: string, file: HubFile): Promise<string> {
  return (await hashFile(digestHash(file), path)).digest('hex')
}

/** Feed a file's bytes (up to `end`, exclusive) into `hash`, streamed: a multi-GB shard is never read whole. */
async function hashFile(hash: Hash, path: string, end?: number): Promise<Hash> {
  if (end === 0) return hash
  for await (const c of createReadStream(path, {...(end === undefined ? {} : {end: end - 1}), highWaterMark: 4 << 20}))
    hash.update(c as Buffer)
  return hash
}

/**
 * Download one file to `dest`: into `dest.download`, resumed from what is there with a Range request
 * (the bytes already there are hashed first, so the digest covers the whole file), checked against
 * the Hub's digest, fsynced, and only then renamed to `dest`. A file whose bytes do not hash to the
 * digest is deleted, never published. `onBytes(n)` reports the bytes of this file on disk so far.
 */
export async function downloadFile(
  client: HubClient,
  url: string,
  file: HubFile,
  dest: string,
  onBytes: (n: number) => void,
): Promise<{resumedFrom: number}> {
  await mkdir(dirname(dest), {recursive: true})
  const release = await lockPartial(partialPath(dest), file.path)
  try {
    return await downloadLocked(client, url, file, dest, onBytes)
  } finally {
    await release()
  }
}

/**
 * Two pulls appending to one .download file would interleave their bytes: the second is refused
 * while the first's process lives (`.download.lock` holds its pid); a lock whose process is gone (a
 * kill -9, a power cut) is taken over.
 */
async function lockPartial(part: string, shown: string): Promise<() => Promise<void>> {
  const lock = `${part}.lock`
  // The pid goes into a file of our own first, then link() gives it the lock's name, or fails if the
  // name is taken: the lock never exists without its pid in it.
  const mine = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}`
  await writeFile(mine, String(process.pid))
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await link(mine, lock)
        return () => unlink(lock).catch(() => {})
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        const pid = Number((await readFile(lock, 'utf8').catch(() => '')).trim())
        if (!Number.isSafeInteger(pid) || pid <= 0 || !writerGone(pid))
          throw new RunnerError(
            'PULL_BUSY',
            `${printable(shown)}: another runner pull (pid ${Number.isSafeInteger(pid) && pid > 0 ? pid : '?'}) is downloading this file; wait for it to finish, or stop it and pull again`,
            ExitCode.failure,
          )
        await unlink(lock).catch(() => {})
      }
    }
    throw new RunnerError('PULL_BUSY', `${printable(shown)}: cannot take the download lock ${printable(lock)}`, ExitCode.failure)
  } finally {
    await unlink(mine).catch(() => {})
  }
}

async function downloadLocked(
  client: HubClient,
  url: string,
  file: HubFile,
  dest: string,
  onBytes: (n: number) => void,
): Promise<{resumedFrom: number}> {
  const part = partialPath(dest)
  let have = (await stat(part).catch(() => undefined))?.size ?? 0
  if (have > file.bytes) {
    await truncate(part, 0)
    have = 0
  }
  // The bytes already there are hashed first, so the digest covers the whole file.
  let hash = await hashFile(digestHash(file), part, have)
  const resumedFrom = have
  onBytes(have)
  if (have < file.bytes) {
    const res = await client.getBytes(url, have, file.path)
    if (res.status === 200 && have > 0) {
      // The server ignored the range: the whole file comes again, so start it again.
      await truncate(part, 0)
      have = 0
      hash = digestHash(file)
      onBytes(0)
    } else if (res.status === 206) {
      const start = /^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')
      if (!start || Number(start[1]) !== have) {
        await res.body?.cancel()
        throw new RunnerError(
          'HUB_BAD_ANSWER',
          `${printable(file.path)}: asked for bytes from ${have}, the server sent ${printable(res.headers.get('content-range') ?? 'no Content-Range')}`,
          ExitCode.failure,
        )
      }
    } else if (res.status === 416) {
      // The server says the range starts past the file: the partial bytes are not this file's; start over next time.
      await res.body?.cancel()
      await truncate(part, 0)
      throw new RunnerError(
        'HUB_BAD_ANSWER',
        `${printable(file.path)}: the server refused bytes from ${have} (416); the partial file was cleared, pull again`,
        ExitCode.failure,
      )
    } else if (res.status !== 200) {
      await res.body?.cancel()
      throw new RunnerError('HUB_BAD_ANSWER', `${printable(file.path)}: the server answered ${res.status} to a download`, ExitCode.failure)
    }
    const fh = await open(part, have === 0 ? 'w' : 'r+')
    try {
      for await (const chunk of res.body ?? []) {
        const c = chunk as Uint8Array
        if (have + c.length > file.bytes)
          throw new RunnerError(
            'PULL_SIZE_MISMATCH',
            `${printable(file.path)}: the server sent more than the ${file.bytes} bytes the Hub lists`,
            ExitCode.verificationFailed,
          )
        hash.update(c)
        // At explicit positions: the bytes hashed are the bytes at those offsets, whatever else touched the file.
        for (let done = 0; done < c.length;) done += (await fh.write(c, done, c.length - done, have + done)).bytesWritten
        have += c.length
        onBytes(have)
      }
      await fh.sync()
    } catch (error) {
      if (error instanceof RunnerError || client.aborted) throw error
      // A connection cut mid-body (undici: "terminated"): what arrived is kept for the next pull.
      const why = printable((error as {cause?: {code?: string}}).cause?.code ?? (error as Error).message ?? String(error), {max: 120})
      throw new RunnerError(
        'PULL_INCOMPLETE',
        `${printable(file.path)}: the connection ended at ${have} of ${file.bytes} bytes (${why}); run the same pull again and it resumes from there`,
        ExitCode.failure,
      )
    } finally {
      await fh.close()
    }
  }
  if (have !== file.bytes)
    throw new RunnerError(
      'PULL_INCOMPLETE',
      `${printable(file.path)}: the download stopped at ${have} of ${file.bytes} bytes; run the same pull again and it resumes from there`,
      ExitCode.failure,
    )
  const got = hash.digest('hex')
  if (got !== file.digest.hex) {
    // Resuming from bytes that hash wrong would only repeat the failure: they go.
    await unlink(part).catch(() => {})
    throw new RunnerError(
      'PULL_DIGEST_MISMATCH',
      `${printable(file.path)}: the downloaded bytes have ${file.digest.algorithm} ${got}, the Hub lists ${file.digest.hex}; nothing was kept (run the pull again)`,
      ExitCode.verificationFailed,
    )
  }
  const size = (await stat(part)).size
  if (size !== file.bytes)
    throw new RunnerError(
      'PULL_SIZE_MISMATCH',
      `${printable(file.path)}: the file on disk is ${size} bytes, not ${file.bytes}; pull again`,
      ExitCode.failure,
    )
  await rename(part, dest)
  await syncFolder(dirname(dest))
  return {resumedFrom}
}

async function syncFolder(dir: string): Promise<void> {
  const fh = await open(dir, 'r').catch(() => undefined)
  await fh?.sync().catch(() => {})
  await fh?.close()
}
