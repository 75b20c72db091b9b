/**
 * Output files of quantize, remove-sublayer, keygen and score, as a user meets them: every output
 * path checked before any work (a folder, a missing folder, no permission, a read-only filesystem,
 * too little space, an existing file without --force, something that is not a file), failures while
 * writing as a coded error (with --json too), Ctrl+C exiting 130 with one line that says what was
 * removed and what was not written, key pairs written both or neither, and stale temporary files of
 * killed runs removed by the next run. The real CLI is spawned; the real kernel does the rest: a
 * SIGINT, a tmpfs of a few KiB or mounted read-only (in a user namespace of our own), an
 * unprivileged user, `ulimit -f`, and exited processes.
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync, type SpawnSyncReturns} from 'node:child_process'
import {chmodSync, existsSync, readdirSync, readFileSync, statSync, unlinkSync, utimesSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {before, describe, test} from 'node:test'

import {freshDirs} from '../helpers/fresh-dirs.js'
import {makeTestModel} from '../../scripts/make-test-model.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCli, type CliResult, sharedPath} from '../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON
/** Our temporary files, as the issue names the pattern: `.NAME.PID.RANDHEX.tmp`. */
const OUR_TEMP = /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/
const temps = (dir: string) => readdirSync(dir).filter((f) => OUR_TEMP.test(f))

const {root, freshDir} = freshDirs('runner-outputs-')

/** The one JSON error document a failed --json run prints on stdout. */
function jsonError(r: CliResult): {code: string; message: string} {
  const lines = r.stdout.split('\n').filter((l) => l !== '')
  assert.equal(lines.length, 1, `one JSON line on stdout: ${r.stdout}\n${r.stderr}`)
  return (JSON.parse(lines[0]!) as {error: {code: string; message: string}}).error
}

/** The runner: lines on stderr (listr's task lines aside). */
const runnerLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('runner: '))

const asResult = (r: SpawnSyncReturns<string>): CliResult => ({status: r.status, stdout: r.stdout, stderr: r.stderr})

/** True when this machine lets us mount a tmpfs in a user and mount namespace of our own (util-linux unshare). */
function canMountTmpfs(): boolean {
  const probe = freshDir()
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=4k tmpfs "$0"', probe], {encoding: 'utf8'})
  return !r.error && r.status === 0
}
const TMPFS_SKIP =
  process.platform !== 'linux' || !canMountTmpfs() ? 'needs Linux with unprivileged user namespaces (unshare -rm) to mount a tmpfs' : false

/** Run the CLI with a fresh tmpfs (`options`: mount options such as size=8k or ro) mounted at `dir`, in its own namespace. */
function runCliOnTmpfs(dir: string, options: string, args: string[]): CliResult {
  const script = 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"'
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', script, 'sh', options, dir, process.execPath, 'bin/run.js', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: {...process.env, NO_COLOR: '1'},
    timeout: 60_000,
  })
  return asResult(r)
}

/** Spawn the CLI; send SIGINT once `ready(pid)` holds (polled every 5 ms); resolve with how it ended. */
function interruptWhen(args: string[], ready: (pid: number) => boolean): Promise<CliResult & {signal: NodeJS.Signals | null}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/run.js', ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1'}})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const poll = setInterval(() => {
      if (child.pid !== undefined && ready(child.pid)) {
        clearInterval(poll)
        child.kill('SIGINT')
      }
    }, 5)
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', (status, signal) => {
      clearInterval(poll)
      clearTimeout(killer)
      resolve({status, signal, stdout, stderr})
    })
  })
}

const tempAppearsIn = (dir: string) => () => temps(dir).length > 0
/** The process has mapped the model: its load has begun, inside the command's Ctrl+C handling. */
const hasMapped = (file: string) => (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/maps`, 'utf8').includes(file)
  } catch {
    return false
  }
}

/** The pid of a process that has exited (checked: the kernel says no such process). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', ''])
  assert.throws(() => process.kill(r.pid!, 0), {code: 'ESRCH'})
  return r.pid!
}

describe('output files', {skip: SKIP}, () => {
  const small = () => sharedPath('fixtures', 'llama.gguf')
  /** A 100 MB F32 llama: quantizing it on one thread takes seconds, so a SIGINT lands mid-write. */
  const big = join(root, 'big-f32.gguf')
  before(async () => {
    await makeTestModel(big, {
      arch: 'llama',
      nEmbd: 512,
      nLayer: 8,
      nHead: 8,
      nHeadKv: 8,
      nFf: 1408,
      nCtx: 256,
      type: 'f32',
      seed: 3n,
      tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
    })
  })
  const quantize = (out: string, ...extra: string[]) => ['quantize', small(), out, '--type', 'Q8_0', '--pure', ...extra]

  describe('checked before any work', () => {
    test('quantize into a folder, or into a folder that does not exist: exit 2 naming the path, with --json a JSON error', () => {
      const dir = freshDir()
      writeFileSync(join(dir, 'file.txt'), 'x')
      for (const [out, code, says] of [
        [dir, 'OUTPUT_IS_DIRECTORY', /is a folder/],
        [join(dir, 'missing', 'out.gguf'), 'OUTPUT_NO_FOLDER', /the folder .*missing does not exist/],
        [join(dir, 'file.txt', 'out.gguf'), 'OUTPUT_NO_FOLDER', /file\.txt is not a folder/],
      ] as const) {
        const r = runCli(quantize(out, '--json'))
        assert.equal(r.status, 2, r.stderr)
        const e = jsonError(r)
        assert.equal(e.code, code)
        assert.match(e.message, says)
        assert.deepEqual(runnerLines(r.stderr), [`runner: ${e.message} [${code}]`])
      }
      assert.deepEqual(readdirSync(dir), ['file.txt'], 'nothing was written')
    })

    test('an existing output: refused without --force and left as it was; replaced with --force (quantize and remove-sublayer)', () => {
      const dir = freshDir()
      const out = join(dir, 'out.gguf')
      writeFileSync(out, 'precious')
      for (const args of [quantize(out, '--json'), ['remove-sublayer', small(), out, 'attn:1', '--json']]) {
        const r = runCli(args)
        assert.equal(r.status, 2, r.stderr)
        assert.equal(jsonError(r).code, 'OUTPUT_EXISTS')
        assert.match(jsonError(r).message, /already exists; pass --force/)
        assert.equal(readFileSync(out, 'utf8'), 'precious')
      }
      const q = runCli(quantize(out, '--force', '--json'))
      assert.equal(q.status, 0, q.stderr)
      assert.equal(readGgufModel(out).tensors.find((t) => t.name === 'blk.0.attn_q.weight')!.type.name, 'Q8_0')
      const cut = runCli(['remove-sublayer', small(), out, 'attn:1', '--force', '--json'])
      assert.equal(cut.status, 0, cut.stderr)
      assert.ok(!readGgufModel(out).tensors.some((t) => t.name === 'blk.1.attn_q.weight'))
      assert.deepEqual(temps(dir), [])
    })

    test('something that is not a regular file (a FIFO) is never replaced, even with --force', (t) => {
      const dir = freshDir()
      const fifo = join(dir, 'pipe.gguf')
      const mk = spawnSync('mkfifo', [fifo])
      if (mk.error || mk.status !== 0) return void t.skip('mkfifo is not available')
      const r = runCli(quantize(fifo, '--force', '--json'))
      assert.equal(r.status, 2, r.stderr)
      assert.equal(jsonError(r).code, 'OUTPUT_NOT_A_FILE')
      assert.ok(statSync(fifo).isFIFO(), 'still the FIFO')
    })

    test('a folder without write permission: exit 2, OUTPUT_NO_PERMISSION', (t) => {
      const dir = freshDir()
      chmodSync(dir, 0o555)
      let r: CliResult
      if (process.getuid?.() === 0) {
        // root writes anywhere: run the CLI as nobody, with a HOME it may use (mkdtemp made the tests' folder 0700).
        chmodSync(root, 0o755)
        const home = freshDir()
        chmodSync(home, 0o777)
        const setpriv = spawnSync('setpriv', ['--version'])
        if (setpriv.error || setpriv.status !== 0) return void t.skip('running as root without setpriv to drop to an unprivileged user')
        r = asResult(
          spawnSync(
            'setpriv',
            [
              '--reuid=65534',
              '--regid=65534',
              '--clear-groups',
              process.execPath,
              'bin/run.js',
              ...quantize(join(dir, 'out.gguf'), '--json'),
            ],
            {cwd: REPO_ROOT, encoding: 'utf8', env: {...process.env, NO_COLOR: '1', HOME: home}, timeout: 60_000},
          ),
        )
      } else {
        r = runCli(quantize(join(dir, 'out.gguf'), '--json'))
      }
      assert.equal(r.status, 2, r.stderr)
      assert.equal(jsonError(r).code, 'OUTPUT_NO_PERMISSION')
      assert.match(jsonError(r).message, /no permission to create files in .* \(EACCES\)/)
    })

    test('a read-only filesystem: exit 2, OUTPUT_READ_ONLY (EROFS)', {skip: TMPFS_SKIP}, () => {
      const mnt = freshDir()
      const r = runCliOnTmpfs(mnt, 'ro,size=64k', quantize(join(mnt, 'out.gguf'), '--json'))
      assert.equal(r.status, 2, r.stderr)
      assert.equal(jsonError(r).code, 'OUTPUT_READ_ONLY')
      assert.match(jsonError(r).message, /read-only filesystem \(EROFS\)/)
    })

    test(
      'too little space for the whole file: refused before converting (exit 1, OUTPUT_NO_SPACE), nothing left behind',
      {skip: TMPFS_SKIP},
      () => {
        const mnt = freshDir()
        // The Q8_0 file is about 700 KiB; the filesystem holds 256 KiB.
        const out = join(mnt, 'out.gguf')
        const r = runCliOnTmpfs(mnt, 'size=256k', quantize(out, '--json'))
        assert.equal(r.status, 1, r.stderr)
        const e = jsonError(r)
        assert.equal(e.code, 'OUTPUT_NO_SPACE')
        assert.match(e.message, new RegExp(`cannot write ${out.replace(/[.]/g, '\\.')}: it needs .* free \\(ENOSPC\\)`))
        assert.doesNotMatch(r.stderr, /Quantize .* tensors/, 'no task list: the check came first')
      },
    )

    test('run --transcript naming a folder: refused before the generation (it failed at the rename, after the run)', () => {
      const dir = freshDir()
      const r = runCli(['run', '-m', sharedPath('models', 'stories260K.gguf'), '-p', 'Once', '-n', '4', '--transcript', dir])
      assert.equal(r.status, 2, r.stderr)
      assert.equal(r.stdout, '', 'no text was generated')
      assert.match(runnerLines(r.stderr).join('\n'), /is a folder.*\[OUTPUT_IS_DIRECTORY\]$/)
      assert.deepEqual(readdirSync(dir), [])
    })

    test('score --save-logits into a folder that does not exist: refused before the model loads', () => {
      const r = runCli([
        'score',
        '-m',
        sharedPath('models', 'stories260K.gguf'),
        '--file',
        sharedPath('reference', 'corpus-stories.txt'),
        '--ctx',
        '128',
        '--save-logits',
        join(freshDir(), 'missing', 'base.bin'),
        '--json',
      ])
      assert.equal(r.status, 2, r.stderr)
      assert.equal(jsonError(r).code, 'OUTPUT_NO_FOLDER')
    })
  })

  describe('failing while writing', () => {
    test('the file outgrows `ulimit -f` (EFBIG) mid-write: exit 1 naming the path and the code, JSON error, no temporary file', () => {
      const dir = freshDir()
      const out = join(dir, 'out.gguf')
      // 200 blocks of 512 bytes: the header and the first tensors fit, the rest does not.
      const r = asResult(
        spawnSync('sh', ['-c', 'ulimit -f 200 && exec "$@"', 'sh', process.execPath, 'bin/run.js', ...quantize(out, '--json')], {
          cwd: REPO_ROOT,
          encoding: 'utf8',
          env: {...process.env, NO_COLOR: '1'},
          timeout: 60_000,
        }),
      )
      assert.equal(r.status, 1, r.stderr)
      const e = jsonError(r)
      assert.equal(e.code, 'OUTPUT_TOO_LARGE')
      assert.match(e.message, new RegExp(`^cannot write ${out.replace(/[.]/g, '\\.')}: .*\\(EFBIG\\)`))
      assert.deepEqual(readdirSync(dir), [], 'neither the output nor a temporary file')
    })
  })

  describe('Ctrl+C', () => {
    const INTERRUPTED = /^runner: interrupted: removed the partial output (\S+); (\S+) (was not written|is unchanged) \[INTERRUPTED\]$/

    test('during quantize: exit 130, one line naming the partial file removed and the output not written', async () => {
      const dir = freshDir()
      const out = join(dir, 'q.gguf')
      const r = await interruptWhen(['quantize', big, out, '--type', 'Q4_K_M', '-t', '1'], tempAppearsIn(dir))
      assert.equal(r.signal, null, 'ended by itself, not killed by the signal')
      assert.equal(r.status, 130, r.stderr)
      const lines = runnerLines(r.stderr)
      assert.equal(lines.length, 1, r.stderr)
      const m = INTERRUPTED.exec(lines[0]!)
      assert.ok(m, lines[0])
      assert.equal(m[2], out)
      assert.equal(m[3], 'was not written')
      assert.match(basename(m[1]!), OUR_TEMP)
      assert.ok(!existsSync(m[1]!), 'the partial file is gone')
      assert.deepEqual(readdirSync(dir), [], 'no output and no temporary file')
    })

    test('during quantize --json --force over an existing file: exit 130, the JSON error, the old file unchanged', async () => {
      const dir = freshDir()
      const out = join(dir, 'q.gguf')
      writeFileSync(out, 'the old file')
      const r = await interruptWhen(['quantize', big, out, '--type', 'Q4_K_M', '-t', '1', '--force', '--json'], tempAppearsIn(dir))
      assert.equal(r.status, 130, r.stderr)
      const e = jsonError(r)
      assert.equal(e.code, 'INTERRUPTED')
      assert.match(`runner: ${e.message} [INTERRUPTED]`, INTERRUPTED)
      assert.match(e.message, / is unchanged$/)
      assert.equal(readFileSync(out, 'utf8'), 'the old file')
      assert.deepEqual(readdirSync(dir), ['q.gguf'])
    })

    test('during remove-sublayer: exit 130, the partial file removed, the output not written', async () => {
      const dir = freshDir()
      const out = join(dir, 'cut.gguf')
      const r = await interruptWhen(['remove-sublayer', big, out, 'attn:1', '--json'], tempAppearsIn(dir))
      assert.equal(r.status, 130, r.stderr)
      const e = jsonError(r)
      assert.equal(e.code, 'INTERRUPTED')
      assert.match(`runner: ${e.message} [INTERRUPTED]`, INTERRUPTED)
      assert.deepEqual(readdirSync(dir), [])
    })

    test('during score --save-logits: exit 130, one line saying there is no report and the file was not written', async () => {
      const dir = freshDir()
      const saved = join(dir, 'base.bin')
      const args = ['score', '-m', big, '--file', sharedPath('reference', 'corpus-stories.txt'), '--ctx', '128', '-t', '1']
      const r = await interruptWhen([...args, '--save-logits', saved, '--json'], hasMapped(big))
      assert.equal(r.status, 130, r.stderr)
      const e = jsonError(r)
      assert.equal(e.code, 'INTERRUPTED')
      assert.match(
        e.message,
        new RegExp(
          `^interrupted (before scoring began|after \\d+ of \\d+ windows): no report; ${saved.replace(/[.]/g, '\\.')} was not written$`,
        ),
      )
      assert.deepEqual(runnerLines(r.stderr), [`runner: ${e.message} [INTERRUPTED]`])
      assert.deepEqual(readdirSync(dir), [])
    })
  })

  describe('stale temporary files', () => {
    test('quantize removes those of ours whose writer is gone from its output folder, and keeps every other file', () => {
      const dir = freshDir()
      const dead = deadPid()
      const stale = `.q.gguf.${dead}.0badf00d.tmp`
      const others = [`.q.gguf.${process.pid}.0badf00d.tmp`, `.q.gguf.${dead}.0BADF00D.tmp`, `q.gguf.${dead}.0badf00d.tmp`, 'keep.gguf']
      const hourAgo = new Date(Date.now() - 3600_000)
      for (const f of [stale, ...others]) {
        writeFileSync(join(dir, f), Buffer.alloc(65536))
        utimesSync(join(dir, f), hourAgo, hourAgo)
      }
      const r = runCli(quantize(join(dir, 'q.gguf'), '--json'))
      assert.equal(r.status, 0, r.stderr)
      assert.deepEqual(readdirSync(dir).sort(), [...others, 'q.gguf'].sort())
    })
  })

  describe('keygen', () => {
    test('a full disk at the second half: neither file is published, no temporary file is left', {skip: TMPFS_SKIP}, () => {
      const mnt = freshDir()
      // One 4 KiB page: the private key's temporary file takes it, the public key finds no room.
      const script = 'mount -t tmpfs -o size=4k tmpfs "$1" && shift && "$@"; echo "exit=$?"; ls -A "$0"'
      const r = spawnSync(
        'unshare',
        ['-rm', 'sh', '-c', script, mnt, mnt, process.execPath, 'bin/run.js', 'keygen', '--out', join(mnt, 'alice'), '--json'],
        {
          cwd: REPO_ROOT,
          encoding: 'utf8',
          env: {...process.env, NO_COLOR: '1'},
          timeout: 60_000,
        },
      )
      const [json, exit, ...listing] = r.stdout.split('\n').filter((l) => l !== '')
      assert.equal(exit, 'exit=1', r.stderr)
      assert.equal((JSON.parse(json!) as {error: {code: string}}).error.code, 'OUTPUT_NO_SPACE')
      assert.deepEqual(listing, [], 'neither alice.key nor alice.pub, nor a temporary file')
    })

    test('--force on a full disk: the old pair stays as it was until both new halves are on the disk', {skip: TMPFS_SKIP}, () => {
      const mnt = freshDir()
      // Three pages: the old pair takes two, the new private key's temporary file the third.
      const script = [
        'mount -t tmpfs -o size=12k tmpfs "$0" || exit 9',
        '"$@" >/dev/null || exit 8',
        'cat "$0/alice.pub"',
        '"$@" --force --json',
        'echo "exit=$?"',
        'cat "$0/alice.pub"',
        'ls -A "$0"',
      ].join('; ')
      const r = spawnSync(
        'unshare',
        ['-rm', 'sh', '-c', script, mnt, process.execPath, 'bin/run.js', 'keygen', '--out', join(mnt, 'alice')],
        {
          cwd: REPO_ROOT,
          encoding: 'utf8',
          env: {...process.env, NO_COLOR: '1'},
          timeout: 60_000,
        },
      )
      const pem = /-----BEGIN PUBLIC KEY-----\n[^-]+-----END PUBLIC KEY-----\n/g
      const pubs = r.stdout.match(pem) ?? []
      assert.equal(pubs.length, 2, r.stdout + r.stderr)
      assert.equal(pubs[1], pubs[0], 'alice.pub unchanged')
      const rest = r.stdout
        .replace(pem, '')
        .split('\n')
        .filter((l) => l !== '')
      assert.equal((JSON.parse(rest[0]!) as {error: {code: string}}).error.code, 'OUTPUT_NO_SPACE')
      assert.deepEqual(rest.slice(1), ['exit=1', 'alice.key', 'alice.pub'])
    })

    test('a lone alice.key (an interrupted keygen): the rerun says how to recover it, openssl does, and --force replaces the pair', () => {
      const dir = freshDir()
      const out = join(dir, 'alice')
      assert.equal(runCli(['keygen', '--out', out]).status, 0)
      const pub = readFileSync(`${out}.pub`, 'utf8')
      unlinkSync(`${out}.pub`)
      const again = runCli(['keygen', '--out', out, '--json'])
      assert.equal(again.status, 2, again.stderr)
      const e = jsonError(again)
      assert.equal(e.code, 'KEY_HALF_PAIR')
      const hint = /`(openssl pkey -in \S+ -pubout -out \S+)`/.exec(e.message)
      assert.ok(hint, e.message)
      assert.match(e.message, new RegExp(`runner keygen --out ${out} --force`))
      const openssl = spawnSync('sh', ['-c', hint[1]!], {encoding: 'utf8'})
      if (!openssl.error && openssl.status === 0) assert.equal(readFileSync(`${out}.pub`, 'utf8'), pub, 'the hint recovers the public half')
      unlinkSync(`${out}.pub`)
      const forced = runCli(['keygen', '--out', out, '--force', '--json'])
      assert.equal(forced.status, 0, forced.stderr)
      const files = JSON.parse(forced.stdout) as {publicKey: string}
      assert.notEqual(readFileSync(`${out}.pub`, 'utf8'), pub, 'a new pair')
      assert.equal(statSync(`${out}.key`).mode & 0o777, 0o600)
      assert.match(files.publicKey, /^[0-9a-f]{64}$/)
      assert.deepEqual(readdirSync(dir).sort(), ['alice.key', 'alice.pub'])
    })

    test('a lone alice.pub: refused, saying the private half cannot be recovered; a whole pair is refused as before', () => {
      const dir = freshDir()
      const out = join(dir, 'alice')
      writeFileSync(`${out}.pub`, 'an old public key')
      const r = runCli(['keygen', '--out', out, '--json'])
      assert.equal(r.status, 2, r.stderr)
      assert.equal(jsonError(r).code, 'KEY_HALF_PAIR')
      assert.match(jsonError(r).message, /cannot be recovered/)
      assert.equal(readFileSync(`${out}.pub`, 'utf8'), 'an old public key')
      writeFileSync(`${out}.key`, 'an old private key')
      const both = runCli(['keygen', '--out', out])
      assert.equal(both.status, 2)
      assert.match(both.stderr, /already exists.*\[KEY_EXISTS\]/)
    })

    test('keygen removes a stale private-key copy a killed run left in its folder', () => {
      const dir = freshDir()
      const stale = join(dir, `.bob.key.${deadPid()}.12345678.tmp`)
      writeFileSync(stale, '-----BEGIN PRIVATE KEY-----\n...')
      utimesSync(stale, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000))
      assert.equal(runCli(['keygen', '--out', join(dir, 'alice')]).status, 0)
      assert.deepEqual(readdirSync(dir).sort(), ['alice.key', 'alice.pub'])
    })
  })
})
