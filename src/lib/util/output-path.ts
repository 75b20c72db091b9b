import {constants as fsConstants} from 'node:fs'
import {access, stat, statfs} from 'node:fs/promises'
import {dirname, resolve} from 'node:path'

import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'
import {formatBytes} from './format.js'

/**
 * Where a command writes a file: checked before the work starts (a folder, a missing folder, no
 * permission, a read-only filesystem, an existing file that may not be replaced, too little space),
 * and the filesystem's failures while writing, as RunnerErrors that name the path and the errno code.
 */

interface WriteFailure {
  readonly code: string
  readonly what: string
  readonly exitCode: ExitCodeValue
  /** What to do about it. */
  readonly fix: string
}

const usage = ExitCode.usage
const failure = ExitCode.failure

/** errno code → what it means for a file being written. The user's choice of path is a usage error (2); the machine's state is a failure (1). */
export const WRITE_FAILURES: Readonly<Record<string, WriteFailure>> = {
  ENOSPC: {
    code: 'OUTPUT_NO_SPACE',
    what: 'no space left on the device',
    exitCode: failure,
    fix: 'free some space or write to another disk',
  },
  EDQUOT: {code: 'OUTPUT_QUOTA', what: 'the disk quota is used up', exitCode: failure, fix: 'free some space or write to another disk'},
  EFBIG: {
    code: 'OUTPUT_TOO_LARGE',
    what: 'the file is larger than the filesystem or the process limit (ulimit -f) allows',
    exitCode: failure,
    fix: 'write to another filesystem or raise the limit',
  },
  EIO: {code: 'OUTPUT_IO', what: 'the device reported an I/O error', exitCode: failure, fix: 'check the disk, or write to another one'},
  EROFS: {code: 'OUTPUT_READ_ONLY', what: 'the filesystem is read-only', exitCode: usage, fix: 'write to another folder'},
  EACCES: {code: 'OUTPUT_NO_PERMISSION', what: 'permission denied', exitCode: usage, fix: 'write to a folder you may write to'},
  EPERM: {code: 'OUTPUT_NO_PERMISSION', what: 'operation not permitted', exitCode: usage, fix: 'write to a folder you may write to'},
  EISDIR: {code: 'OUTPUT_IS_DIRECTORY', what: 'it is a folder', exitCode: usage, fix: 'give a file name (inside that folder, if you like)'},
  ENOENT: {
    code: 'OUTPUT_NO_FOLDER',
    what: 'its folder does not exist',
    exitCode: usage,
    fix: 'create the folder first, or choose another path',
  },
  ENOTDIR: {code: 'OUTPUT_NO_FOLDER', what: 'a part of its path is not a folder', exitCode: usage, fix: 'choose another path'},
  ENAMETOOLONG: {code: 'OUTPUT_BAD_PATH', what: 'the name is too long', exitCode: usage, fix: 'choose a shorter path'},
  EEXIST: {code: 'OUTPUT_EXISTS', what: 'a file of that name appeared while writing', exitCode: usage, fix: 'nothing was replaced'},
}

/** A filesystem error while writing `path` as the RunnerError of WRITE_FAILURES; anything else is returned as it is. */
export function writeError(error: unknown, path: string): unknown {
  if (error instanceof RunnerError) return error
  const errno = (error as NodeJS.ErrnoException | undefined)?.code
  if (typeof errno !== 'string') return error
  const f = WRITE_FAILURES[errno] ?? {
    code: 'OUTPUT_WRITE_FAILED',
    what: (error as Error).message,
    exitCode: failure,
    fix: 'nothing was written',
  }
  return new RunnerError(f.code, `cannot write ${path}: ${f.what} (${errno}); ${f.fix}`, f.exitCode, {cause: error})
}

export interface OutputPathOptions {
  /** An existing file there may be replaced (quantize --force); otherwise it is refused (OUTPUT_EXISTS). */
  readonly replace: boolean
  /** How the message tells the user to allow a replacement (default: --force). */
  readonly replaceHint?: string
}

const refuse = (code: string, message: string) => new RunnerError(code, message, ExitCode.usage)

/**
 * Refuse a path that cannot take the output, before any work: a folder, something that is not a
 * regular file (a device, a pipe: the rename would replace it), an existing file unless `replace`,
 * a folder that does not exist or is not one, a folder without write permission or on a read-only
 * filesystem. Returns whether a file is there now (it will be replaced).
 */
export async function checkOutputPath(path: string, options: OutputPathOptions): Promise<{readonly exists: boolean}> {
  const target = resolve(path)
  const existing = await stat(target).catch((error: NodeJS.ErrnoException) => {
    // Missing, or a part of the path is a file: the folder check below names which.
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return undefined
    throw writeError(error, target)
  })
  if (existing?.isDirectory()) throw refuse('OUTPUT_IS_DIRECTORY', `${target} is a folder; give a file name (inside it, if you like)`)
  if (existing && !existing.isFile())
    throw refuse('OUTPUT_NOT_A_FILE', `${target} exists and is not a regular file (a device, pipe or socket); choose another path`)
  if (existing && !options.replace)
    throw refuse(
      'OUTPUT_EXISTS',
      `${target} already exists; pass ${options.replaceHint ?? '--force'} to replace it, or choose another path`,
    )
  const dir = dirname(target)
  const folder = await stat(dir).catch(() => undefined)
  if (!folder)
    throw refuse('OUTPUT_NO_FOLDER', `the folder ${dir} does not exist; create it first (mkdir -p ${dir}), or choose another path`)
  if (!folder.isDirectory()) throw refuse('OUTPUT_NO_FOLDER', `${dir} is not a folder; choose another path for ${target}`)
  await access(dir, fsConstants.W_OK | fsConstants.X_OK).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EROFS')
      throw refuse('OUTPUT_READ_ONLY', `cannot write ${target}: ${dir} is on a read-only filesystem (EROFS); write to another folder`)
    throw refuse(
      'OUTPUT_NO_PERMISSION',
      `cannot write ${target}: no permission to create files in ${dir} (${error.code}); write to another folder`,
    )
  })
  return {exists: existing !== undefined}
}

/** Refuse (OUTPUT_NO_SPACE) when the target's filesystem has fewer than `bytes` free for us; silent where statfs is not available. */
export async function checkFreeSpace(path: string, bytes: number): Promise<void> {
  const target = resolve(path)
  const fs = await statfs(dirname(target)).catch(() => undefined)
  // Some filesystems (FUSE, pseudo filesystems) report no size at all: nothing to go by.
  if (!fs || Number(fs.blocks) === 0) return
  const free = Number(fs.bavail) * Number(fs.bsize)
  if (free < bytes) {
    throw new RunnerError(
      'OUTPUT_NO_SPACE',
      `cannot write ${target}: it needs ${formatBytes(bytes)} and its filesystem has ${formatBytes(free)} free (ENOSPC); free some space or write to another disk`,
      ExitCode.failure,
    )
  }
}

/**
 * The error of a write stopped by Ctrl+C (exit 130), saying what happened to each file: the partial
 * temporary file removed (when there was one), the target unchanged or not written.
 */
export function interruptedWrite(target: string, state: {readonly removedTemp?: string; readonly targetExisted: boolean}): RunnerError {
  const removed = state.removedTemp ? `removed the partial output ${state.removedTemp}; ` : ''
  const kept = state.targetExisted ? `${target} is unchanged` : `${target} was not written`
  return new RunnerError('INTERRUPTED', `interrupted: ${removed}${kept}`, ExitCode.interrupted)
}
