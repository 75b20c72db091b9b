// Model ids and the models routes, through the real clients. Anchors: the `openai` and
// `@anthropic-ai/sdk` SDKs parse every answer (their Model / ModelInfo / Page types: the test lists
// ModelInfo's keys as a Record over `keyof ModelInfo`, so the compiler holds the list to the SDK's
// type, and checks none comes back undefined); llama-server's conventions (one list entry, the other
// ids in `aliases`, responses naming the served id); and /v1/messages itself for every capability
// the Anthropic shape claims.
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'

import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const SKIP = hasShared() ? false : NO_SHARED_REASON
const messages = [{role: 'user' as const, content: 'Once upon a time'}]

async function refusedWith<T extends new (...args: never[]) => Error>(p: Promise<unknown>, ctor: T): Promise<InstanceType<T>> {
  try {
    await p
  } catch (error) {
    assert.ok(error instanceof ctor, String(error))
    return error as InstanceType<T>
  }
  assert.fail('expected an error')
}

/** Every key of the SDK's ModelInfo: the compiler refuses this object if one is missing or extra. */
const MODEL_INFO_KEYS: Record<keyof Anthropic.ModelInfo, true> = {
  id: true,
  type: true,
  display_name: true,
  created_at: true,
  capabilities: true,
  deprecated_at: true,
  lifecycle: true,
  line: true,
  max_input_tokens: true,
  max_tokens: true,
  retires_at: true,
}
const CAPABILITY_KEYS: Record<keyof Anthropic.ModelCapabilities, true> = {
  batch: true,
  citations: true,
  code_execution: true,
  context_management: true,
  effort: true,
  image_input: true,
  pdf_input: true,
  server_tools: true,
  structured_outputs: true,
  thinking: true,
}

function assertModelInfo(m: Anthropic.ModelInfo, id: string): void {
  for (const key of Object.keys(MODEL_INFO_KEYS)) assert.notEqual(m[key as keyof Anthropic.ModelInfo], undefined, `ModelInfo.${key}`)
  for (const key of Object.keys(CAPABILITY_KEYS))
    assert.notEqual(m.capabilities?.[key as keyof Anthropic.ModelCapabilities], undefined, `capabilities.${key}`)
  assert.equal(m.id, id)
  assert.equal(m.type, 'model')
  assert.equal(typeof m.display_name, 'string')
  assert.equal(m.lifecycle, 'active')
  // RFC 3339 (what the SDK documents), no fraction.
  assert.match(m.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
}

describe('model ids: strict by default', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 128, threadsPerSlot: 1})
  })
  after(async () => t?.close())

  test('one model, the file name; any other id is a 404 naming the flags that would accept it', async () => {
    const list = await t.client.models.list()
    assert.deepEqual(
      list.data.map((m) => [m.id, m.object, m.owned_by, (m as unknown as {aliases: string[]}).aliases]),
      [['stories260K', 'model', 'runner', []]],
    )
    for (const p of [
      t.client.models.retrieve('gpt-4o'),
      t.client.chat.completions.create({model: 'gpt-4o', messages, max_tokens: 2}),
      t.client.completions.create({model: 'gpt-4o', prompt: 'x', max_tokens: 2}),
    ]) {
      const e = await refusedWith(p, OpenAI.NotFoundError)
      assert.equal(e.param, 'model')
      assert.equal(e.code, 'model_not_found')
      assert.match(e.message, /`gpt-4o` does not exist; this server serves `stories260K`/)
      assert.match(e.message, /--alias "gpt-4o"/)
      assert.match(e.message, /--accept-any-model/)
    }
    const a = new Anthropic({baseURL: t.url, apiKey: 'x', maxRetries: 0})
    const e = await refusedWith(a.messages.create({model: 'claude-sonnet-4-5', messages, max_tokens: 2}), Anthropic.NotFoundError)
    assert.equal((e.error as {type: string; error: {type: string}}).error.type, 'not_found_error')
    assert.match(e.message, /--accept-any-model/)
  })
})

describe('model ids: --alias (repeated)', {skip: SKIP}, () => {
  let t: TestServer
  let anthropic: Anthropic
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 128, threadsPerSlot: 1, aliases: ['gpt-4o-mini', 'my-model']})
    anthropic = new Anthropic({baseURL: t.url, apiKey: 'x', maxRetries: 0})
  })
  after(async () => t?.close())

  test("the first alias is served; every alias and the file name are accepted and answer as the served id (llama-server's rule)", async () => {
    const list = await t.client.models.list()
    assert.equal(list.data.length, 1)
    assert.equal(list.data[0]!.id, 'gpt-4o-mini')
    assert.deepEqual((list.data[0] as unknown as {aliases: string[]}).aliases, ['my-model', 'stories260K'])
    const texts = new Set<string>()
    for (const model of ['gpt-4o-mini', 'my-model', 'stories260K']) {
      assert.equal((await t.client.models.retrieve(model)).id, 'gpt-4o-mini')
      const r = await t.client.chat.completions.create({model, messages, max_tokens: 6, temperature: 0})
      assert.equal(r.model, 'gpt-4o-mini')
      texts.add(r.choices[0]!.message.content ?? '')
      assert.equal((await t.client.completions.create({model, prompt: 'Once', max_tokens: 2, temperature: 0})).model, 'gpt-4o-mini')
      const m = await anthropic.messages.create({model, messages, max_tokens: 6, temperature: 0})
      assert.equal(m.model, 'gpt-4o-mini')
      assertModelInfo(await anthropic.models.retrieve(model), 'gpt-4o-mini')
    }
    assert.equal(texts.size, 1, 'the same model answers under every id')
    const e = await refusedWith(t.client.models.retrieve('gpt-4o'), OpenAI.NotFoundError)
    assert.match(e.message, /serves `gpt-4o-mini` \(also accepted: `my-model`, `stories260K`\)/)
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {
      model: {id: string; aliases: string[]; accept_any_model: boolean}
    }
    assert.deepEqual([caps.model.id, caps.model.aliases, caps.model.accept_any_model], ['gpt-4o-mini', ['my-model', 'stories260K'], false])
  })
})

describe('model ids: --accept-any-model', {skip: SKIP}, () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 128, threadsPerSlot: 1, acceptAnyModel: true})
  })
  after(async () => t?.close())

  test('any id is this model; responses name the served id', async () => {
    for (const model of ['gpt-4o', 'anything/at:all', 'stories260K']) {
      const r = await t.client.chat.completions.create({model, messages, max_tokens: 3, temperature: 0})
      assert.equal(r.model, 'stories260K')
      assert.equal((await t.client.models.retrieve(model)).id, 'stories260K')
    }
    const a = new Anthropic({baseURL: t.url, apiKey: 'x', maxRetries: 0})
    assert.equal((await a.messages.create({model: 'claude-sonnet-4-5', messages, max_tokens: 3})).model, 'stories260K')
    assert.equal((await a.messages.countTokens({model: 'claude-sonnet-4-5', messages})).input_tokens > 0, true)
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {model: {accept_any_model: boolean}}
    assert.equal(caps.model.accept_any_model, true)
  })
})

describe("/v1/models in Anthropic's shape (anthropic-version)", {skip: SKIP}, () => {
  let t: TestServer
  let a: Anthropic
  before(async () => {
    t = await startTestServer({modelPath: STORIES, nCtx: 128, threadsPerSlot: 1, apiKey: 'k'})
    a = new Anthropic({baseURL: t.url, apiKey: 'k', maxRetries: 0})
  })
  after(async () => t?.close())

  test('models.list() and models.retrieve(): every ModelInfo field present; the page is complete; the OpenAI client still gets its shape', async () => {
    const page = await a.models.list()
    assert.equal(page.data.length, 1)
    assertModelInfo(page.data[0]!, 'stories260K')
    assert.deepEqual([page.has_more, page.first_id, page.last_id], [false, 'stories260K', 'stories260K'])
    const all: Anthropic.ModelInfo[] = []
    for await (const m of a.models.list()) all.push(m)
    assert.deepEqual(all, page.data)
    const one = await a.models.retrieve('stories260K')
    assert.deepEqual(one, page.data[0])
    // The same instant as the OpenAI shape's `created`; the limits are the slot's context.
    const openai = new OpenAI({baseURL: `${t.url}/v1`, apiKey: 'k', maxRetries: 0})
    const o = await openai.models.retrieve('stories260K')
    assert.equal(o.object, 'model')
    assert.equal(Date.parse(one.created_at) / 1000, o.created)
    assert.deepEqual([one.max_input_tokens, one.max_tokens], [127, 127])
    // The raw body: has_more is there (the SDK would default a missing one to false).
    const raw = (await (
      await fetch(`${t.url}/v1/models`, {headers: {'anthropic-version': '2023-06-01', 'x-api-key': 'k'}})
    ).json()) as Record<string, unknown>
    assert.deepEqual(Object.keys(raw).sort(), ['data', 'first_id', 'has_more', 'last_id'])
    assert.equal(raw.has_more, false)
  })

  test('list parameters are honoured (limit, after_id, before_id, lifecycle) or refused by name; a 404 is Anthropic-shaped', async () => {
    assert.equal((await a.models.list({limit: 1})).data.length, 1)
    assert.deepEqual((await a.models.list({after_id: 'stories260K'})).data, [])
    assert.deepEqual((await a.models.list({before_id: 'stories260K'})).data, [])
    assert.deepEqual((await a.models.list({lifecycle: ['retired']})).data, [])
    assert.equal((await a.models.list({lifecycle: ['deprecated', 'active']})).data.length, 1)
    for (const [query, pattern] of [
      [{limit: 0}, /limit/],
      [{after_id: 'gpt-4o'}, /after_id "gpt-4o" is not the id of a listed model/],
      [{lifecycle: ['gone']} as never, /lifecycle "gone"/],
      [{page: 2} as never, /Unrecognized query parameter: page/],
    ] as const) {
      const e = await refusedWith(a.models.list(query as Anthropic.ModelListParams), Anthropic.BadRequestError)
      const body = e.error as {type: string; error: {type: string; message: string}}
      assert.equal(body.type, 'error')
      assert.equal(body.error.type, 'invalid_request_error')
      assert.match(body.error.message, pattern)
    }
    const e = await refusedWith(a.models.retrieve('claude-opus-4'), Anthropic.NotFoundError)
    assert.deepEqual(Object.keys(e.error as object), ['type', 'error'])
    assert.equal((e.error as {error: {type: string}}).error.type, 'not_found_error')
    assert.match(e.message, /claude-opus-4/)
    await refusedWith(new Anthropic({baseURL: t.url, apiKey: 'wrong', maxRetries: 0}).models.list(), Anthropic.AuthenticationError)
  })

  test('each capability the Anthropic shape claims is what /v1/messages does', async () => {
    const caps = (await a.models.retrieve('stories260K')).capabilities!
    const accepted = async (body: Record<string, unknown>) => {
      try {
        await a.messages.create({model: 'stories260K', messages, max_tokens: 4, ...body} as never)
        return true
      } catch (error) {
        assert.ok(error instanceof Anthropic.BadRequestError, String(error))
        return false
      }
    }
    const image = {type: 'image', source: {type: 'base64', media_type: 'image/png', data: 'AA=='}}
    const pdf = {type: 'document', source: {type: 'base64', media_type: 'application/pdf', data: 'AA=='}}
    const claims: Array<[string, boolean, Record<string, unknown>]> = [
      ['structured_outputs', caps.structured_outputs.supported, {output_config: {format: {type: 'json_schema', schema: {type: 'object'}}}}],
      ['image_input', caps.image_input.supported, {messages: [{role: 'user', content: [image, {type: 'text', text: 'x'}]}]}],
      ['pdf_input', caps.pdf_input.supported, {messages: [{role: 'user', content: [pdf, {type: 'text', text: 'x'}]}]}],
      ['thinking.types.enabled', caps.thinking.types.enabled.supported, {thinking: {type: 'enabled', budget_tokens: 1024}}],
      ['effort', caps.effort.supported, {output_config: {effort: 'low'}}],
      ['citations', caps.citations.supported, {messages: [{role: 'user', content: [{...pdf, citations: {enabled: true}}]}]}],
      ['server_tools.web_search', caps.server_tools.web_search.supported, {tools: [{type: 'web_search_20250305', name: 'web_search'}]}],
    ]
    for (const [name, claimed, body] of claims) assert.equal(await accepted(body), claimed, `capabilities.${name} = ${claimed}`)
  })
})
