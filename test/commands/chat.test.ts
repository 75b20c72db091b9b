// `runner chat` end to end through the compiled CLI (build first: `npx tsc -p .`).
//
// Line mode (standard input not a terminal): one message per line in, one answer per line out.
// Anchors: a greedy reply equals `runner run --json` on the same rendered prompt (the prompt being
// @huggingface/jinja's rendering of the ChatML fallback, computed here, not by the CLI), for the
// first turn (evaluated whole) and the second (mostly from the KV cache); exit codes of the table.
// The interactive UI is driven in a real terminal by test/chat/tui.test.ts.
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, test} from 'node:test'

import {Template} from '@huggingface/jinja'

import {CHATML_TEMPLATE} from '../../src/lib/chat/index.js'
import {unescapeLine} from '../../src/lib/chat-ui/escape.js'
import {type CliResult, runCliWithInput, hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
const dir = mkdtempSync(join(tmpdir(), 'runner-chat-cli-'))
after(() => rmSync(dir, {recursive: true, force: true}))

function chat(args: string[], input: string): Promise<CliResult> {
  return runCliWithInput(['chat', '-m', STORIES, ...args], input)
}

interface Answer {
  text: string
  tokens: number[]
  finishReason: string
  promptTokens: number[]
  cachedTokens: number
  evaluatedTokens: number
  contextUsed: number
  dropped: number
  timings: {promptMs: number; decodeMs: number; promptTokensPerSecond: number; decodeTokensPerSecond: number}
}

const lines = (r: CliResult) => r.stdout.split('\n').slice(0, -1)

describe('runner chat, line mode', {skip: SKIP}, () => {
  test('a greedy reply equals `runner run` on the same rendered prompt, for the first turn and for a turn served from the KV cache', async () => {
    const r = await chat(['--temp', '0', '-n', '24', '-c', '512', '--json'], 'Hello\nTell me a story\n')
    assert.equal(r.status, 0, r.stderr)
    const [a1, a2] = lines(r).map((l) => JSON.parse(l) as Answer)
    assert.equal(lines(r).length, 2, 'one JSON line per message')
    const m1 = [{role: 'user', content: 'Hello'}]
    const m2 = [...m1, {role: 'assistant', content: a1!.text}, {role: 'user', content: 'Tell me a story'}]
    const render = (messages: object[]) =>
      new Template(CHATML_TEMPLATE).render({messages, add_generation_prompt: true, bos_token: '<s>', eos_token: '</s>'})
    const runs = await Promise.all(
      [m1, m2].map((m) =>
        runCliAsync(['run', '-m', STORIES, '-p', render(m), '--temp', '0', '-n', '24', '-c', '512', '--special', '--json']),
      ),
    )
    const pairs: Array<[Answer, CliResult]> = [
      [a1!, runs[0]!],
      [a2!, runs[1]!],
    ]
    for (const [i, [answer, run]] of pairs.entries()) {
      assert.equal(run.status, 0, run.stderr)
      const doc = JSON.parse(run.stdout) as {tokens: number[]; promptTokens: number[]; text: string}
      assert.deepEqual(answer.promptTokens, doc.promptTokens, `turn ${i + 1}: the chat prompt is the rendered text's tokens`)
      assert.deepEqual(answer.tokens, doc.tokens, `turn ${i + 1}: the same greedy tokens as runner run`)
      assert.equal(answer.text, doc.text)
    }
    assert.equal(a1!.cachedTokens, 0)
    assert.ok(a2!.cachedTokens >= a1!.promptTokens.length, `turn 2 reused the KV cache (${a2!.cachedTokens} tokens)`)
    assert.equal(a2!.evaluatedTokens, a2!.promptTokens.length - a2!.cachedTokens)
    assert.ok(a2!.timings.decodeTokensPerSecond > 0 && a2!.timings.promptMs >= 0)
  })

  test('one answer per line; newlines inside an answer are written \\n; slash commands answer on stderr', async () => {
    const save = join(dir, 'lines.json')
    const input = 'Once upon a time\n\n/params n=40\nWhat happened next?\n/save ' + save + '\n'
    const [plain, json] = await Promise.all([
      chat(['--temp', '0', '-n', '24', '-c', '512'], input),
      chat(['--temp', '0', '-n', '24', '-c', '512', '--json'], input),
    ])
    assert.equal(plain.status, 0, plain.stderr)
    assert.equal(lines(plain).length, 2, `two messages, two lines (the empty line and the commands print nothing): ${plain.stdout}`)
    const docs = lines(json).map((l) => JSON.parse(l) as Answer)
    assert.deepEqual(
      lines(plain).map(unescapeLine),
      docs.map((d) => d.text),
      'each line is the escaped answer',
    )
    assert.ok(
      docs.some((d) => d.text.includes('\n')),
      'an answer with a newline is in the test',
    )
    assert.equal(docs[1]!.tokens.length, 40, '/params n=40 applied to the second reply')
    assert.match(plain.stderr, /n=40/)
    assert.match(plain.stderr, /saved 4 messages/)
    const saved = JSON.parse(readFileSync(save, 'utf8')) as {messages: Array<{role: string; content: string}>}
    assert.deepEqual(
      saved.messages.filter((m) => m.role === 'assistant').map((m) => m.content),
      docs.map((d) => d.text),
    )
  })

  test('a message that does not fit is refused with exit 2 (the answers before it are printed); --context-shift answers it', async () => {
    const input = Array.from({length: 6}, (_, i) => `Message ${i}: the little dog ran to the park.`).join('\n') + '\n'
    const [refused, shifted] = await Promise.all([
      chat(['--temp', '0', '-n', '32', '-c', '160'], input),
      chat(['--temp', '0', '-n', '32', '-c', '160', '--context-shift', '--json'], input),
    ])
    assert.equal(refused.status, 2, refused.stderr)
    assert.match(refused.stderr, /does not fit: \d+ tokens plus 32 for the reply, but the context holds 160.*\[CHAT_CONTEXT_FULL\]/)
    assert.ok(lines(refused).length >= 1 && lines(refused).length < 6)
    assert.equal(shifted.status, 0, shifted.stderr)
    const docs = lines(shifted).map((l) => JSON.parse(l) as Answer)
    assert.equal(docs.length, 6)
    assert.ok(docs.some((d) => d.dropped > 0))
    assert.match(shifted.stderr, /dropped the \d+ oldest messages/)
  })

  test('refusals: an unknown slash command and a bad /params value exit 2 naming them; a bad --temp exits 2', async () => {
    const [unknown, badParam, badFlag] = await Promise.all([
      chat(['--temp', '0', '-n', '4'], '/frobnicate\nHello\n'),
      chat(['--temp', '0', '-n', '4'], '/params temp=hot\n'),
      chat(['--temp', 'hot'], 'Hello\n'),
    ])
    assert.equal(unknown.status, 2)
    assert.match(unknown.stderr, /unknown command \/frobnicate/)
    assert.equal(unknown.stdout, '', 'nothing answered after the refusal')
    assert.equal(badParam.status, 2)
    assert.match(badParam.stderr, /temp "hot" is not a number/)
    assert.equal(badFlag.status, 2)
    assert.match(badFlag.stderr, /--temp "hot" is not a number/)
  })

  test('Ctrl+C (SIGINT) during a reply prints it as far as it got, on one line, and exits 130', async () => {
    const child = spawn(process.execPath, ['bin/run.js', 'chat', '-m', STORIES, '--temp', '0', '-c', '2048', '-t', '1'], {
      cwd: REPO_ROOT,
      env: {...process.env, NO_COLOR: '1'},
    })
    let stdout = ''
    let stderr = ''
    let sent = false
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      // The reply would run to the full context (2000 tokens, seconds); stop it once it has begun.
      if (!sent && stdout.length > 20) {
        sent = true
        child.kill('SIGINT')
      }
    })
    child.stdin.write('Once upon a time\n')
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
    assert.equal(status, 130, stderr)
    assert.ok(sent)
    assert.ok(stdout.endsWith('\n') && stdout.split('\n').length === 2, `one line: ${JSON.stringify(stdout.slice(0, 200))}`)
    assert.ok(stdout.length < 4000, 'stopped well before the context filled')
  })

  test('/system, /reset and /load in line mode', async () => {
    const save = join(dir, 'sys.json')
    const r = await chat(
      ['--temp', '0', '-n', '8', '--system', 'First'],
      `/system\n/system Second\nHi\n/save ${save}\n/reset\n/load ${save}\n/save ${save}.2\n`,
    )
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /system: First/)
    assert.match(r.stderr, /system prompt set: Second/)
    assert.match(r.stderr, /conversation reset/)
    assert.match(r.stderr, /loaded 3 messages/)
    const a = JSON.parse(readFileSync(save, 'utf8'))
    assert.deepEqual(a.messages[0], {role: 'system', content: 'Second'})
    assert.deepEqual(JSON.parse(readFileSync(`${save}.2`, 'utf8')), a, 'what /load read is what /save wrote')
  })
})
