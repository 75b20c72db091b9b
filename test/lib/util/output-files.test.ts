/**
 * The writers' shared file handling (src/lib/util/temp-files.ts, output-path.ts, atomic-write.ts):
 * stale temporary files of ours removed by the next write into their folder (and nothing else),
 * several files published as one, and the filesystem's errno codes as RunnerErrors. Anchors outside
 * our code: process liveness as the kernel reports it (a child that has exited, this process), the
 * errno names of os.constants, and the files actually on disk.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync} from 'node:fs'
import {constants as osConstants} from 'node:os'
import {join} from 'node:path'
import {describe, test} from 'node:test'

import {freshDirs} from '../../helpers/fresh-dirs.js'
import {ExitCode, RunnerError} from '../../../src/lib/errors.js'
import {writeError, writeFileAtomic, writeFilesAtomic} from '../../../src/lib/util/index.js'

const {freshDir} = freshDirs('runner-output-files-')

/** The pid of a process that has exited: the kernel says no such process (checked, since pids are reused). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', ''])
  assert.equal(r.status, 0)
  assert.throws(() => process.kill(r.pid!, 0), {code: 'ESRCH'}, 'the child is gone')
  return r.pid!
}

describe('stale temporary files', () => {
  test('the next write into the folder removes ours whose writer is gone, and nothing else', async () => {
    const dir = freshDir()
    const dead = deadPid()
    const stale = [`.alice.key.${dead}.0123abcd.tmp`, `.model.gguf.${dead}.deadbeef.tmp`]
    const kept = [
      `.alice.key.${process.pid}.0123abcd.tmp`, // its writer (this process) is alive
      `.alice.key.${dead}.0123ABCD.tmp`, // not our hex
      `.alice.key.${dead}.0123abc.tmp`, // 7 digits, not 8
      `alice.key.${dead}.0123abcd.tmp`, // no leading dot
      `.alice.key.${dead}.0123abcd.tmp.bak`, // something after .tmp
      `.alice.key.x${dead}.0123abcd.tmp`, // not a pid
      'notes.txt',
    ]
    // Nothing has written them for an hour; one like the stale ones but written a minute ago is kept
    // (its writer may live in another pid namespace).
    const hourAgo = new Date(Date.now() - 3600_000)
    for (const name of [...stale, ...kept]) {
      writeFileSync(join(dir, name), 'secret')
      utimesSync(join(dir, name), hourAgo, hourAgo)
    }
    const recent = `.recent.gguf.${dead}.0123abcd.tmp`
    writeFileSync(join(dir, recent), 'being written')
    utimesSync(join(dir, recent), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000))
    kept.push(recent)
    mkdirSync(join(dir, `.folder.${dead}.00000000.tmp`)) // the pattern, but a folder: never ours
    await writeFileAtomic(join(dir, 'r.json'), '{}')
    assert.deepEqual(readdirSync(dir).sort(), [...kept, `.folder.${dead}.00000000.tmp`, 'r.json'].sort())
  })
})

describe('writeFilesAtomic', () => {
  test('all or none: when the second cannot be published, the first is removed again and no temporary file stays', async () => {
    const dir = freshDir()
    writeFileSync(join(dir, 'k.pub'), 'old public key')
    await assert.rejects(
      writeFilesAtomic(
        [
          {path: join(dir, 'k.key'), data: 'new private key', mode: 0o600},
          {path: join(dir, 'k.pub'), data: 'new public key'},
        ],
        {exclusive: true},
      ),
      (e: unknown) => e instanceof RunnerError && e.code === 'OUTPUT_EXISTS',
    )
    assert.deepEqual(readdirSync(dir), ['k.pub'])
    assert.equal(readFileSync(join(dir, 'k.pub'), 'utf8'), 'old public key')
  })

  test('both published, with their modes', async () => {
    const dir = freshDir()
    await writeFilesAtomic([
      {path: join(dir, 'k.key'), data: 'private', mode: 0o600},
      {path: join(dir, 'k.pub'), data: 'public'},
    ])
    assert.deepEqual(readdirSync(dir).sort(), ['k.key', 'k.pub'])
    assert.equal(statSync(join(dir, 'k.key')).mode & 0o777, 0o600)
    assert.ok(existsSync(join(dir, 'k.pub')))
  })
})

describe('writeError: errno codes while writing', () => {
  // Written here from the errno meanings, not copied from the module: a path the user chose is a
  // usage error (2), the machine's state a failure (1).
  const CASES: Array<[errno: string, code: string, exit: number]> = [
    ['ENOSPC', 'OUTPUT_NO_SPACE', ExitCode.failure],
    ['EDQUOT', 'OUTPUT_QUOTA', ExitCode.failure],
    ['EFBIG', 'OUTPUT_TOO_LARGE', ExitCode.failure],
    ['EIO', 'OUTPUT_IO', ExitCode.failure],
    ['EROFS', 'OUTPUT_READ_ONLY', ExitCode.usage],
    ['EACCES', 'OUTPUT_NO_PERMISSION', ExitCode.usage],
    ['EPERM', 'OUTPUT_NO_PERMISSION', ExitCode.usage],
    ['EISDIR', 'OUTPUT_IS_DIRECTORY', ExitCode.usage],
    ['ENOENT', 'OUTPUT_NO_FOLDER', ExitCode.usage],
    ['ENOTDIR', 'OUTPUT_NO_FOLDER', ExitCode.usage],
    ['EEXIST', 'OUTPUT_EXISTS', ExitCode.usage],
  ]
  for (const [errno, code, exit] of CASES) {
    test(`${errno} → ${code}, exit ${exit}, naming the path and the errno`, () => {
      assert.ok(errno in osConstants.errno, `${errno} is an errno name of this system`)
      const error = writeError(Object.assign(new Error(`${errno}: raw`), {code: errno, syscall: 'write'}), '/data/out.gguf')
      assert.ok(error instanceof RunnerError, String(error))
      assert.equal(error.code, code)
      assert.equal(error.exitCode, exit)
      assert.match(error.message, new RegExp(`^cannot write /data/out\\.gguf: .+ \\(${errno}\\); `))
    })
  }

  test('an errno without an entry still names the path and the code; other errors pass through', () => {
    const odd = writeError(Object.assign(new Error('EMLINK: too many links'), {code: 'EMLINK'}), '/x')
    assert.ok(odd instanceof RunnerError)
    assert.equal(odd.code, 'OUTPUT_WRITE_FAILED')
    assert.match(odd.message, /^cannot write \/x: .*\(EMLINK\)/)
    const mine = new RunnerError('QUANT_WORKER_FAILED', 'a worker failed')
    assert.equal(writeError(mine, '/x'), mine)
    const plain = new TypeError('not a file error')
    assert.equal(writeError(plain, '/x'), plain)
  })
})
