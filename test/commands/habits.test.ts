/**
 * Habits users bring from ollama and llama.cpp (issue #22, "Habits" and "Output"): each of these
 * gave a baffling error or a wrong figure before, and gets the right behaviour or a one-line hint now.
 * - `runner run FILE -p TEXT` (the model as the argument), `runner chat FILE`;
 * - `run -m M "Once upon a time"`: the prompt where a model goes says to use -p;
 * - `-ngl 99` (read as `-n gl` by oclif before) refused naming -ngl; `-ngl 0` accepted;
 * - `--seed -1` is random, as in llama.cpp;
 * - a mistyped flag or command: one line with the nearest ones, no help dump; `runner model.gguf`;
 * - `--ctx` / `--ctx-size` / `-c` on run, serve and score alike;
 * - text and summary in one file (`> log 2>&1`) are separated by a newline;
 * - `-n 1` reports no decode rate (one token is not a speed);
 * - `-c` beyond the training context: a warning naming both numbers on run, chat, embed, score and serve;
 * - `serve --chat-template gemma`: the built-in template, not a file named gemma.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {llamaSpellings} from '../../src/lib/cli/llama-spellings.js'
import {serveProcess} from '../helpers/serve-process.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, runCliWithInput, sharedPath} from '../helpers/shared.js'

const dir = mkdtempSync(join(tmpdir(), 'runner-habits-'))
after(() => rmSync(dir, {recursive: true, force: true}))

test('-ngl becomes --n-gpu-layers, with = too; nothing after -- is touched', () => {
  assert.deepEqual(llamaSpellings(['run', '-ngl', '99', '-n', '4']), ['run', '--n-gpu-layers', '99', '-n', '4'])
  assert.deepEqual(llamaSpellings(['-ngl=3', '--', '-ngl']), ['--n-gpu-layers=3', '--', '-ngl'])
})

describe('habits from ollama and llama.cpp', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const M = () => sharedPath('models/stories260K.gguf')

  test('the model as the argument: runner run FILE -p TEXT gives what -m gives', async () => {
    const a = await runCliAsync(['run', M(), '-p', 'Once upon a time', '-n', '8', '--temp', '0', '--json'])
    const b = await runCliAsync(['run', '-m', M(), '-p', 'Once upon a time', '-n', '8', '--temp', '0', '--json'])
    assert.equal(a.status, 0, a.stderr)
    assert.deepEqual(JSON.parse(a.stdout).tokens, JSON.parse(b.stdout).tokens)
    // RUNNER_MODEL names another model: the argument on the command line wins over it.
    const c = await runCliAsync(['run', M(), '-p', 'Once upon a time', '-n', '8', '--temp', '0', '--json'], {
      env: {RUNNER_MODEL: sharedPath('fixtures/llama.gguf')},
    })
    assert.equal(c.status, 0, c.stderr)
    assert.deepEqual(JSON.parse(c.stdout).tokens, JSON.parse(b.stdout).tokens)
    // ... and is not even looked up (a name since removed), while alone it is, and a failure names it.
    const d = await runCliAsync(['run', M(), '-p', 'Once', '-n', '1'], {env: {RUNNER_MODEL: 'removed-model'}})
    assert.equal(d.status, 0, d.stderr)
    const e = await runCliAsync(['run', '-p', 'Once', '-n', '1'], {env: {RUNNER_MODEL: 'removed-model', RUNNER_MODELS: dir}})
    assert.equal(e.status, 3)
    assert.match(e.stderr, /RUNNER_MODEL "removed-model": no such file, and no model of that name/)
  })

  test('a prompt where the model goes says to use -p; no model at all says how to give one', async () => {
    const a = await runCliAsync(['run', '-m', M(), 'Once upon a time'])
    assert.equal(a.status, 2)
    assert.match(a.stderr, /a prompt goes in -p "Once upon a time"/)
    const b = await runCliAsync(['run', '-p', 'hi'])
    assert.equal(b.status, 2)
    assert.match(b.stderr, /no model: `runner run FILE.gguf -p TEXT` or `runner run -m FILE.gguf`/)
    const c = await runCliAsync(['run', M(), 'two', '-p', 'x'])
    assert.equal(c.status, 2)
    assert.match(c.stderr, /unexpected argument "two": the prompt goes in -p TEXT/)
  })

  test('-ngl N is refused naming it (no GPU backend); -ngl 0 runs', async () => {
    const a = await runCliAsync(['run', '-m', M(), '-p', 'hi', '-n', '2', '-ngl', '99'])
    assert.equal(a.status, 6)
    assert.match(a.stderr, /-ngl\/--n-gpu-layers 99: this build has no GPU backend/)
    const b = await runCliAsync(['run', '-m', M(), '-p', 'hi', '-n', '2', '-ngl', '0'])
    assert.equal(b.status, 0, b.stderr)
  })

  test('--seed -1 is a random seed, reported', async () => {
    const r = await runCliAsync(['run', '-m', M(), '-p', 'hi', '-n', '2', '--seed', '-1', '--json'])
    assert.equal(r.status, 0, r.stderr)
    assert.match(JSON.parse(r.stdout).seed, /^\d+$/)
  })

  test('a mistyped flag: one line with the nearest flag, no help dump', async () => {
    const r = await runCliAsync(['run', '-m', M(), '-p', 'hi', '--ctxsize', '64'])
    assert.equal(r.status, 2)
    assert.match(r.stderr, /^runner run: unknown flag --ctxsize; did you mean --ctx-size\?/)
    assert.doesNotMatch(r.stderr + r.stdout, /USAGE/)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  })

  test('a mistyped command, and a model where a command goes', async () => {
    const a = await runCliAsync(['rn'])
    assert.equal(a.status, 2)
    assert.match(a.stderr, /rn is not a runner command. Did you mean (`runner rm` or )?`runner run`\?/)
    const b = await runCliAsync(['model.gguf', '-p', 'hi'])
    assert.equal(b.status, 2)
    assert.match(b.stderr, /To run a model: `runner run model.gguf -p TEXT`/)
  })

  test('--ctx, --ctx-size and -c mean the same on run and score', async () => {
    for (const flag of ['--ctx', '--ctx-size', '-c']) {
      const r = await runCliAsync(['run', '-m', M(), '-p', 'hi', '-n', '2', flag, '64', '--json'])
      assert.equal(r.status, 0, `${flag}: ${r.stderr}`)
    }
    const s = await runCliAsync(['score', '-m', M(), '--file', sharedPath('reference', 'corpus-stories.txt'), '-c', '128', '--json'])
    assert.equal(s.status, 0, s.stderr)
    assert.equal(JSON.parse(s.stdout).scheme.ctx, 128)
  })

  test('-c beyond the training context runs with one warning naming both numbers, on run, chat, embed and score alike', async () => {
    const warning = /^runner: warning: context size 4096 > the model's training context 2048: possible training context overflow/m
    // score refused a window beyond the training context; now the same warning (a corpus of more than one window)
    const corpus = join(dir, 'corpus.txt')
    writeFileSync(corpus, readFileSync(sharedPath('reference', 'corpus-stories.txt'), 'utf8').repeat(4))
    const [run, chat, embed, score] = await Promise.all([
      runCliAsync(['run', '-m', M(), '-p', 'hi', '-n', '2', '-c', '4096', '--json']),
      runCliWithInput(['chat', '-m', M(), '-n', '2', '-c', '4096', '--json'], 'hi\n'),
      runCliAsync(['embed', '-m', M(), '-p', 'hi', '-c', '4096', '--json']),
      runCliAsync(['score', '-m', M(), '--file', corpus, '-c', '4096', '--json']),
    ])
    for (const [name, r] of Object.entries({run, chat, embed, score})) {
      assert.equal(r.status, 0, `${name}: ${r.stderr}`)
      assert.match(r.stderr, warning, name)
      assert.equal(r.stderr.match(/warning/g)?.length, 1, `${name}: one warning`)
    }
    assert.equal(JSON.parse(score.stdout).scheme.ctx, 4096)
  })

  test('serve: the same warning for --ctx beyond the training context; --chat-template NAME is the built-in', async () => {
    const s = await serveProcess(M(), ['--ctx', '4096', '--chat-template', 'gemma'])
    try {
      assert.match(s.stderr(), /^runner: warning: context size 4096 > the model's training context 2048/m)
      const caps = (await (await fetch(`${s.url}/v1/capabilities`)).json()) as {chat_template: {origin: string; source: string}}
      assert.equal(caps.chat_template.origin, 'override')
      assert.match(caps.chat_template.source, /<start_of_turn>/)
    } finally {
      s.child.kill('SIGTERM')
      await s.exited
    }
  })

  test('text and summary in one file are separated by a newline; -n 1 reports no decode rate', () => {
    const log = join(dir, 'log.txt')
    const r = spawnSync('sh', ['-c', `node bin/run.js run -m "${M()}" -p "Once upon a time" -n 1 --temp 0 > "${log}" 2>&1`], {
      cwd: REPO_ROOT,
    })
    assert.equal(r.status, 0)
    const text = readFileSync(log, 'utf8')
    const lines = text.split('\n')
    const summary = lines.findIndex((l) => l.startsWith('load '))
    assert.ok(summary >= 1, `the summary is glued to the text: ${JSON.stringify(text)}`)
    assert.match(lines[summary]!, /decode 1 tokens · peak RSS/)
    assert.doesNotMatch(lines[summary]!, /decode 1 tokens, [\d.]+ tok\/s/)
  })
})
