// `runner serve` as a process: the compiled CLI is spawned, prints one startup line with its URL,
// answers the OpenAI SDK, guards routes with --api-key, warns when bound beyond loopback without a
// key, and on SIGTERM/SIGINT stops accepting, lets the in-flight stream finish and exits 0.
// Build first (`npx tsc -p .`): the CLI runs from dist/.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {type AddressInfo, createServer} from 'node:net'
import {describe, test} from 'node:test'

import OpenAI from 'openai'

import {serveProcess} from '../helpers/serve-process.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

const serve = (args: string[]) => serveProcess(STORIES, args)

describe('runner serve (the process)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test('startup line, the SDK, SIGTERM with a stream in flight: the stream completes, new connections are refused, exit 0', async () => {
    const s = await serve(['--parallel', '2', '--ctx', '256', '--threads', '1'])
    try {
      const client = new OpenAI({baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0})
      const health = (await (await fetch(`${s.url}/health`)).json()) as {status: string; slots_idle: number}
      assert.deepEqual([health.status, health.slots_idle], ['ok', 2])
      const stream = await client.completions.create({
        model: 'stories260K',
        prompt: 'Once upon a time',
        max_tokens: 200,
        temperature: 0,
        stream: true,
        stream_options: {include_usage: true},
      })
      let text = ''
      let usage: OpenAI.CompletionUsage | null | undefined
      let signalled = false
      for await (const chunk of stream) {
        if (!signalled) {
          s.child.kill('SIGTERM')
          signalled = true
        }
        text += chunk.choices[0]?.text ?? ''
        usage = chunk.usage ?? usage
      }
      assert.ok(text.length > 0)
      assert.ok(usage && usage.completion_tokens > 0, 'the in-flight stream ran to its end (usage chunk received)')
      assert.equal(await s.exited, 0, s.stderr())
      assert.match(s.stderr(), /SIGTERM: closing/)
      await assert.rejects(fetch(`${s.url}/health`))
    } finally {
      s.child.kill('SIGKILL')
    }
  })

  test('--api-key guards every route but /health (401 as the SDK reads it); SIGINT exits 0; a text log line per request, no key in it', async () => {
    const s = await serve(['--api-key', 'sesame', '--ctx', '128'])
    try {
      assert.equal((await fetch(`${s.url}/health`)).status, 200)
      const wrong = new OpenAI({baseURL: `${s.url}/v1`, apiKey: 'nope', maxRetries: 0})
      await assert.rejects(wrong.models.list(), (e: unknown) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key')
      assert.equal((await fetch(`${s.url}/metrics`)).status, 401)
      const right = new OpenAI({baseURL: `${s.url}/v1`, apiKey: 'sesame', maxRetries: 0})
      assert.equal((await right.models.list()).data[0]!.id, 'stories260K')
      const r = await right.chat.completions.create({model: 'stories260K', messages: [{role: 'user', content: 'Hi'}], max_tokens: 3})
      assert.equal(r.usage?.completion_tokens, 3)
      assert.doesNotMatch(s.stderr(), /warning/)
      s.child.kill('SIGINT')
      assert.equal(await s.exited, 0, s.stderr())
      // The request log (default text, issue #22): one line per request, refusals included, tokens where
      // the model ran, and never a key from the headers.
      const log = s
        .stderr()
        .split('\n')
        .filter((l) => /^\d{4}-\d\d-\d\dT/.test(l))
        .map((l) => l.replace(/^\S+ /, '').replace(/ · \d+ ms$/, ''))
      assert.deepEqual(log, [
        'GET /health 200',
        'GET /v1/models 401',
        'GET /metrics 401',
        'GET /v1/models 200',
        `POST /v1/chat/completions 200 · ${r.usage?.prompt_tokens} prompt + 3 completion tokens`,
      ])
      assert.doesNotMatch(s.stderr(), /sesame|nope/)
    } finally {
      s.child.kill('SIGKILL')
    }
  })

  test('binding beyond loopback without --api-key prints a warning', async () => {
    const s = await serve(['--host', '0.0.0.0', '--ctx', '64'])
    try {
      // stderr and stdout are separate pipes: the warning may be read after the startup line.
      const t0 = performance.now()
      while (!/warning: serving on 0\.0\.0\.0 without --api-key/.test(s.stderr()) && performance.now() - t0 < 5000)
        await new Promise((resolve) => setTimeout(resolve, 10))
      assert.match(s.stderr(), /warning: serving on 0\.0\.0\.0 without --api-key/)
      s.child.kill('SIGTERM')
      assert.equal(await s.exited, 0)
    } finally {
      s.child.kill('SIGKILL')
    }
  })

  test('--alias (repeated), --accept-any-model, --cors (repeated) and --log-format json reach the server', async () => {
    const s = await serve([
      '--ctx',
      '64',
      '--alias',
      'gpt-4o-mini',
      '--alias',
      'local',
      '--accept-any-model',
      '--cors',
      'http://localhost:5173',
      '--cors',
      'https://app.example',
      '--log-format',
      'json',
    ])
    try {
      const client = new OpenAI({baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0})
      const list = await client.models.list()
      assert.deepEqual(
        list.data.map((m) => [m.id, (m as unknown as {aliases: string[]}).aliases]),
        [['gpt-4o-mini', ['local', 'stories260K']]],
      )
      const r = await client.chat.completions.create({model: 'gpt-4o', messages: [{role: 'user', content: 'Hi'}], max_tokens: 2})
      assert.equal(r.model, 'gpt-4o-mini')
      for (const origin of ['http://localhost:5173', 'https://app.example']) {
        const pre = await fetch(`${s.url}/v1/chat/completions`, {
          method: 'OPTIONS',
          headers: {origin, 'access-control-request-method': 'POST'},
        })
        assert.equal(pre.headers.get('access-control-allow-origin'), origin)
      }
      assert.equal((await fetch(`${s.url}/v1/nothing?secret=abc`)).status, 404)
      s.child.kill('SIGTERM')
      assert.equal(await s.exited, 0)
      // --log-format json: one object per line; an unmatched path without its query (issue #22).
      const log = s
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      assert.deepEqual(
        log.map((e) => [e.method, e.route, e.status, e.completion_tokens]),
        [
          ['GET', '/v1/models', 200, undefined],
          ['POST', '/v1/chat/completions', 200, r.usage?.completion_tokens],
          ['OPTIONS', '/v1/chat/completions', 204, undefined],
          ['OPTIONS', '/v1/chat/completions', 204, undefined],
          ['GET', '/v1/nothing', 404, undefined],
        ],
      )
      assert.equal(log[1]!.prompt_tokens, r.usage?.prompt_tokens)
      for (const e of log) assert.ok(typeof e.ms === 'number' && !Number.isNaN(Date.parse(e.time as string)), JSON.stringify(e))
      assert.doesNotMatch(s.stderr(), /secret/)
    } finally {
      s.child.kill('SIGKILL')
    }
  })

  test('a port in use: exit 1 at once (before the model loads), one line naming host:port and --port 0 (issue #22)', async () => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen({host: '127.0.0.1', port: 0}, resolve))
    const port = (holder.address() as AddressInfo).port
    try {
      const c = spawn(process.execPath, ['bin/run.js', 'serve', '-m', STORIES, '--port', String(port)], {cwd: REPO_ROOT})
      let e = ''
      c.stderr.on('data', (d: Buffer) => (e += d.toString()))
      assert.equal(await new Promise((resolve) => c.on('close', resolve)), 1, e)
      assert.equal(e.trim().split('\n').length, 1, e)
      assert.match(e, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use; .*--port 0 .*\\[SERVE_PORT_IN_USE\\]`))
    } finally {
      holder.close()
    }
  })

  test('bad flags exit 2 naming the flag', async () => {
    const child = spawn(process.execPath, ['bin/run.js', 'serve', '-m', STORIES, '--timeout', 'soon'], {cwd: REPO_ROOT})
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    assert.equal(code, 2)
    assert.match(err, /--timeout "soon"/)
    for (const [flags, pattern] of [
      [['--cors', 'localhost:5173'], /--cors "localhost:5173" must be an origin/],
      [['--alias', ''], /--alias must not be empty/],
    ] as const) {
      const c = spawn(process.execPath, ['bin/run.js', 'serve', '-m', STORIES, ...flags], {cwd: REPO_ROOT})
      let e = ''
      c.stderr.on('data', (d: Buffer) => (e += d.toString()))
      assert.equal(await new Promise((resolve) => c.on('exit', resolve)), 2, e)
      assert.match(e, pattern)
    }
  })
})
