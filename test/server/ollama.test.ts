// Ollama's API on `runner serve`, driven by the official `ollama` npm client (0.6.4) pointed at the
// server (`new Ollama({host})`, as its README shows for a custom host): the client parses every
// response, stream line and error (its ResponseError with `error` and `status_code`). Anchors: the
// client itself; llama.cpp's greedy continuation (shared/reference/stories260K.json) for a raw
// generate; the OpenAI route of the same server (tied to `runner run` in openai.test.ts) for chat;
// the reference's sha256, architecture and context length of the file for tags/show; ajv (a real
// validator) for `format`. Also the error shape of every API family: Anthropic's SDK gets its own
// NotFoundError for Anthropic routes that do not exist, and OpenAI's clients still get OpenAI's.
import assert from 'node:assert/strict'
import {createServer} from 'node:http'
import {readFileSync, statSync} from 'node:fs'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import {Ajv2020} from 'ajv/dist/2020.js'
import {Ollama} from 'ollama'
import OpenAI from 'openai'

import {CHATML_TEMPLATE} from '../../src/lib/chat/index.js'
import {ApiError} from '../../src/lib/server/api-error.js'
import {NdjsonWriter} from '../../src/lib/server/ndjson.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer, waitIdle} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const MODEL = 'stories260K'
const KEY = 'sekret'
const SKIP = hasShared() ? false : NO_SHARED_REASON

interface Reference {
  model: {sha256: string; architecture: string; n_vocab: number; train_context_size: number}
  greedy: Array<{prompt: string; prompt_ids: number[]; text: string}>
}
const reference = () => JSON.parse(readFileSync(sharedPath('reference', 'stories260K.json'), 'utf8')) as Reference

const PERSON = {
  type: 'object',
  properties: {
    name: {type: 'string', minLength: 1, maxLength: 10},
    age: {type: 'integer', minimum: 0, maximum: 99},
    pet: {enum: ['cat', 'dog']},
  },
  required: ['name', 'age', 'pet'],
  additionalProperties: false,
}
const validPerson = new Ajv2020({strict: false}).compile(PERSON)
const messages = [{role: 'user', content: 'Once upon a time'}]

/** The client's error for a refused request: the server's message as a string, and the status. */
async function refused(promise: Promise<unknown>, status: number, pattern: RegExp): Promise<string> {
  try {
    await promise
  } catch (error) {
    const e = error as Error & {error?: unknown; status_code?: number}
    assert.equal(e.name, 'ResponseError', String(error))
    assert.equal(typeof e.error, 'string')
    assert.equal(e.message, e.error)
    assert.doesNotMatch(e.message, /\[object Object\]/)
    assert.equal(e.status_code, status, e.message)
    assert.match(e.message, pattern)
    return e.message
  }
  assert.fail('expected a refusal')
}

describe("Ollama's API with the ollama npm client", {skip: SKIP}, () => {
  let t: TestServer
  let ollama: Ollama
  before(async () => {
    t = await startTestServer({modelPath: STORIES, parallel: 2, nCtx: 512, threadsPerSlot: 1, apiKey: KEY, bodyLimitBytes: 64 << 10})
    ollama = new Ollama({host: t.url, headers: {Authorization: `Bearer ${KEY}`}})
  })
  after(async () => t?.close())

  test('chat: greedy, not streamed, equals the OpenAI route on the same history; streamed gives the same text, timings and counts', async () => {
    const r = await ollama.chat({model: MODEL, messages, options: {temperature: 0, num_predict: 40}})
    const o = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{role: 'user', content: 'Once upon a time'}],
      max_tokens: 40,
      temperature: 0,
    })
    assert.equal(r.model, MODEL)
    assert.equal(r.done, true)
    assert.equal(r.message.role, 'assistant')
    assert.equal(r.message.content, o.choices[0]!.message.content)
    assert.equal(r.prompt_eval_count, o.usage?.prompt_tokens)
    assert.equal(r.eval_count, o.usage?.completion_tokens)
    assert.equal(r.done_reason, o.choices[0]!.finish_reason)
    assert.ok(!Number.isNaN(Date.parse(String(r.created_at))))
    for (const k of ['total_duration', 'prompt_eval_duration', 'eval_duration'] as const) assert.ok(Number.isInteger(r[k]) && r[k] > 0, k)
    assert.equal(r.load_duration, 0)
    assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration)

    // The name with Ollama's default tag is the same model; streaming is NDJSON, ending with done: true.
    const stream = await ollama.chat({model: `${MODEL}:latest`, messages, stream: true, options: {temperature: 0, num_predict: 40}})
    let text = ''
    let pieces = 0
    let last: Awaited<ReturnType<typeof ollama.chat>> | undefined
    for await (const c of stream) {
      assert.equal(c.model, `${MODEL}:latest`)
      if (!c.done) {
        pieces += 1
        text += c.message.content
      } else last = c
    }
    assert.equal(text, r.message.content)
    assert.ok(pieces > 1)
    assert.equal(last?.message.content, '')
    assert.deepEqual([last?.done_reason, last?.eval_count, last?.prompt_eval_count], [r.done_reason, r.eval_count, r.prompt_eval_count])
  })

  test('stream defaults to true as in Ollama: a body without stream is answered as NDJSON', async () => {
    const r = await fetch(`${t.url}/api/chat`, {
      method: 'POST',
      headers: {authorization: `Bearer ${KEY}`},
      body: JSON.stringify({model: MODEL, messages, options: {num_predict: 3, seed: 1}}),
    })
    assert.equal(r.status, 200)
    assert.equal(r.headers.get('content-type'), 'application/x-ndjson')
    const lines = (await r.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as {done: boolean; eval_count?: number})
    assert.equal(lines.at(-1)!.done, true)
    assert.equal(lines.at(-1)!.eval_count, 3)
    assert.ok(lines.slice(0, -1).every((l) => !l.done))
  })

  test("generate raw: llama.cpp's prompt tokens and greedy continuation (shared reference); options.stop ends before the stop string", async () => {
    const ref = reference().greedy[0]!
    const g = await ollama.generate({model: MODEL, prompt: ref.prompt, raw: true, options: {temperature: 0, num_predict: 32}})
    assert.equal(g.prompt_eval_count, ref.prompt_ids.length)
    assert.equal(g.eval_count, 32)
    assert.equal(g.done_reason, 'length')
    assert.ok(ref.text.startsWith(g.response), `${JSON.stringify(g.response)} is not a prefix of llama.cpp's ${JSON.stringify(ref.text)}`)
    // Ollama's generate returns no context here: the request's `context` is refused (deprecated).
    assert.equal((g as {context?: unknown}).context, undefined)

    const stop = ' girl'
    const cut = await ollama.generate({
      model: MODEL,
      prompt: ref.prompt,
      raw: true,
      options: {temperature: 0, num_predict: 32, stop: [stop]},
    })
    assert.equal(cut.response, ref.text.slice(0, ref.text.indexOf(stop)))
    assert.equal(cut.done_reason, 'stop')
  })

  test('generate through the template: prompt and system are the user and system turns of /api/chat', async () => {
    const system = 'You tell stories.'
    const g = await ollama.generate({model: MODEL, prompt: 'Once upon a time', system, options: {temperature: 0, num_predict: 24}})
    const c = await ollama.chat({
      model: MODEL,
      messages: [{role: 'system', content: system}, ...messages],
      options: {temperature: 0, num_predict: 24},
    })
    assert.equal(g.response, c.message.content)
    assert.equal(g.prompt_eval_count, c.prompt_eval_count)
    const streamed = await ollama.generate({
      model: MODEL,
      prompt: 'Once upon a time',
      system,
      stream: true,
      options: {temperature: 0, num_predict: 24},
    })
    let text = ''
    for await (const piece of streamed) text += piece.response
    assert.equal(text, g.response)
  })

  test('options: seeds repeat, num_ctx narrows the context, repeat_last_n -1 and the neutral values of absent samplers are accepted', async () => {
    const ask = (seed: number) => ollama.chat({model: MODEL, messages, options: {temperature: 1, seed, num_predict: 24}})
    const [a, b, c] = [await ask(7), await ask(7), await ask(8)]
    assert.equal(a.message.content, b.message.content)
    assert.notEqual(a.message.content, c.message.content)
    // num_ctx: the prompt and the reply share it, so a generation ends when it is full.
    const prompt = (await ollama.chat({model: MODEL, messages, options: {num_predict: 1}})).prompt_eval_count
    const narrow = await ollama.chat({model: MODEL, messages, options: {temperature: 0, num_ctx: prompt + 5, num_predict: 100}})
    assert.equal(narrow.eval_count, 5)
    assert.equal(narrow.done_reason, 'length')
    const ok = await ollama.chat({
      model: MODEL,
      messages,
      keep_alive: '5m',
      think: false,
      options: {
        repeat_last_n: -1,
        repeat_penalty: 1.1,
        seed: -1,
        typical_p: 1,
        tfs_z: 1,
        mirostat: 0,
        mirostat_tau: 5,
        mirostat_eta: 0.1,
        num_predict: 4,
      },
    })
    assert.equal(ok.eval_count, 4)
  })

  test('logprobs and top_logprobs: one entry per generated token, the chosen one the top alternative under greedy', async () => {
    const g = await ollama.generate({
      model: MODEL,
      prompt: 'Once upon a time',
      raw: true,
      logprobs: true,
      top_logprobs: 3,
      options: {temperature: 0, num_predict: 6},
    })
    assert.equal(g.logprobs?.length, 6)
    assert.equal(g.logprobs!.map((l) => l.token).join(''), g.response)
    for (const l of g.logprobs!) {
      assert.equal(l.top_logprobs?.length, 3)
      assert.equal(l.top_logprobs![0]!.token, l.token)
      assert.ok(l.logprob <= 0)
    }
  })

  test('format: a JSON schema gives documents valid under ajv (chat, generate, streamed); "json" is JSON mode (OpenAI\'s json_object)', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await ollama.chat({model: MODEL, messages, format: PERSON, options: {temperature: 1, seed, num_predict: 300}})
      assert.equal(r.done_reason, 'stop', r.message.content)
      assert.ok(validPerson(JSON.parse(r.message.content)), `${r.message.content}: ${JSON.stringify(validPerson.errors)}`)
    }
    const g = await ollama.generate({
      model: MODEL,
      prompt: 'A person:',
      format: PERSON,
      stream: true,
      options: {temperature: 1, seed: 4, num_predict: 300},
    })
    let text = ''
    for await (const piece of g) text += piece.response
    assert.ok(validPerson(JSON.parse(text)), text)
    // "json" is JSON mode with an object at the root: the same tokens as OpenAI's json_object on this server.
    const j = await ollama.chat({model: MODEL, messages, format: 'json', options: {temperature: 1, seed: 5, num_predict: 60}})
    const o = await t.client.chat.completions.create({
      model: MODEL,
      messages: [{role: 'user', content: 'Once upon a time'}],
      response_format: {type: 'json_object'},
      temperature: 1,
      seed: 5,
      max_tokens: 60,
    })
    assert.ok(j.message.content.startsWith('{'), j.message.content)
    assert.equal(j.message.content, o.choices[0]!.message.content)
    const free = await ollama.chat({model: MODEL, messages, options: {temperature: 1, seed: 5, num_predict: 60}})
    assert.notEqual(free.message.content, j.message.content)
  })

  test('a request with no messages or no prompt is Ollama\'s "load": done_reason "load", nothing generated', async () => {
    const c = await ollama.chat({model: MODEL, messages: []})
    assert.deepEqual([c.done, c.done_reason, c.message.content], [true, 'load', ''])
    const g = await ollama.generate({model: MODEL, prompt: ''})
    assert.deepEqual([g.done, g.done_reason, g.response], [true, 'load', ''])
  })

  test('list, ps, show and version describe the served file (the reference sha256, architecture, context length)', async () => {
    const ref = reference()
    const {models} = await ollama.list()
    assert.equal(models.length, 1)
    const m = models[0]!
    assert.equal(m.name, `${MODEL}:latest`)
    assert.equal(m.model, `${MODEL}:latest`)
    assert.equal(m.digest, ref.model.sha256)
    assert.equal(m.size, statSync(STORIES).size)
    assert.equal(Date.parse(String(m.modified_at)), statSync(STORIES).mtime.getTime())
    assert.deepEqual(m.details, {
      parent_model: '',
      format: 'gguf',
      family: ref.model.architecture,
      families: [ref.model.architecture],
      parameter_size: m.details.parameter_size,
      quantization_level: 'F32',
    })
    assert.match(m.details.parameter_size, /^\d+K$/)

    const ps = await ollama.ps()
    assert.equal(ps.models.length, 1)
    assert.equal(ps.models[0]!.name, `${MODEL}:latest`)
    assert.equal(ps.models[0]!.digest, ref.model.sha256)
    assert.ok(ps.models[0]!.size > m.size, 'the KV caches count beside the weights')
    assert.equal(ps.models[0]!.size_vram, 0)
    assert.ok(Date.parse(String(ps.models[0]!.expires_at)) > Date.now())

    const show = await ollama.show({model: MODEL})
    const info = show.model_info as unknown as Record<string, unknown>
    assert.equal(info['general.architecture'], ref.model.architecture)
    assert.equal(info[`${ref.model.architecture}.context_length`], ref.model.train_context_size)
    assert.deepEqual(info['tokenizer.ggml.tokens'], [])
    assert.equal(show.template, CHATML_TEMPLATE)
    assert.deepEqual(show.details, m.details)
    assert.deepEqual(show.capabilities, ['completion', 'tools'])
    assert.match(show.modelfile, new RegExp(`^FROM ${STORIES}$`, 'm'))
    assert.match(show.parameters, /^num_ctx +512$/m)
    const verbose = await ollama.show({model: `${MODEL}:latest`, verbose: true} as never)
    assert.equal((verbose.model_info as unknown as Record<string, unknown[]>)['tokenizer.ggml.tokens']!.length, ref.model.n_vocab)

    const v = await new Ollama({host: t.url}).version()
    assert.equal(v.version, (JSON.parse(readFileSync('package.json', 'utf8')) as {version: string}).version)
  })

  test('tools: a call comes back in message.tool_calls (streamed too); a tool history renders as on the OpenAI route', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_time',
          description: 'The time now',
          parameters: {type: 'object', properties: {}, additionalProperties: false},
        },
      },
    ]
    const ask = [{role: 'user', content: 'What time is it?'}]
    // ChatML has no tool support: the generic format, whose answer is always JSON read back as text or calls.
    const r = await ollama.chat({model: MODEL, messages: ask, tools, options: {temperature: 0, num_predict: 64}})
    const o = await t.client.chat.completions.create({
      model: MODEL,
      messages: ask as never,
      tools: tools as never,
      max_tokens: 64,
      temperature: 0,
    })
    const calls = r.message.tool_calls ?? []
    assert.equal(calls.length, 1, `this model's greedy answer is a call: ${JSON.stringify(r.message)}`)
    assert.deepEqual(
      calls.map((c) => [c.function.name, c.function.arguments]),
      (o.choices[0]!.message.tool_calls ?? []).map((c) => [
        c.type === 'function' ? c.function.name : '',
        JSON.parse(c.type === 'function' ? c.function.arguments : '{}'),
      ]),
    )
    assert.equal(r.message.content, o.choices[0]!.message.content ?? '')
    const streamed = await ollama.chat({model: MODEL, messages: ask, tools, stream: true, options: {temperature: 0, num_predict: 64}})
    let text = ''
    const streamedCalls: unknown[] = []
    for await (const c of streamed) {
      text += c.message.content
      streamedCalls.push(...(c.message.tool_calls ?? []))
    }
    assert.equal(text, r.message.content)
    assert.deepEqual(streamedCalls, calls)

    // Ollama's calls have no ids: the server numbers them (call_<message>_<index>), and a tool message answers the next one.
    const history = [
      ...ask,
      {role: 'assistant', content: '', tool_calls: [{function: {name: 'get_time', arguments: {}}}]},
      {role: 'tool', content: '12:00', tool_name: 'get_time'},
    ]
    const answer = await ollama.chat({model: MODEL, messages: history, tools, options: {temperature: 0, num_predict: 4}})
    const same = await t.client.chat.completions.create({
      model: MODEL,
      messages: [
        ...ask,
        {role: 'assistant', content: '', tool_calls: [{id: 'call_1_0', type: 'function', function: {name: 'get_time', arguments: '{}'}}]},
        {role: 'tool', tool_call_id: 'call_1_0', content: '12:00'},
      ] as never,
      tools: tools as never,
      max_tokens: 4,
      temperature: 0,
    })
    assert.equal(answer.prompt_eval_count, same.usage?.prompt_tokens)
    await refused(
      ollama.chat({model: MODEL, messages: [...history.slice(0, 2), {role: 'tool', content: 'x', tool_name: 'other'}], tools}),
      400,
      /tool_name "other" is not the function/,
    )
  })

  test('embed: the vectors of /v1/embeddings (unit length); the older /api/embeddings; GET / says it is running', async () => {
    const input = ['Once upon a time', 'The dog ran.']
    const r = await ollama.embed({model: MODEL, input})
    const o = await t.client.embeddings.create({model: MODEL, input, encoding_format: 'float'})
    assert.deepEqual(
      r.embeddings,
      o.data.map((d) => d.embedding),
    )
    assert.equal(r.prompt_eval_count, o.usage.prompt_tokens)
    for (const v of r.embeddings) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5)
    const legacy = await ollama.embeddings({model: MODEL, prompt: input[0]!})
    assert.deepEqual(legacy.embedding, r.embeddings[0])
    await refused(ollama.embed({model: MODEL, input: 'x'.repeat(3000)}), 400, /input/)
    await refused(ollama.embed({model: MODEL, input: 'x', options: {temperature: 0}}), 400, /options/)
    const root = await fetch(`${t.url}/`)
    assert.equal(await root.text(), 'Ollama is running')
  })

  test("refusals reach the client as the server's message and status, each naming the field", async () => {
    const chat = (body: Record<string, unknown>) => ollama.chat({model: MODEL, messages, ...body} as never)
    const generate = (body: Record<string, unknown>) => ollama.generate({model: MODEL, prompt: 'x', ...body} as never)
    const unknown = await refused(chat({model: 'llama3.2'}), 404, /^model "llama3\.2" not found: this server serves "stories260K"/)
    assert.match(unknown, /cannot pull/)
    await refused(chat({model: 'stories260K:7b'}), 404, /not found/)
    await refused(chat({options: {bogus: 1}}), 400, /^options\.bogus is not an option/)
    await refused(chat({options: {num_gpu: 1}}), 400, /^options\.num_gpu is not supported: a load-time option/)
    await refused(chat({options: {num_thread: 2}}), 400, /^options\.num_thread .*--threads/)
    await refused(chat({options: {num_keep: 4}}), 400, /^options\.num_keep is not supported/)
    await refused(chat({options: {mirostat: 2}}), 400, /^options\.mirostat = 2 is not supported/)
    await refused(chat({options: {typical_p: 0.5}}), 400, /^options\.typical_p/)
    await refused(chat({options: {penalize_newline: false}}), 400, /^options\.penalize_newline/)
    await refused(chat({options: {temperature: 'hot'}}), 400, /^options\.temperature = "hot" must be number/)
    await refused(chat({options: {top_p: 0}}), 400, /^options\.top_p: .*topP = 0/)
    await refused(chat({options: {num_ctx: 4096}}), 400, /^options\.num_ctx = 4096 is larger than a slot's context of 512 tokens/)
    await refused(chat({options: {num_predict: 0}}), 400, /^options\.num_predict = 0/)
    await refused(chat({options: {seed: -2}}), 400, /^options\.seed = -2/)
    await refused(chat({keep_alive: 'soon'}), 400, /^keep_alive = "soon"/)
    await refused(chat({think: true}), 400, /^think = true is not supported/)
    await refused(chat({tools: [{type: 'function', function: {name: 'f g'}}]}), 400, /tools\[0\]\.function's name "f g" must be/)
    await refused(
      chat({messages: [{role: 'user', content: 'x', images: ['aGk=']}]}),
      400,
      /^messages\[0\]\.images is not supported: the runner is text-only/,
    )
    await refused(
      chat({messages: [{role: 'tool', content: '{}'}]}),
      400,
      /^messages\[0\]\.role: messages\[0\] is a tool result, but no call/,
    )
    await refused(
      chat({messages: [{role: 'user', content: 'x', tool_calls: [{function: {name: 'f', arguments: {}}}]}]}),
      400,
      /^messages\[0\]\.tool_calls goes with role "assistant"/,
    )
    await refused(chat({messages: [{role: 'user', content: 'x', extra: 1}]}), 400, /^messages\[0\]\.extra is not a field/)
    await refused(chat({messages: [{role: 'user', content: ''}]}), 400, /messages\[0\]\.content is empty/)
    await refused(chat({format: 'yaml'}), 400, /^format "yaml" must be "json" or a JSON Schema object/)
    await refused(
      chat({format: {type: 'object', properties: {a: {type: 'array', uniqueItems: true}}}}),
      400,
      /^format: .*uniqueItems.*\/properties\/a/,
    )
    await refused(chat({top_logprobs: 2}), 400, /^top_logprobs needs logprobs: true/)
    await refused(chat({stream: 'yes'}), 400, /^stream = "yes" must be boolean/)
    await refused(chat({frobnicate: true}), 400, /^Unrecognized request argument supplied: frobnicate/)
    await refused(generate({template: '{{ .Prompt }}'}), 400, /^template is not supported/)
    await refused(generate({context: [1, 2, 3]}), 400, /^context is not supported: it is deprecated in Ollama/)
    await refused(generate({suffix: 'end'}), 400, /^suffix is not supported/)
    await refused(generate({images: ['aGk=']}), 400, /^images is not supported/)
    await refused(generate({width: 512}), 400, /^width is not supported: image generation/)
    await refused(generate({raw: true, system: 'x'}), 400, /^system needs the chat template/)
    await refused(
      generate({prompt: 'x '.repeat(600)}),
      400,
      /^the prompt is \d+ tokens, which leaves no room for a reply in a context of 512 tokens \(runner serve --ctx\)/,
    )
    await refused(ollama.show({model: 'other'}), 404, /^model "other" not found/)
    await refused(ollama.show({model: MODEL, system: 'be brief'}), 400, /^system is not supported: \/api\/show describes the served model/)
    // What Ollama's Go client sends for unset fields is accepted: empty strings and nulls.
    const go = await generate({system: '', template: '', suffix: '', format: '', options: null, images: null, context: null})
    assert.equal(go.done, true)
    // A stream refused before it starts is the same error, thrown by the call.
    await refused(ollama.chat({model: MODEL, messages, stream: true, options: {mirostat: 1}}), 400, /^options\.mirostat/)
    await waitIdle(t.url)
  })

  test("errors of the server itself on /api/* are Ollama's shape: unknown route, bad JSON, body too large, missing key", async () => {
    const auth = {authorization: `Bearer ${KEY}`}
    const noRoute = await fetch(`${t.url}/api/pull`, {method: 'POST', headers: auth, body: JSON.stringify({model: 'x'})})
    assert.equal(noRoute.status, 404)
    assert.deepEqual(Object.keys((await noRoute.json()) as object), ['error'])
    await refused(new Ollama({host: t.url, headers: auth}).pull({model: 'llama3.2'}), 404, /^there is no route POST \/api\/pull/)
    const bad = await fetch(`${t.url}/api/chat`, {method: 'POST', headers: auth, body: '{"model": '})
    assert.equal(bad.status, 400)
    assert.match(((await bad.json()) as {error: string}).error, /^the request body is not valid JSON/)
    const huge = await fetch(`${t.url}/api/generate`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({model: MODEL, prompt: 'x'.repeat(100 << 10)}),
    })
    assert.equal(huge.status, 413)
    assert.match(((await huge.json()) as {error: string}).error, /larger than the server's limit/)
    await refused(new Ollama({host: t.url}).list(), 401, /^Incorrect API key provided/)
  })

  test('an error after a stream started is a last NDJSON line the client raises', async () => {
    const server = createServer((_req, res) => {
      const out = new NdjsonWriter(res)
      out.send({model: MODEL, created_at: new Date().toISOString(), message: {role: 'assistant', content: 'Once'}, done: false})
      out.fail(new ApiError(408, "the request did not finish within the server's timeout of 1 s (--timeout)", null, 'request_timeout'))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const address = server.address() as {port: number}
      const stream = await new Ollama({host: `http://127.0.0.1:${address.port}`}).chat({model: MODEL, messages, stream: true})
      const seen: string[] = []
      await assert.rejects(
        (async () => {
          for await (const c of stream) seen.push(c.message.content)
        })(),
        (e: Error) => e.message === "the request did not finish within the server's timeout of 1 s (--timeout)",
      )
      assert.deepEqual(seen, ['Once'])
    } finally {
      server.close()
    }
  })

  test("Anthropic's SDK gets Anthropic's shape on Anthropic routes that do not exist, and wherever it sends anthropic-version", async () => {
    const anthropic = new Anthropic({baseURL: t.url, apiKey: KEY, maxRetries: 0})
    const notFound = async (promise: Promise<unknown>, pattern: RegExp) => {
      try {
        await promise
      } catch (error) {
        assert.ok(error instanceof Anthropic.NotFoundError, String(error))
        assert.equal(error.type, 'not_found_error')
        assert.deepEqual(Object.keys(error.error as object), ['type', 'error'])
        assert.match(String(error.apiMessage), pattern)
        return
      }
      assert.fail('expected a 404')
    }
    await notFound(anthropic.messages.batches.list(), /^there is no route GET \/v1\/messages\/batches/)
    await notFound(anthropic.beta.files.list(), /^there is no route GET \/v1\/files/)
    await notFound(anthropic.models.retrieve('claude-sonnet-4-5'), /claude-sonnet-4-5/)
    // An Anthropic path answers in Anthropic's shape without the header too.
    const bare = await fetch(`${t.url}/v1/messages/no-such-route`, {method: 'POST', headers: {'x-api-key': KEY}, body: '{}'})
    assert.equal(bare.status, 404)
    assert.equal(((await bare.json()) as {type: string; error: {type: string}}).error.type, 'not_found_error')
  })

  test("OpenAI's clients still get OpenAI's shape everywhere else", async () => {
    const openai = new OpenAI({baseURL: `${t.url}/v1`, apiKey: KEY, maxRetries: 0})
    try {
      await openai.batches.list()
      assert.fail('expected a 404')
    } catch (error) {
      assert.ok(error instanceof OpenAI.NotFoundError, String(error))
      assert.equal(error.code, 'unknown_url')
      assert.equal(error.type, 'invalid_request_error')
    }
    try {
      await openai.chat.completions.create({model: MODEL, messages: [{role: 'user', content: 'x'}], temperature: 3})
      assert.fail('expected a 400')
    } catch (error) {
      assert.ok(error instanceof OpenAI.BadRequestError, String(error))
      assert.equal(error.param, 'temperature')
    }
    const root = await fetch(`${t.url}/nope`)
    assert.equal(((await root.json()) as {error: {code: string}}).error.code, 'unknown_url')
  })
})
