// Install story (issue #22): `npm pack` of the checkout, `npm install -g` of that tarball into a
// temporary prefix (npm builds the native addon through the package's own install script), and from
// another folder `runner --version` and a greedy generation whose tokens are llama.cpp's, from
// ../shared/reference/stories260K.json greedy[0] (the recorded first tokens after the same prompt).
// Packing uses --ignore-scripts: `npm test`'s pretest has just built dist/, and a prepare run here
// would rewrite dist/ under the other tests. It compiles the addon once more (a minute of CPU, about
// 40 s of wall time on an idle 2-core machine); RUNNER_TEST_INSTALL=0 skips it for a quick local run.
// What the tarball holds is checked every time (npm pack --dry-run: 3 s).
import assert from 'node:assert/strict'
import {execFile, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {delimiter, join} from 'node:path'
import {promisify} from 'node:util'
import {after, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'

const run = promisify(execFile)
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const hasNpm = spawnSync(NPM, ['--version'], {encoding: 'utf8'}).status === 0
/** The environment variable that turns this test off (=0). */
const GATE = 'RUNNER_TEST_INSTALL'
const SKIP =
  process.env[GATE] === '0'
    ? `${GATE}=0 skips it (it compiles the native addon again)`
    : !hasShared()
      ? NO_SHARED_REASON
      : !hasNpm
        ? 'npm is not on PATH, so nothing can be packed or installed'
        : false

interface Greedy {
  prompt: string
  prompt_ids: number[]
  ids: number[]
  text: string
}

// Cheap and ungated: what the tarball holds (npm's own file list, from package.json "files").
describe('npm pack ships what an install needs and nothing of the checkout', {skip: hasNpm ? false : 'npm is not on PATH'}, () => {
  test('compiled dist/src with declarations, bin, the engine sources and build files; no tests, build output, test addon or maps', async () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
    const {stdout} = await run(NPM, ['pack', '--dry-run', '--ignore-scripts', '--json'], {cwd: REPO_ROOT, env, maxBuffer: 64 << 20})
    const [{name, files}] = JSON.parse(stdout) as [{name: string; files: {path: string}[]}]
    assert.equal(name, 'runner-llm')
    const paths = new Set(files.map((f) => f.path))
    for (const needed of [
      'package.json',
      'bin/run.js',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/commands/run.js',
      'oclif.manifest.json',
      'native/CMakeLists.txt',
      'native/package.json',
      'native/include/runner.h',
    ])
      assert.ok(paths.has(needed), `the tarball holds ${needed}`)
    const unwanted = [...paths].filter((p) =>
      /^(test|src|scripts|fixtures|compat|dist\/scripts|native\/build|native\/addon-test)\/|\.map$/.test(p),
    )
    assert.deepEqual(unwanted, [], 'nothing of the checkout beyond what an install runs')
  })
})

describe('npm pack + npm install -g gives a working `runner` from any folder', {skip: SKIP}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-global-'))
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('runner --version and a greedy generation, from another folder, equal llama.cpp', {timeout: 600_000}, async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {name: string; version: string}
    // npm's own variables from an `npm test` parent (prefix, global, ignore-scripts...) must not leak into these runs.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)))
    const packed = await run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      cwd: REPO_ROOT,
      env,
      maxBuffer: 64 << 20,
    })
    const [{filename}] = JSON.parse(packed.stdout) as [{filename: string}]
    const prefix = join(dir, 'prefix')
    const started = performance.now()
    await run(NPM, ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(dir, filename)], {
      cwd: dir,
      env,
      maxBuffer: 64 << 20,
    })
    console.log(`npm install -g of the tarball: ${((performance.now() - started) / 1000).toFixed(1)} s`)

    const elsewhere = join(dir, 'elsewhere')
    mkdirSync(elsewhere)
    const bin = process.platform === 'win32' ? prefix : join(prefix, 'bin')
    const userEnv = {...env, PATH: `${bin}${delimiter}${env.PATH ?? ''}`, NO_COLOR: '1'}
    const version = await run('runner', ['--version'], {cwd: elsewhere, env: userEnv})
    assert.match(version.stdout, new RegExp(`^${pkg.name}/${pkg.version.replaceAll('.', '\\.')} `), 'oclif prints <package>/<version>')

    const want = (JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {greedy: Greedy[]}).greedy[0]!
    assert.equal(want.prompt, 'Once upon a time')
    const model = sharedPath('models', 'stories260K.gguf')
    const out = await run('runner', ['run', model, '-p', want.prompt, '-n', '8', '--temp', '0', '--json'], {cwd: elsewhere, env: userEnv})
    const doc = JSON.parse(out.stdout) as {text: string; tokens: number[]; promptTokens: number[]; finishReason: string}
    assert.deepEqual(doc.promptTokens, want.prompt_ids, "llama.cpp's prompt tokens")
    assert.deepEqual(doc.tokens, want.ids.slice(0, 8), "llama.cpp's first 8 greedy tokens")
    assert.ok(want.text.startsWith(doc.text) && doc.text.length > 0, `${JSON.stringify(doc.text)} begins llama.cpp's text`)
    assert.equal(doc.finishReason, 'length')
  })
})
