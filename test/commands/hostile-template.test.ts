// A hostile chat template against the real processes (issue #18, item 3): before the render
// budget, `runner chat` with a ten-million-iteration template hung for good, and `runner serve`
// ignored SIGTERM while a template looped (only SIGKILL ended it). Now chat refuses the template at
// load by name (exit 3), and serve answers /health and shuts down on SIGTERM while a request's
// render is still looping in its prompt worker. Build first: the CLI runs from dist/.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

describe('hostile chat templates and the processes', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-hostile-'))
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  test('runner chat refuses a template that loops on every history, naming it, instead of hanging', {timeout: 60_000}, async () => {
    const file = join(dir, 'loop.jinja')
    writeFileSync(file, '{% for i in range(10000000) %}ab{% endfor %}')
    const r = await runCliAsync(['chat', '-m', STORIES, '--chat-template', file], {timeoutMs: 40_000})
    assert.equal(r.status, 3, r.stderr)
    assert.match(r.stderr, /render budget/)
    assert.match(r.stderr, /CHAT_TEMPLATE_BUDGET|chat template/)
  })

  test('runner serve: /health answers and SIGTERM ends the process while a render loops', {timeout: 60_000}, async () => {
    const file = join(dir, 'later.jinja')
    writeFileSync(
      file,
      '{% if messages|length > 4 %}{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}{% endif %}' +
        '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}',
    )
    const child = spawn(process.execPath, ['bin/run.js', 'serve', '-m', STORIES, '--port', '0', '--ctx', '256', '--chat-template', file], {
      cwd: REPO_ROOT,
      env: {...process.env, NO_COLOR: '1'},
    })
    const exited = new Promise<number | string | null>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal)))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = ''
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString()
          const m = /listening on (http:\/\/\S+)/.exec(out)
          if (m) resolve(m[1]!)
        })
        void exited.then((code) => reject(new Error(`serve exited (${code}) before listening`)))
      })
      const five = Array.from({length: 5}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: 'x'}))
      const hostile = fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: {'content-type': 'application/json'},
        body: JSON.stringify({model: 'stories260K', messages: five, max_tokens: 1}),
      }).catch(() => undefined)
      await new Promise((r) => setTimeout(r, 200))
      const t0 = performance.now()
      assert.equal((await fetch(`${url}/health`)).status, 200)
      assert.ok(performance.now() - t0 < 1000, '/health answered within a second')
      const signalled = performance.now()
      child.kill('SIGTERM')
      const code = await exited
      assert.equal(code, 0)
      assert.ok(performance.now() - signalled < 15_000, 'SIGTERM ended the process')
      await hostile
    } finally {
      child.kill('SIGKILL')
    }
  })
})
