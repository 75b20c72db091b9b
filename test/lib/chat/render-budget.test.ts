/**
 * A chat template is code from the model file, so every render runs inside a budget (issue #18,
 * item 3). The hostile templates are the ones the issue found hanging `serve` and `chat` for good
 * (nested range(100000) loops, a ten-million-iteration output loop) plus a string that doubles
 * itself; before the budget each of these held the thread indefinitely (these tests then fail on
 * their timeout). The anchor for "the budget changes nothing else" is @huggingface/jinja's own
 * Template.render: real templates (Qwen2.5 with tools, Llama 3.2, Mistral Nemo, from the @lenml
 * packages) render the same bytes through the budgeted interpreter on long histories.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {describe, test} from 'node:test'

import {Template} from '@huggingface/jinja'

import {ChatHistoryError, ChatTemplate, type ChatMessage, RENDER_BUDGET_DEFAULTS} from '../../../src/lib/chat/index.js'
import {RunnerError} from '../../../src/lib/errors.js'

const require = createRequire(import.meta.url)

const HOSTILE: Readonly<Record<string, string>> = {
  'nested range(100000) loops': '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}',
  'a ten-million-iteration output loop': '{% for i in range(10000000) %}ab{% endfor %}',
  'a string that doubles itself':
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}",
  'a list that doubles itself':
    '{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}',
  'range(10 ** 9)': '{{ range(1000000000)|length }}',
}

function refusedAtLoad(source: string): {error: unknown; ms: number} {
  const t0 = performance.now()
  try {
    ChatTemplate.fromSource(source, {}, 'model')
    return {error: undefined, ms: performance.now() - t0}
  } catch (error) {
    return {error, ms: performance.now() - t0}
  }
}

describe('the render budget of chat templates', () => {
  for (const [name, source] of Object.entries(HOSTILE)) {
    test(`${name}: refused at load by name, in bounded time`, {timeout: 30_000}, () => {
      const {error, ms} = refusedAtLoad(source)
      assert.ok(error instanceof RunnerError, `refused (${String(error)})`)
      assert.equal(error.code, 'CHAT_TEMPLATE_BUDGET')
      assert.match(error.message, /tokenizer\.chat_template went past its render budget/)
      assert.ok(ms < RENDER_BUDGET_DEFAULTS.milliseconds + 2000, `refused after ${ms.toFixed(0)} ms`)
    })
  }

  test('a template that loops only on longer histories passes the load probe and is refused per request', {timeout: 30_000}, () => {
    const source =
      '{% if messages|length > 4 %}{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}{% endif %}' +
      '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}'
    const template = ChatTemplate.fromSource(source, {}, 'model')
    const short: ChatMessage[] = [{role: 'user', content: 'hi'}]
    assert.equal(template.render(short), '<|user|>hi')
    const long: ChatMessage[] = Array.from({length: 6}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: `m${i}`}))
    const t0 = performance.now()
    assert.throws(
      () => template.render(long),
      (e: unknown) => e instanceof ChatHistoryError && e.code === 'CHAT_TEMPLATE_BUDGET' && e.param === 'messages',
    )
    assert.ok(performance.now() - t0 < RENDER_BUDGET_DEFAULTS.milliseconds + 2000)
  })

  test('each bound is honoured as given: steps, string size, list size, time', () => {
    const loop = '{% for i in range(5000) %}{{ i }}{% endfor %}'
    const tight = (b: Partial<typeof RENDER_BUDGET_DEFAULTS>) => ({...RENDER_BUDGET_DEFAULTS, ...b})
    const code = (source: string, budget: typeof RENDER_BUDGET_DEFAULTS) => {
      try {
        ChatTemplate.fromSource(source, {}, 'override', budget)
        return 'accepted'
      } catch (error) {
        return `${(error as RunnerError).code}: ${(error as Error).message}`
      }
    }
    assert.equal(code(loop, RENDER_BUDGET_DEFAULTS), 'accepted')
    assert.match(code(loop, tight({steps: 10_000})), /CHAT_TEMPLATE_BUDGET: .*10000 evaluation steps/)
    assert.match(code("{% for i in range(300) %}{{ 'abcdefghij' }}{% endfor %}", tight({valueChars: 1000})), /strings of 1000 characters/)
    assert.match(code(loop, tight({listItems: 4999})), /lists of 4999 items/)
    assert.match(code('{% for i in range(200000) %}{{ i }}{% endfor %}', tight({milliseconds: 1, steps: 1e9})), /1 ms/)
  })
})

/** A package's template, BOS and EOS (tokenizer_config.json as its authors published it). */
function lenml(pkg: string): {source: string; bos: string; eos: string} | undefined {
  let path: string
  try {
    path = require.resolve(`@lenml/${pkg}/models/tokenizer_config.json`)
  } catch {
    return undefined
  }
  const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>
  const token = (t: unknown) => (typeof t === 'string' ? t : ((t as {content?: string} | null)?.content ?? ''))
  return {source: config.chat_template as string, bos: token(config.bos_token), eos: token(config.eos_token)}
}

describe('the budget changes nothing a real template renders', () => {
  const turns = (n: number): ChatMessage[] => [
    {role: 'system', content: 'You are terse.'},
    ...Array.from({length: n}, (_, i): ChatMessage => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `turn ${i}: ünïcödé ${'x'.repeat(i % 7)}`,
    })),
  ]
  const tools = [
    {
      type: 'function',
      function: {name: 'get_weather', description: 'Weather', parameters: {type: 'object', properties: {city: {type: 'string'}}}},
    },
  ]
  for (const pkg of ['tokenizer-qwen2_5', 'tokenizer-llama3_2', 'tokenizer-mistral_nemo']) {
    const t = lenml(pkg)
    test(
      `${pkg}: 2,049 messages render within the default budget, byte for byte as Template.render`,
      {skip: t ? false : `@lenml/${pkg} is not installed`},
      () => {
        const history = turns(2048)
        const ours = ChatTemplate.fromSource(t!.source, {bos: t!.bos, eos: t!.eos}, 'model')
        const variables = {
          messages: history.map((m) => ({role: m.role, content: m.content})),
          add_generation_prompt: true,
          bos_token: t!.bos,
          eos_token: t!.eos,
        }
        const theirs = new Template(t!.source)
        // Llama 3.2's template calls strftime_now: both renders read the clock within the same minute.
        assert.equal(ours.render(history), theirs.render(variables))
        assert.equal(
          ours.render(history.slice(0, 3), {tools}),
          theirs.render({...variables, messages: variables.messages.slice(0, 3), tools}),
        )
      },
    )
  }
})
