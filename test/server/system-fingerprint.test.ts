// `system_fingerprint` (OpenAI's field; llama-server sends its build there) on chat and text
// completions and on every streamed chunk, read through the `openai` SDK. Anchors: the addon file's
// sha256 computed here with node:crypto, package.json's version, and the JavaScript hash a receipt
// records (src/lib/receipt packageSha256, which `runner verify` compares to decide "same build").
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {packageSha256} from '../../src/lib/receipt/index.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, sharedPath} from '../helpers/shared.js'
import {startTestServer, type TestServer} from './helpers.js'

describe('system_fingerprint carries the build', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  let t: TestServer
  let expected: string
  before(async () => {
    t = await startTestServer({modelPath: sharedPath('models', 'stories260K.gguf'), nCtx: 128, threadsPerSlot: 1})
    const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}).version
    const addon = createHash('sha256')
      .update(readFileSync(join(REPO_ROOT, 'native', 'build', 'Release', 'runner_native.node')))
      .digest('hex')
    expected = `runner-${version}-${addon.slice(0, 12)}-${(await packageSha256()).slice(0, 12)}`
  })
  after(async () => t?.close())

  test('the same fingerprint on completions, every chunk, and /v1/capabilities', async () => {
    const messages = [{role: 'user' as const, content: 'Hi'}]
    const chat = await t.client.chat.completions.create({model: 'stories260K', messages, max_tokens: 3})
    assert.equal(chat.system_fingerprint, expected)
    const text = await t.client.completions.create({model: 'stories260K', prompt: 'Once', max_tokens: 3})
    assert.equal(text.system_fingerprint, expected)
    let chunks = 0
    const stream = await t.client.chat.completions.create({
      model: 'stories260K',
      messages,
      max_tokens: 3,
      stream: true,
      stream_options: {include_usage: true},
    })
    for await (const c of stream) {
      assert.equal(c.system_fingerprint, expected)
      chunks++
    }
    const textStream = await t.client.completions.create({model: 'stories260K', prompt: 'Once', max_tokens: 3, stream: true})
    for await (const c of textStream) {
      assert.equal(c.system_fingerprint, expected)
      chunks++
    }
    assert.ok(chunks >= 8, `${chunks} chunks`)
    const caps = (await (await fetch(`${t.url}/v1/capabilities`)).json()) as {build: Record<string, string>}
    assert.equal(caps.build.system_fingerprint, expected)
    assert.equal(expected.split('-')[2], caps.build.addon_sha256!.slice(0, 12))
    assert.equal(caps.build.package_sha256!.length, 64)
  })
})
