// `runner serve` through the official `openai` npm client, on stories260K (no chat template: the
// ChatML fallback). Anchors from outside this server:
//   - the OpenAI SDK itself parses every response, stream and error (APIError with status and param);
//   - `runner run` (the compiled CLI, spawned) on the same rendered prompt gives the same greedy tokens;
//   - @huggingface/jinja renders the template /v1/capabilities names into the prompt the server uses;
//   - shared/reference/stories260K.json: llama.cpp's prompt tokens and greedy continuation.
// Build first (`npx tsc -p .`): the `runner run` comparison spawns dist/.
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {after, before, describe, test} from 'node:test'

import {Template} from '@huggingface/jinja'
import OpenAI from 'openai'

import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'
import {metric, postRaw, startTestServer, type TestServer, waitIdle} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const MODEL = 'stories260K'
const SKIP = hasShared() ? false : NO_SHARED_REASON

/** Expect the SDK to throw its own APIError with this status (and param, when given). */
async function refused(
  promise: Promise<unknown>,
  status: number,
  param?: string | null,
  code?: string,
): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, `expected an OpenAI APIError, got ${String(error)}`)
    assert.equal(error.status, status, error.message)
    if (param !== undefined) assert.equal(error.param, param, error.message)
    if (code !== undefined) assert.equal(error.code, code, error.message)
    return error
  }
  assert.fail(`expected HTTP ${status}, but the request succeeded`)
}

describe('runner serve with the openai client', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, parallel: 4, nCtx: 256, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  test('GET /v1/models lists the served model; /v1/capabilities names the ChatML fallback and the real settings', async () => {
    const models = await t.client.models.list()
    assert.deepEqual(
      models.data.map((m) => m.id),
      [MODEL],
    )
    assert.equal((await t.client.models.retrieve(MODEL)).id, MODEL)
    await refused(t.client.models.retrieve('gpt-4o'), 404, 'model', 'model_not_found')
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {
      chat_template: {origin: string}
      slots: {parallel: number; n_ctx_per_slot: number; threads_per_slot: number; batched_decode: boolean}
      prefix_cache: {enabled: boolean}
    }
    assert.equal(caps.chat_template.origin, 'fallback-chatml')
    assert.deepEqual(
      [caps.slots.parallel, caps.slots.n_ctx_per_slot, caps.slots.threads_per_slot, caps.slots.batched_decode],
      [4, 256, 1, true], // four slots: their decode steps run together (test/server/batched-decode.test.ts)
    )
    assert.equal(caps.prefix_cache.enabled, true)
  })

  test('a greedy chat completion equals `runner run` on the prompt @huggingface/jinja renders', async () => {
    const messages = [
      {role: 'system' as const, content: 'You tell stories.'},
      {role: 'user' as const, content: 'Once upon a time'},
    ]
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {chat_template: {source: string}}
    const rendered = new Template(caps.chat_template.source).render({
      messages,
      add_generation_prompt: true,
      bos_token: '<s>',
      eos_token: '</s>',
    })
    assert.ok(rendered.startsWith('<|im_start|>system\nYou tell stories.<|im_end|>\n'))
    const applied = (await (await fetch(`${t.url}/apply-template`, {method: 'POST', body: JSON.stringify({messages})})).json()) as {
      prompt: string
    }
    assert.equal(applied.prompt, rendered)

    const chat = await t.client.chat.completions.create({model: MODEL, messages, max_tokens: 40, temperature: 0, logprobs: true})
    const run = await runCliAsync(['run', '-m', STORIES, '-p', rendered, '-n', '40', '--temp', '0', '-c', '256', '--special', '--json'])
    assert.equal(run.status, 0, run.stderr)
    const expected = JSON.parse(run.stdout) as {text: string; tokens: number[]; promptTokens: number[]; finishReason: string}
    const choice = chat.choices[0]!
    assert.equal(choice.message.content, expected.text)
    assert.equal(chat.usage?.completion_tokens, expected.tokens.length)
    assert.equal(chat.usage?.prompt_tokens, expected.promptTokens.length)
    assert.equal(chat.usage?.total_tokens, expected.promptTokens.length + expected.tokens.length)
    assert.equal(choice.logprobs?.content?.length, expected.tokens.length)
    assert.equal(choice.finish_reason, expected.finishReason === 'eos' ? 'stop' : 'length')
  })

  test("completions: llama.cpp's prompt tokens and greedy continuation (shared reference), streamed with include_usage", async () => {
    const ref = (
      JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {
        greedy: Array<{prompt: string; prompt_ids: number[]; ids: number[]; text: string}>
      }
    ).greedy[0]!
    const n = 32
    const whole = await t.client.completions.create({model: MODEL, prompt: ref.prompt, max_tokens: n, temperature: 0})
    assert.equal(whole.usage?.prompt_tokens, ref.prompt_ids.length)
    assert.equal(whole.usage?.completion_tokens, n)
    assert.equal(whole.choices[0]!.finish_reason, 'length')
    assert.ok(
      ref.text.startsWith(whole.choices[0]!.text),
      `${JSON.stringify(whole.choices[0]!.text)} is not a prefix of llama.cpp's ${JSON.stringify(ref.text)}`,
    )
    // The same, given as llama.cpp's own token ids.
    const byIds = await t.client.completions.create({model: MODEL, prompt: ref.prompt_ids, max_tokens: n, temperature: 0})
    assert.equal(byIds.choices[0]!.text, whole.choices[0]!.text)

    const stream = await t.client.completions.create({
      model: MODEL,
      prompt: ref.prompt,
      max_tokens: n,
      temperature: 0,
      stream: true,
      stream_options: {include_usage: true},
    })
    let text = ''
    let finish: string | null = null
    let usage: OpenAI.CompletionUsage | undefined | null
    let chunks = 0
    for await (const chunk of stream) {
      chunks++
      if (chunk.usage) usage = chunk.usage
      for (const c of chunk.choices) {
        text += c.text
        finish = c.finish_reason ?? finish
      }
    }
    assert.ok(chunks > 3)
    assert.equal(text, whole.choices[0]!.text)
    assert.equal(finish, 'length')
    assert.equal(usage?.completion_tokens, n)
    assert.equal(usage?.prompt_tokens, ref.prompt_ids.length)
  })

  test('chat streaming: role first, content deltas, finish reason, usage with cached_tokens last', async () => {
    const messages = [{role: 'user' as const, content: 'Tell me about a cat.'}]
    const whole = await t.client.chat.completions.create({model: MODEL, messages, max_tokens: 24, temperature: 0})
    const stream = await t.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 24,
      temperature: 0,
      stream: true,
      stream_options: {include_usage: true},
    })
    const seen: OpenAI.ChatCompletionChunk[] = []
    for await (const chunk of stream) seen.push(chunk)
    assert.equal(seen[0]!.choices[0]!.delta.role, 'assistant')
    const text = seen.flatMap((c) => c.choices.map((x) => x.delta.content ?? '')).join('')
    assert.equal(text, whole.choices[0]!.message.content)
    const last = seen.at(-1)!
    assert.deepEqual(last.choices, [])
    assert.equal(last.usage?.completion_tokens, whole.usage?.completion_tokens)
    // The same prompt again: every prompt token but the last is reused from a slot's cache.
    assert.equal(last.usage?.prompt_tokens_details?.cached_tokens, (whole.usage?.prompt_tokens ?? 0) - 1)
    assert.equal(seen.filter((c) => c.choices[0]?.finish_reason).at(-1)?.choices[0]?.finish_reason, whole.choices[0]!.finish_reason)
  })

  test('logprobs: the chosen token is the top alternative under greedy; top_logprobs are sorted and count as asked', async () => {
    const chat = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{role: 'user', content: 'Once upon a time'}],
      max_tokens: 12,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    })
    const content = chat.choices[0]!.logprobs!.content!
    assert.equal(content.length, chat.usage?.completion_tokens)
    assert.equal(content.map((c) => c.token).join(''), chat.choices[0]!.message.content)
    for (const c of content) {
      assert.equal(c.top_logprobs.length, 3)
      assert.equal(c.top_logprobs[0]!.token, c.token)
      assert.equal(c.top_logprobs[0]!.logprob, c.logprob)
      assert.ok(c.logprob <= 0)
      for (let i = 1; i < 3; i++) assert.ok(c.top_logprobs[i]!.logprob <= c.top_logprobs[i - 1]!.logprob)
      assert.deepEqual(Buffer.from(c.bytes!).toString('utf8'), c.token)
    }
    const legacy = await t.client.completions.create({model: MODEL, prompt: 'Once upon a time', max_tokens: 8, temperature: 0, logprobs: 2})
    const lp = legacy.choices[0]!.logprobs!
    assert.equal(lp.tokens!.join(''), legacy.choices[0]!.text)
    assert.equal(lp.token_logprobs!.length, 8)
    assert.deepEqual(lp.text_offset!.slice(0, 2), [0, lp.tokens![0]!.length])
    assert.equal(Object.keys(lp.top_logprobs![0]!).length, 2)
  })

  test('stop strings end the text before the match, never leak into the stream, finish_reason "stop"', async () => {
    const base = {model: MODEL, prompt: 'Once upon a time', max_tokens: 40, temperature: 0}
    const free = (await t.client.completions.create(base)).choices[0]!.text
    const stop = ' Lily'
    const cut = free.indexOf(stop)
    assert.ok(cut > 0, `the greedy text contains ${JSON.stringify(stop)}: ${JSON.stringify(free)}`)
    const stopped = await t.client.completions.create({...base, stop: ['zzz', stop]})
    assert.equal(stopped.choices[0]!.text, free.slice(0, cut))
    assert.equal(stopped.choices[0]!.finish_reason, 'stop')
    assert.ok((stopped.usage?.completion_tokens ?? 0) < 40)
    const stream = await t.client.completions.create({...base, stop: 'Lil', stream: true})
    let text = ''
    let finish: string | null = null
    for await (const c of stream) {
      text += c.choices[0]?.text ?? ''
      finish = c.choices[0]?.finish_reason ?? finish
    }
    assert.equal(text, free.slice(0, free.indexOf('Lil')))
    assert.equal(finish, 'stop')
  })

  test('seed: the same seed repeats a sampled completion exactly (0 is a seed); another seed differs', async () => {
    const ask = (seed: number) =>
      t.client.chat.completions.create({
        model: MODEL,
        messages: [{role: 'user', content: 'A story'}],
        max_tokens: 48,
        temperature: 1,
        top_k: 0,
        top_p: 1,
        min_p: 0,
        seed,
        logprobs: true,
      })
    const [a, b, c] = await Promise.all([ask(0), ask(0), ask(12345)])
    assert.equal(a.choices[0]!.message.content, b.choices[0]!.message.content)
    assert.deepEqual(
      a.choices[0]!.logprobs!.content!.map((x) => x.logprob),
      b.choices[0]!.logprobs!.content!.map((x) => x.logprob),
    )
    assert.notEqual(a.choices[0]!.message.content, c.choices[0]!.message.content)
  })

  test("logit_bias bans a token (llama.cpp's first greedy token); presence/frequency penalties change a greedy run as `runner run`'s do", async () => {
    const ref = (
      JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as {greedy: Array<{ids: number[]; prompt: string}>}
    ).greedy[0]!
    const base = {model: MODEL, prompt: ref.prompt, max_tokens: 40, temperature: 0, logprobs: 0}
    const free = await t.client.completions.create(base)
    const banned = await t.client.completions.create({...base, logit_bias: {[String(ref.ids[0])]: -100}})
    assert.notEqual(banned.choices[0]!.logprobs!.tokens![0], free.choices[0]!.logprobs!.tokens![0])
    const penalized = await t.client.completions.create({...base, frequency_penalty: 2, presence_penalty: 2})
    assert.notEqual(penalized.choices[0]!.text, free.choices[0]!.text)
    const run = await runCliAsync([
      'run',
      '-m',
      STORIES,
      '-p',
      ref.prompt,
      '-n',
      '40',
      '--temp',
      '0',
      '-c',
      '256',
      '--presence-penalty',
      '2',
      '--frequency-penalty',
      '2',
      '--json',
    ])
    assert.equal(run.status, 0, run.stderr)
    assert.equal(penalized.choices[0]!.text, (JSON.parse(run.stdout) as {text: string}).text)
  })

  test('refusals are OpenAI errors naming the parameter', async () => {
    const msgs = [{role: 'user' as const, content: 'hi'}]
    const chat = (body: Record<string, unknown>) => t.client.chat.completions.create({model: MODEL, messages: msgs, ...body} as never)
    const probe = () =>
      t.client.chat.completions.create({model: MODEL, messages: msgs, max_tokens: 24, temperature: 0.7, seed: 3, logprobs: true})
    const before = await probe()
    await refused(chat({temperature: 3}), 400, 'temperature')
    await refused(chat({temperature: 'hot'}), 400, 'temperature', 'invalid_type')
    await refused(chat({top_p: 0}), 400, 'top_p')
    await refused(chat({max_tokens: 0}), 400, 'max_tokens')
    await refused(chat({n: 17}), 400, 'n', 'unsupported_value')
    await refused(chat({response_format: {type: 'json_yaml'}}), 400, 'response_format.type')
    await refused(chat({response_format: {type: 'json_schema'}}), 400, 'response_format.json_schema')
    await refused(chat({top_logprobs: 2}), 400, 'top_logprobs')
    await refused(chat({top_logprobs: 21, logprobs: true}), 400, 'top_logprobs')
    await refused(chat({seed: 2 ** 60}), 400, 'seed')
    await refused(chat({logit_bias: {'512': 5}}), 400, 'logit_bias')
    await refused(chat({logit_bias: {x: 5}}), 400, 'logit_bias')
    await refused(chat({stop: ['a', 'b', 'c', 'd', 'e']}), 400, 'stop')
    await refused(chat({stop: ['a', '']}), 400, 'stop[1]')
    await refused(chat({stream_options: {include_usage: true}}), 400, 'stream_options')
    await refused(chat({functions: [{name: 'f'}]}), 400, 'functions', 'unsupported_parameter')
    await refused(chat({tools: [{type: 'function', function: {name: 'f g'}}]}), 400, 'tools[0].function.name')
    await refused(chat({tools: [{type: 'code_interpreter'}]}), 400, 'tools[0].type')
    await refused(
      chat({tools: [{type: 'function', function: {name: 'f'}}], tool_choice: {type: 'function', function: {name: 'g'}}}),
      400,
      'tool_choice.function.name',
    )
    await refused(chat({frobnicate: 1}), 400, 'frobnicate', 'unknown_parameter')
    await refused(chat({max_tokens: 300}), 400, 'max_tokens', 'context_length_exceeded')
    await refused(chat({model: 'gpt-4o'}), 404, 'model', 'model_not_found')
    await refused(t.client.chat.completions.create({model: MODEL, messages: []}), 400, 'messages')
    await refused(t.client.chat.completions.create({model: MODEL, messages: [{role: 'user', content: ''}]}), 400, 'messages[0].content')
    await refused(
      t.client.chat.completions.create({
        model: MODEL,
        messages: [{role: 'user', content: [{type: 'image_url', image_url: {url: 'http://x/y.png'}}]}],
      }),
      400,
      'messages[0].content[0].type',
    )
    await refused(
      t.client.chat.completions.create({model: MODEL, messages: [{role: 'tool', content: 'x', tool_call_id: 'a'}]}),
      400,
      'messages[0].tool_call_id',
    )
    await refused(
      t.client.chat.completions.create({
        model: MODEL,
        messages: [
          {role: 'user', content: 'a'},
          {role: 'assistant', content: null, tool_calls: [{id: 'c1', type: 'function', function: {name: 'f', arguments: '{}'}}]},
        ],
        tools: [{type: 'function', function: {name: 'f'}}],
      }),
      400,
      'messages[1]',
    )
    const long = await refused(
      t.client.chat.completions.create({model: MODEL, messages: [{role: 'user', content: 'The dog ran. '.repeat(80)}]}),
      400,
      'messages',
      'context_length_exceeded',
    )
    assert.match(long.message, /256 tokens.*resulted in \d+ tokens/)
    await refused(t.client.completions.create({model: MODEL, prompt: [1, 2, 9999]}), 400, 'prompt[2]')
    await refused(t.client.completions.create({model: MODEL, prompt: 'x', echo: true}), 400, 'echo')
    await refused(t.client.completions.create({model: MODEL, prompt: ['a', 'b']}), 400, 'prompt')
    await refused(t.client.completions.create({model: MODEL, prompt: 'x', logprobs: 6.5 as number}), 400, 'logprobs')
    // None of that leaked a slot or changed what the next request gets.
    await waitIdle(t.url)
    const again = await probe()
    assert.deepEqual(again.choices, before.choices)
  })

  test('malformed bodies, oversize bodies and unknown routes get the same error shape', async () => {
    const bad = await postRaw(t.url, '/v1/chat/completions', '{"model": ')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.code, 'invalid_json')
    assert.equal(bad.body.error.type, 'invalid_request_error')
    const arr = await postRaw(t.url, '/v1/completions', '[1,2]')
    assert.equal(arr.status, 400)
    const missing = await postRaw(t.url, '/v1/chat/completions', JSON.stringify({messages: [{role: 'user', content: 'x'}]}))
    assert.deepEqual([missing.status, missing.body.error.param, missing.body.error.code], [400, 'model', 'missing_required_parameter'])
    const huge = await postRaw(t.url, '/v1/completions', JSON.stringify({model: MODEL, prompt: 'x'.repeat(5 << 20)}))
    assert.equal(huge.status, 413)
    assert.equal(huge.body.error.code, 'request_too_large')
    const noRoute = await fetch(`${t.url}/v1/audio/speech`, {method: 'POST', body: '{}'})
    assert.equal(noRoute.status, 404)
    assert.equal(((await noRoute.json()) as {error: {type: string}}).error.type, 'invalid_request_error')
    // curl's default form content type is read as JSON too.
    const form = await postRaw(t.url, '/v1/completions', JSON.stringify({model: MODEL, prompt: 'Once', max_tokens: 2}), {
      'content-type': 'application/x-www-form-urlencoded',
    })
    assert.equal(form.status, 200)
  })

  test('requests running side by side get the tokens they get alone (the determinism contract)', async () => {
    const asks = [0, 1, 2, 3, 4, 5].map((i) => ({
      model: MODEL,
      prompt: ['Once upon a time', 'The dog', 'Lily and Ben', 'A big red ball'][i % 4]!,
      max_tokens: 48,
      temperature: 0.9,
      seed: 100 + i,
      logprobs: 1,
    }))
    const alone: string[] = []
    for (const a of asks) alone.push(JSON.stringify((await t.client.completions.create(a)).choices[0]!.logprobs))
    const together = await Promise.all(asks.map(async (a) => JSON.stringify((await t.client.completions.create(a)).choices[0]!.logprobs)))
    assert.deepEqual(together, alone)
  })

  test('/metrics: Prometheus text with HELP and TYPE per metric, token counters, idle after work, scrapes not counted', async () => {
    const before = await metric(t.url, 'runner_generated_tokens_total')
    const r = await t.client.completions.create({model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0})
    assert.equal(await metric(t.url, 'runner_generated_tokens_total'), before + (r.usage?.completion_tokens ?? 0))
    const res = await fetch(`${t.url}/metrics`)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await res.text()
    const lines = text.trimEnd().split('\n')
    const described = new Set<string>()
    const typed = new Set<string>()
    for (const line of lines) {
      const help = /^# HELP (\w+) .+/.exec(line)
      const type = /^# TYPE (\w+) (counter|gauge)$/.exec(line)
      if (help) described.add(help[1]!)
      else if (type) typed.add(type[1]!)
      else {
        const m = /^(\w+)(\{[^}]*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(line)
        assert.ok(m, `not a sample line: ${line}`)
        assert.ok(described.has(m[1]!) && typed.has(m[1]!), `${m[1]} has no HELP/TYPE before its sample`)
      }
    }
    for (const name of [
      'runner_prompt_tokens_total',
      'runner_cached_tokens_total',
      'runner_generation_seconds_total',
      'runner_queue_depth',
      'runner_slots_busy',
      'runner_prefix_cache_hits_total',
      'runner_prefix_cache_misses_total',
      'runner_prefix_cache_bytes',
      'process_resident_memory_bytes',
    ]) {
      assert.ok(typed.has(name), name)
    }
    assert.doesNotMatch(text, /route="\/metrics"/)
    assert.ok((await metric(t.url, 'process_resident_memory_bytes')) > 1 << 20)
    await waitIdle(t.url)
  })
})
