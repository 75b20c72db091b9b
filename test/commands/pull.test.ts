/**
 * Models by name (issue #22): `runner pull` against a loopback stand-in for the Hugging Face Hub
 * (test/helpers/fake-hub.ts: the Hub's refs, tree and resolve answers as llama.cpp's downloader reads
 * them, a CDN on another origin with HTTP ranges), then `runner list`, `-m NAME`, `runner rm`.
 * Outside anchors: the served files are the shared models, and what lands must hash to their sha256
 * (node:crypto, as sha256sum); a model run by name gives llama.cpp's greedy tokens for that file
 * (shared/reference/stories260K.json); the file chosen for a tag follows llama.cpp's -hf rules
 * (common/download.cpp find_best_model: TAG followed by . or -, Q4_K_M then Q8_0 by default, no mmproj,
 * the first shard of a split set).
 */
import assert from 'node:assert/strict'
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {loadModel} from 'runner-llm'

import {readGgufModel} from '../../src/lib/gguf/index.js'
import {parseHubRef} from '../../src/lib/models/hub-ref.js'
import {chooseFiles, pullModel, resolveModelPath} from '../../src/lib/models/index.js'
import {COMMIT, FakeHub, gitBlobSha1, sha256} from '../helpers/fake-hub.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'
import {writeTwoShards} from '../helpers/split-model.js'

const tmp = mkdtempSync(join(tmpdir(), 'runner-pull-'))
after(() => rmSync(tmp, {recursive: true, force: true}))
let fresh = 0
const freshDir = () => {
  const d = join(tmp, `models-${fresh++}`)
  mkdirSync(d)
  return d
}

/** stories260K as llama.cpp's split convention (two shards), the bytes the Hub serves. */
async function splitStories(): Promise<Buffer[]> {
  const paths = [join(tmp, 'split-1.gguf'), join(tmp, 'split-2.gguf')]
  await writeTwoShards(sharedPath('models/stories260K.gguf'), paths[0]!, paths[1]!)
  return paths.map((p) => readFileSync(p))
}

const f = (path: string, hex = 'a'.repeat(64)) => ({path, bytes: 1, digest: {algorithm: 'sha256' as const, hex}})

describe("Hub references and llama.cpp's file choice", () => {
  test('references as llama.cpp -hf writes them', () => {
    assert.deepEqual(parseHubRef('ggml-org/gemma-3-1b-it-GGUF:Q4_K_M'), {
      repo: 'ggml-org/gemma-3-1b-it-GGUF',
      tag: 'Q4_K_M',
      name: 'ggml-org/gemma-3-1b-it-GGUF:Q4_K_M',
    })
    assert.equal(parseHubRef('hf.co/a/b')!.name, 'a/b')
    assert.equal(parseHubRef('https://huggingface.co/a/b/resolve/main/sub/x-Q8_0.gguf')!.file, 'sub/x-Q8_0.gguf')
    assert.equal(parseHubRef('stories260K'), undefined, 'a short name is not a Hub reference')
    assert.throws(() => parseHubRef('hf.co/a/b/../x.gguf'), /HUB_BAD_REFERENCE|dot/)
    assert.throws(() => parseHubRef('hf.co/a/b:Q4:Q8'), /more than one :QUANT/)
  })

  test('the tag picks the first model file with TAG then . or -; Q4_K_M, then Q8_0 by default; never an mmproj; a split set whole', () => {
    const listing = [
      f('mmproj-model-Q4_K_M.gguf'),
      f('model-Q8_0.gguf'),
      f('model-Q4_K_M.gguf'),
      f('big-Q6_K-00002-of-00002.gguf'),
      f('big-Q6_K-00001-of-00002.gguf'),
      f('README.md'),
    ]
    assert.deepEqual(chooseFiles(listing, {repo: 'o/r', name: 'o/r'}), {files: [listing[2]], tag: 'Q4_K_M'})
    assert.deepEqual(chooseFiles(listing, {repo: 'o/r', tag: 'q8_0', name: 'o/r:q8_0'}), {files: [listing[1]], tag: 'Q8_0'})
    assert.deepEqual(chooseFiles(listing, {repo: 'o/r', tag: 'Q6_K', name: 'o/r:Q6_K'}).files, [listing[4], listing[3]])
    assert.deepEqual(chooseFiles([f('only-F32.gguf')], {repo: 'o/r', name: 'o/r'}).tag, 'F32', 'no Q4_K_M or Q8_0: the first model file')
    assert.throws(
      () => chooseFiles(listing, {repo: 'o/r', tag: 'Q2_K', name: 'o/r:Q2_K'}),
      /no model file tagged Q2_K; its GGUF files: mmproj/,
    )
    // The name keeps the tag asked for, whatever the file name ends with (unsloth's UD- tags, a -imat suffix).
    assert.equal(chooseFiles([f('m-UD-Q4_K_XL.gguf')], {repo: 'o/r', tag: 'UD-Q4_K_XL', name: 'o/r:UD-Q4_K_XL'}).tag, 'UD-Q4_K_XL')
    assert.equal(chooseFiles([f('m-Q8_0-imat.gguf'), f('m-Q4_K_M-imat.gguf')], {repo: 'o/r', name: 'o/r'}).tag, 'Q4_K_M')
    assert.throws(
      () => chooseFiles([f('x-Q4_0-00001-of-00003.gguf'), f('x-Q4_0-00002-of-00003.gguf')], {repo: 'o/r', name: 'o/r'}),
      /shard 3 is not in o\/r/,
    )
  })
})

describe('runner pull from a Hub on loopback, list, run by name, rm', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const STORIES = () => sharedPath('models/stories260K.gguf')
  const storiesBytes = () => readFileSync(STORIES())
  let hub: FakeHub
  before(async () => {
    if (!hasShared()) return
    const stories = storiesBytes()
    const q8 = readFileSync(sharedPath('models/stories260K.gguf'))
    const split = await splitStories()
    hub = new FakeHub([
      {
        repo: 'tiny/split-GGUF',
        files: [
          {path: 'stories-Q8_0-00002-of-00002.gguf', bytes: split[1]!},
          {path: 'stories-Q8_0-00001-of-00002.gguf', bytes: split[0]!},
          {path: 'mmproj-stories-Q8_0.gguf', bytes: Buffer.from('not a model')},
        ],
      },
      {
        repo: 'tiny/stories260K-GGUF',
        files: [
          {path: 'stories260K-F32.gguf', bytes: stories},
          {path: 'README.md', bytes: Buffer.from('# stories\n'), git: true},
        ],
      },
      {repo: 'tiny/gated-GGUF', files: [{path: 'sub/gated-Q8_0.gguf', bytes: q8}], token: 'hf_secret'},
      {repo: 'tiny/git-GGUF', files: [{path: 'small-F32.gguf', bytes: stories, git: true}]},
    ])
    await hub.start()
  })
  after(async () => hub?.stop())

  const env = (dir: string, extra: NodeJS.ProcessEnv = {}) => ({RUNNER_MODELS: dir, HF_ENDPOINT: hub.url, HF_TOKEN: '', ...extra})

  test('pull OWNER/REPO:TAG, list it, run it by name (llama.cpp greedy tokens), rm it', async () => {
    const dir = freshDir()
    const pulled = await runCliAsync(['pull', 'tiny/stories260K-GGUF:F32', '--json'], {env: env(dir)})
    assert.equal(pulled.status, 0, pulled.stderr)
    const result = JSON.parse(pulled.stdout) as {name: string; path: string; files: {digest: {hex: string}}[]}
    assert.equal(result.name, 'tiny/stories260K-GGUF:F32')
    assert.equal(sha256(readFileSync(result.path)), sha256(storiesBytes()), 'the file on disk is the served file, byte for byte')
    const sum = spawnSync('sha256sum', [result.path], {encoding: 'utf8'})
    if (sum.status === 0) assert.equal(sum.stdout.split(' ')[0], sha256(storiesBytes()), 'sha256sum agrees with the digest the Hub listed')
    assert.equal(result.files[0]!.digest.hex, sha256(storiesBytes()))
    assert.deepEqual(
      readdirSync(join(dir, 'hf.co', 'tiny', 'stories260K-GGUF')),
      ['stories260K-F32.gguf'],
      'no .download file left, only the tagged file (not the README)',
    )
    const cdn = hub.requests.filter((r) => r.host === 'cdn')
    assert.ok(cdn.length > 0 && cdn.every((r) => r.authorization === undefined), 'the CDN never sees a token')

    const list = await runCliAsync(['list', '--json'], {env: env(dir)})
    assert.equal(list.status, 0, list.stderr)
    const models = (
      JSON.parse(list.stdout) as {models: {name: string; architecture: string; type: string; parameters: number; bytes: number}[]}
    ).models
    assert.deepEqual(
      models.map((m) => [m.name, m.architecture, m.type, m.bytes]),
      [['tiny/stories260K-GGUF:F32', 'llama', 'F32', statSync(STORIES()).size]],
    )
    const table = await runCliAsync(['list'], {env: env(dir)})
    assert.match(table.stdout, /^NAME +SIZE +ARCH +TYPE +PARAMS +MODIFIED\ntiny\/stories260K-GGUF:F32 +1\.13 MiB +llama +F32 +292\.8K /)

    const reference = (
      JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {greedy: {prompt: string; ids: number[]}[]}
    ).greedy[0]!
    const run = await runCliAsync(['run', 'tiny/stories260K-GGUF:F32', '-p', reference.prompt, '-n', '16', '--temp', '0', '--json'], {
      env: env(dir),
    })
    assert.equal(run.status, 0, run.stderr)
    assert.deepEqual(JSON.parse(run.stdout).tokens, reference.ids.slice(0, 16), "run by name: llama.cpp's greedy tokens")
    for (const name of ['hf.co/tiny/stories260K-GGUF:F32', 'stories260K-GGUF', 'stories260k-gguf:f32', 'tiny/stories260K-GGUF'])
      assert.equal(await resolveModelPath(name, '-m', env(dir)), result.path, `${name} is a unique shorter name`)
    const saved = process.env.RUNNER_MODELS
    process.env.RUNNER_MODELS = dir
    try {
      const model = await loadModel('stories260K-GGUF')
      const lib = await model.generate(reference.prompt, {maxTokens: 8, temperature: 0})
      await model.dispose()
      assert.deepEqual(lib.tokens, reference.ids.slice(0, 8), "the library's loadModel takes the name too")
    } finally {
      if (saved === undefined) delete process.env.RUNNER_MODELS
      else process.env.RUNNER_MODELS = saved
    }
    const inspect = await runCliAsync(['inspect', 'stories260K-GGUF', '--json'], {env: env(dir)})
    assert.equal(JSON.parse(inspect.stdout).summary.architecture, 'llama', 'inspect takes the name too')

    const again = await runCliAsync(['pull', 'tiny/stories260K-GGUF:F32'], {env: env(dir)})
    assert.equal(again.status, 0, again.stderr)
    assert.match(again.stderr, /up to date tiny\/stories260K-GGUF:F32/)

    const rm = await runCliAsync(['rm', 'tiny/stories260K-GGUF:F32'], {env: env(dir)})
    assert.equal(rm.status, 0, rm.stderr)
    assert.match(rm.stdout, /removed tiny\/stories260K-GGUF:F32/)
    assert.deepEqual(readdirSync(dir), ['manifests'], 'the files and their folders are gone')
    const gone = await runCliAsync(['run', 'stories260K-GGUF', '-p', 'x', '-n', '1'], {env: env(dir)})
    assert.equal(gone.status, 3)
    assert.match(gone.stderr, /model "stories260K-GGUF": no such file, and no model of that name in .*runner pull OWNER\/REPO\[:QUANT\]/)
    assert.match(gone.stderr, /\[MODEL_NOT_FOUND\]$/m)
    await assert.rejects(
      resolveModelPath('hf.co/tiny/stories260K-GGUF:F32', '-m', env(dir)),
      /`runner pull tiny\/stories260K-GGUF:F32` fetches it/,
    )
    const rmAgain = await runCliAsync(['rm', 'nothing-here'], {env: env(dir)})
    assert.equal(rmAgain.status, 3)
  })

  test('a download cut by the server resumes with an HTTP range, and the whole file hashes right', async () => {
    const dir = freshDir()
    hub.options.cutAfterBytes = 400_000
    const first = await runCliAsync(['pull', 'tiny/stories260K-GGUF:F32'], {env: env(dir)})
    hub.options.cutAfterBytes = 0
    assert.equal(first.status, 1, first.stderr)
    assert.match(
      first.stderr,
      /^pulling tiny\/stories260K-GGUF:F32 +\d+% [\d.]+ KiB of 1\.13 MiB, .*\/s, ETA /m,
      'a progress line per 10 % in a log',
    )
    assert.match(
      first.stderr,
      /the connection ended at \d+ of \d+ bytes .*run the same pull again and it resumes from there \[PULL_INCOMPLETE\]/,
    )
    const part = join(dir, 'hf.co', 'tiny', 'stories260K-GGUF', 'stories260K-F32.gguf.download')
    const kept = statSync(part).size
    assert.ok(kept > 0 && kept <= 400_000, `kept ${kept} bytes`)
    assert.ok(!existsSync(join(dir, 'manifests', 'tiny%2Fstories260K-GGUF%3AF32.json')), 'no manifest: not a model yet')
    const n = hub.requests.length
    const second = await runCliAsync(['pull', 'tiny/stories260K-GGUF:F32', '--json'], {env: env(dir)})
    assert.equal(second.status, 0, second.stderr)
    const r = JSON.parse(second.stdout) as {path: string; resumedBytes: number}
    assert.equal(r.resumedBytes, kept)
    assert.deepEqual(
      hub.requests
        .slice(n)
        .filter((q) => q.host === 'cdn')
        .map((q) => q.range),
      [`bytes=${kept}-`],
      'one ranged request from where the first pull stopped',
    )
    assert.equal(sha256(readFileSync(r.path)), sha256(storiesBytes()))
  })

  test('Ctrl+C keeps the bytes so far (exit 130), and the next pull resumes', async () => {
    const dir = freshDir()
    hub.options.throttleMs = 40
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/run.js'), 'pull', 'tiny/stories260K-GGUF:F32'], {
      env: {...process.env, ...env(dir)},
    })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const part = join(dir, 'hf.co', 'tiny', 'stories260K-GGUF', 'stories260K-F32.gguf.download')
    for (let i = 0; i < 400 && !(existsSync(part) && statSync(part).size > 0); i++) await new Promise((r) => setTimeout(r, 25))
    child.kill('SIGINT')
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    hub.options.throttleMs = 0
    assert.equal(code, 130, stderr)
    assert.match(stderr, /interrupted: .* kept; run the same pull again to resume \[PULL_INTERRUPTED\]/)
    const kept = statSync(part).size
    assert.ok(kept > 0 && kept < storiesBytes().length)
    const r = await pullModel('tiny/stories260K-GGUF:F32', {dir, endpoint: `${hub.url}/`})
    assert.equal(r.resumedBytes, kept)
    assert.equal(sha256(readFileSync(r.path)), sha256(storiesBytes()))
  })

  test('bytes that do not hash to the listed sha256 are refused and not kept (exit 4)', async () => {
    const dir = freshDir()
    hub.options.corrupt = true
    const r = await runCliAsync(['pull', 'tiny/stories260K-GGUF:F32'], {env: env(dir)})
    hub.options.corrupt = false
    assert.equal(r.status, 4, r.stderr)
    assert.match(
      r.stderr,
      new RegExp(
        `stories260K-F32.gguf: the downloaded bytes have sha256 [0-9a-f]{64}, the Hub lists ${sha256(storiesBytes())}; nothing was kept .*\\[PULL_DIGEST_MISMATCH\\]`,
      ),
    )
    assert.deepEqual(readdirSync(join(dir, 'hf.co', 'tiny', 'stories260K-GGUF')), [], 'neither the file nor its .download')
    assert.ok(!existsSync(join(dir, 'manifests')))
  })

  test('a second pull of the same file while the first runs is refused; a lock left by a dead process is taken over', async () => {
    const dir = freshDir()
    const folder = join(dir, 'hf.co', 'tiny', 'stories260K-GGUF')
    mkdirSync(folder, {recursive: true})
    const lock = join(folder, 'stories260K-F32.gguf.download.lock')
    writeFileSync(lock, String(process.pid))
    await assert.rejects(
      pullModel('tiny/stories260K-GGUF:F32', {dir, endpoint: `${hub.url}/`}),
      /another runner pull \(pid \d+\) is downloading this file/,
    )
    writeFileSync(lock, '2147483646')
    const r = await pullModel('tiny/stories260K-GGUF:F32', {dir, endpoint: `${hub.url}/`})
    assert.equal(sha256(readFileSync(r.path)), sha256(storiesBytes()))
    assert.ok(!existsSync(lock), 'the lock goes with the download')
  })

  test('the resolve address and the listing must agree on the digest', async () => {
    hub.options.wrongEtag = 'b'.repeat(64)
    await assert.rejects(
      pullModel('tiny/stories260K-GGUF:F32', {dir: freshDir(), endpoint: `${hub.url}/`}),
      /HUB_DIGEST_DISAGREES|its resolve address b{64}/,
    )
    hub.options.wrongEtag = undefined
  })

  test('a server that ignores Range sends the whole file again: it starts over and still verifies', async () => {
    const dir = freshDir()
    hub.options.cutAfterBytes = 200_000
    await assert.rejects(pullModel('tiny/stories260K-GGUF:F32', {dir, endpoint: `${hub.url}/`}))
    hub.options.cutAfterBytes = 0
    hub.options.ignoreRange = true
    const r = await pullModel('tiny/stories260K-GGUF:F32', {dir, endpoint: `${hub.url}/`})
    hub.options.ignoreRange = false
    assert.equal(sha256(readFileSync(r.path)), sha256(storiesBytes()))
  })

  test('a gated repository: 401 says to set HF_TOKEN; with it the pull works; a file by path; a paged listing', async () => {
    const dir = freshDir()
    const denied = await runCliAsync(['pull', 'tiny/gated-GGUF/sub/gated-Q8_0.gguf'], {env: env(dir)})
    assert.equal(denied.status, 1)
    assert.match(
      denied.stderr,
      /needs a token \(401, gated or private\): Access to model tiny\/gated-GGUF is restricted.*set HF_TOKEN.*\[HUB_UNAUTHORIZED\]/,
    )
    hub.options.pageSize = 1
    const ok = await runCliAsync(['pull', 'hf.co/tiny/gated-GGUF/sub/gated-Q8_0.gguf', '--json'], {env: env(dir, {HF_TOKEN: 'hf_secret'})})
    hub.options.pageSize = undefined
    assert.equal(ok.status, 0, ok.stderr)
    assert.equal(JSON.parse(ok.stdout).name, 'tiny/gated-GGUF/sub/gated-Q8_0.gguf')
    const run = await runCliAsync(['run', 'gated-Q8_0', '-p', 'Once', '-n', '2', '--temp', '0'], {env: env(dir)})
    assert.equal(run.status, 0, `the file's stem names it: ${run.stderr}`)
  })

  test('a split set: every shard comes, and the name opens the whole model', async () => {
    const dir = freshDir()
    const r = await pullModel('tiny/split-GGUF', {dir, endpoint: `${hub.url}/`})
    assert.equal(r.manifest.name, 'tiny/split-GGUF:Q8_0', 'no tag: Q4_K_M, then Q8_0, as llama.cpp')
    assert.deepEqual(
      r.manifest.files.map((x) => x.path),
      ['hf.co/tiny/split-GGUF/stories-Q8_0-00001-of-00002.gguf', 'hf.co/tiny/split-GGUF/stories-Q8_0-00002-of-00002.gguf'],
    )
    const model = readGgufModel(await resolveModelPath('split-GGUF', '-m', {RUNNER_MODELS: dir}))
    assert.deepEqual(
      model.tensors.map((t) => t.name),
      readGgufModel(STORIES()).tensors.map((t) => t.name),
      'both shards, read as one model',
    )
  })

  test('a split set cut in its second shard: the next pull hashes the first in place and fetches only the rest of the second', async () => {
    const dir = freshDir()
    const [one, two] = await splitStories()
    hub.options.cutBlob = sha256(two!)
    hub.options.cutAfterBytes = 100_000
    await assert.rejects(
      pullModel('tiny/split-GGUF:Q8_0', {dir, endpoint: `${hub.url}/`}),
      (e: unknown) => (e as {code?: string}).code === 'PULL_INCOMPLETE',
    )
    hub.options.cutAfterBytes = 0
    hub.options.cutBlob = undefined
    const n = hub.requests.length
    const r = await pullModel('tiny/split-GGUF:Q8_0', {dir, endpoint: `${hub.url}/`})
    const cdn = hub.requests.slice(n).filter((q) => q.host === 'cdn')
    assert.deepEqual(
      cdn.map((q) => [q.path, q.range]),
      [[`/cdn/${sha256(two!)}`, 'bytes=100000-']],
      'shard 1 is not fetched again; shard 2 resumes',
    )
    assert.equal(r.resumedBytes, one!.length + 100_000)
    assert.equal(r.upToDate, false)
  })

  test('a file kept in git (not LFS) is checked against its git blob id', async () => {
    const r = await pullModel('huggingface.co/tiny/git-GGUF:F32', {dir: freshDir(), endpoint: `${hub.url}/`})
    assert.deepEqual(r.manifest.files[0]!.digest, {algorithm: 'git-sha1', hex: gitBlobSha1(storiesBytes())})
    assert.equal(sha256(readFileSync(r.path)), sha256(storiesBytes()))
  })

  test('refusals: an unknown repository, an unknown tag, a reference that is not one, an unreachable Hub', async () => {
    const dir = freshDir()
    const [none, tag, bad, down] = await Promise.all([
      runCliAsync(['pull', 'tiny/nothing-GGUF'], {env: env(dir)}),
      runCliAsync(['pull', 'tiny/stories260K-GGUF:Q2_K'], {env: env(dir)}),
      runCliAsync(['pull', 'stories260K'], {env: env(dir)}),
      runCliAsync(['pull', 'tiny/stories260K-GGUF'], {env: env(dir, {HF_ENDPOINT: 'http://127.0.0.1:9'})}),
    ])
    assert.equal(none.status, 1)
    assert.match(
      none.stderr,
      /the Hub has no repository tiny\/nothing-GGUF \(401\): Repository not found; a private repository needs HF_TOKEN/,
    )
    assert.equal(tag.status, 3)
    assert.match(
      tag.stderr,
      /tiny\/stories260K-GGUF has no model file tagged Q2_K; its GGUF files: stories260K-F32.gguf \[HUB_NO_SUCH_TAG\]/,
    )
    assert.equal(bad.status, 2)
    assert.match(bad.stderr, /a Hub model is OWNER\/REPO\[:QUANT\] or OWNER\/REPO\/FILE.gguf/)
    assert.equal(down.status, 1)
    assert.match(down.stderr, /cannot reach http:\/\/127.0.0.1:9 .*HF_ENDPOINT names another Hub or mirror \[HUB_UNREACHABLE\]/)
  })

  test('COMMIT: every file is resolved at the commit the refs named', () => {
    const resolves = hub.requests.filter((r) => r.path.includes('/resolve/'))
    assert.ok(resolves.length > 0 && resolves.every((r) => r.path.includes(`/resolve/${COMMIT}/`)))
  })
})
