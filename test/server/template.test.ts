// Chat templates in the server: a model that carries `tokenizer.chat_template` (a copy of
// stories260K written by our GGUF writer with a Vicuna-style template that refuses non-alternating
// roles) is rendered with its own template. Anchors: @huggingface/jinja rendering the same template
// text in the test, `runner run` (the compiled CLI) on that rendered prompt, and the template's own
// raise_exception wording for a history it cannot represent.
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {Template} from '@huggingface/jinja'
import OpenAI from 'openai'

import {CHATML_TEMPLATE} from '../../src/lib/chat/index.js'
import {GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const TEMPLATE =
  "{% for m in messages %}{% if m.role == 'system' %}{% if not loop.first %}{{ raise_exception('System message must come first') }}{% endif %}{{ m.content + '\\n\\n' }}" +
  "{% else %}{% if (m.role == 'user') != ((loop.index0 - (1 if messages[0].role == 'system' else 0)) % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "{% if m.role == 'user' %}{{ 'USER: ' + m.content + '\\n' }}{% else %}{{ 'ASSISTANT: ' + m.content + '\\n' }}{% endif %}{% endif %}{% endfor %}" +
  "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"

describe('a model with its own chat template', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-serve-template-'))
  const file = join(dir, 'stories-templated.gguf')
  let t: TestServer
  before(async () => {
    const m = readGgufModel(STORIES)
    const kvs = [
      ...m.kvs.filter((kv) => kv.key !== 'tokenizer.chat_template'),
      {key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: TEMPLATE},
    ]
    await writeGguf(file, {
      kvs,
      tensors: m.tensors.map((x) => ({name: x.name, type: x.type, shape: [...x.shape], data: {file: x.file, offset: x.offset}})),
    })
    t = await startTestServer({modelPath: file, parallel: 1, nCtx: 256, threadsPerSlot: 1})
  })
  after(async () => {
    await t?.close()
    rmSync(dir, {recursive: true, force: true})
  })

  const messages = [
    {role: 'system' as const, content: 'Stories for children.'},
    {role: 'user' as const, content: 'Tell me about Lily and her ball.'},
  ]

  test('/v1/capabilities names the model template; the prompt is what @huggingface/jinja renders from it', async () => {
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {chat_template: {origin: string; source: string}}
    assert.equal(caps.chat_template.origin, 'model')
    assert.equal(caps.chat_template.source, TEMPLATE)
    const expected = new Template(TEMPLATE).render({messages, add_generation_prompt: true})
    assert.equal(expected, 'Stories for children.\n\nUSER: Tell me about Lily and her ball.\nASSISTANT:')
    const applied = (await (await fetch(`${t.url}/apply-template`, {method: 'POST', body: JSON.stringify({messages})})).json()) as {
      prompt: string
    }
    assert.equal(applied.prompt, expected)
  })

  test('a greedy chat completion equals `runner run` on that prompt', async () => {
    const rendered = new Template(TEMPLATE).render({messages, add_generation_prompt: true})
    const [chat, run] = await Promise.all([
      t.client.chat.completions.create({model: 'stories-templated', messages, max_tokens: 32, temperature: 0}),
      runCliAsync(['run', '-m', file, '-p', rendered, '-n', '32', '--temp', '0', '-c', '256', '--special', '--json']),
    ])
    assert.equal(run.status, 0, run.stderr)
    const expected = JSON.parse(run.stdout) as {text: string; tokens: number[]; promptTokens: number[]}
    assert.equal(chat.choices[0]!.message.content, expected.text)
    assert.equal(chat.usage?.prompt_tokens, expected.promptTokens.length)
    assert.equal(chat.usage?.completion_tokens, expected.tokens.length)
  })

  test("a role order the template cannot represent is refused with the template's words, naming messages", async () => {
    try {
      await t.client.chat.completions.create({
        model: 'stories-templated',
        messages: [
          {role: 'user', content: 'a'},
          {role: 'user', content: 'b'},
        ],
      })
      assert.fail('expected a 400')
    } catch (error) {
      assert.ok(error instanceof OpenAI.BadRequestError, String(error))
      assert.equal(error.param, 'messages')
      assert.match(error.message, /Conversation roles must alternate/)
    }
    // The server is unchanged by the refusal.
    const ok = await t.client.chat.completions.create({model: 'stories-templated', messages, max_tokens: 4, temperature: 0})
    assert.equal(ok.usage?.completion_tokens, 4)
  })

  test('--chat-template chatml and a template text override the model template, and say so', async () => {
    for (const [override, origin, source] of [
      ['chatml', 'fallback-chatml', CHATML_TEMPLATE],
      ['{% for m in messages %}{{ m.content }}{% endfor %}', 'override', '{% for m in messages %}{{ m.content }}{% endfor %}'],
    ] as const) {
      const s = await startTestServer({modelPath: file, parallel: 1, nCtx: 128, threadsPerSlot: 1, chatTemplate: override})
      try {
        const caps = (await (await fetch(`${s.url}/v1/capabilities`)).json()) as {chat_template: {origin: string; source: string}}
        assert.deepEqual([caps.chat_template.origin, caps.chat_template.source], [origin, source])
        const applied = (await (await fetch(`${s.url}/apply-template`, {method: 'POST', body: JSON.stringify({messages})})).json()) as {
          prompt: string
        }
        assert.equal(applied.prompt, new Template(source).render({messages, add_generation_prompt: true}))
      } finally {
        await s.close()
      }
    }
  })
})
