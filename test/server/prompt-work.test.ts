// The prompt workers (issue #18, item 2): rendering and tokenizing off the event loop give the same
// bytes as the main thread (the same template and tokenizer from the same metadata), and a render
// that outgrows a worker's heap fails alone, as 413, with the worker replaced for the next request.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {ChatTemplate, type ChatMessage, encodeChatPrompt, RENDER_BUDGET_DEFAULTS} from '../../src/lib/chat/index.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {ApiError} from '../../src/lib/server/api-error.js'
import {PromptWorkers} from '../../src/lib/server/prompt-work.js'
import {createTokenizer} from '../../src/lib/tokenizer/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const STORIES = sharedPath('models', 'stories260K.gguf')

const turns = (n: number): ChatMessage[] => Array.from({length: n}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: `turn ${i}`}))

describe('prompt workers', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const gguf = hasShared() ? readGgufModel(STORIES) : undefined
  // Builds a list of strings that only a history longer than the load probe's asks for.
  const source =
    "{% if messages|length > 4 %}{% set ns = namespace(l=[]) %}{% for i in range(200000) %}{% set ns.l = ns.l + ['some text ' ~ i] %}{% endfor %}{{ ns.l|length }}{% endif %}" +
    '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n'
  const template = ChatTemplate.fromSource(source, {}, 'override', {...RENDER_BUDGET_DEFAULTS, steps: 1e9, milliseconds: 60_000})
  let work: PromptWorkers
  before(async () => {
    work = new PromptWorkers(gguf!, template, {workers: 1, heapMb: 16})
    await work.started()
  })
  after(async () => work?.close())

  test('the same text and tokens as the main thread', async () => {
    const tokenizer = createTokenizer(gguf!)
    const history = turns(3)
    const rendered = await work.render(history)
    assert.equal(rendered, template.render(history))
    assert.deepEqual(await work.encode(rendered, 'chat'), encodeChatPrompt(tokenizer, rendered))
    const text = 'Once upon a time, <s> there was ünïcödé.'
    assert.deepEqual(
      await work.encode(text, {addSpecial: true, parseSpecial: false}),
      tokenizer.encode(text, {addSpecial: true, parseSpecial: false}),
    )
  })

  test(
    'a job that runs to its budget costs only itself: the ones queued behind it are served, each deadline from its own start',
    {timeout: 120_000},
    async () => {
      // A 300 ms time budget on a template that loops on longer histories: twenty such jobs queued at
      // once take six seconds in all, more than any one deadline (5.3 s). Before, the deadlines ran from
      // the queue, the twentieth timed out, its worker was stopped and everything behind it failed.
      const slow = ChatTemplate.fromSource(
        '{% if messages|length > 4 %}{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}{% endif %}{{ messages|length }}',
        {},
        'override',
        {...RENDER_BUDGET_DEFAULTS, steps: 1e12, milliseconds: 300},
      )
      const pool = new PromptWorkers(gguf!, slow, {workers: 1, heapMb: 64})
      try {
        await pool.started()
        const hostile = Array.from({length: 20}, () =>
          pool.render(turns(6)).then(
            () => 'rendered',
            (e: Error & {code?: string}) => e.code,
          ),
        )
        const trivial = pool.render(turns(1))
        assert.deepEqual(await Promise.all(hostile), Array(20).fill('CHAT_TEMPLATE_BUDGET'))
        assert.equal(await trivial, '1')
      } finally {
        await pool.close()
      }
    },
  )

  test(
    "a render past the worker's heap is a 413 for that request; the next one is served by a new worker",
    {timeout: 120_000},
    async () => {
      await assert.rejects(
        work.render(turns(6)),
        (e: unknown) => e instanceof ApiError && e.status === 413 && e.code === 'request_too_large',
      )
      assert.equal(await work.render(turns(1)), template.render(turns(1)))
    },
  )
})
