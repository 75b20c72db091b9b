/**
 * `--lora FILE[:SCALE]` on every command that loads a model, end to end. Anchors outside our code:
 * llama.cpp's greedy tokens with the same adapter (node-llama-cpp 3.22.1's context `lora` option, CPU,
 * one thread), node:crypto's sha256 of the adapter file for what reports and receipts record, and the
 * base model's own output for scale 0 (x + 0 * delta is x, so the bits must not move). Chat, serve and
 * embed are held to run (itself held to llama.cpp) on the same tokens. Hostile adapters are refused
 * naming the field (and offset) that is wrong, before any generation.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, LlamaLogLevel, type Token} from 'node-llama-cpp'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {ggmlTypeByName, GgufValueType, readGgufFile, writeGguf, type GgufKv, type GgufWriteTensor} from '../../src/lib/gguf/index.js'
import {Model} from '../../src/lib/engine/index.js'
import type {RunnerError} from '../../src/lib/errors.js'
import {makeLoraAdapter} from '../helpers/lora.js'
import {scoreStories} from '../helpers/score-stories.js'
import {type CliResult, hasShared, NO_SHARED_REASON, runCliAsync, runCliWithInput, sharedPath} from '../helpers/shared.js'
import {startTestServer} from '../server/helpers.js'

const STORIES = sharedPath('models', 'stories260K.gguf')
const PROMPT = 'Once upon a time'
const N = 24
const SKIP = hasShared() ? false : NO_SHARED_REASON

const dir = mkdtempSync(join(tmpdir(), 'runner-lora-cli-'))
after(() => rmSync(dir, {recursive: true, force: true}))
const adapterA = join(dir, 'a.gguf')
const adapterB = join(dir, 'b.gguf')
/** llama.cpp's greedy tokens: the base, and the base with adapter A at scale 1. */
const live = {base: [] as number[], withA: [] as number[]}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')
const greedyArgs = (...extra: string[]) => ['run', '-m', STORIES, '-p', PROMPT, '--temp', '0', '-n', String(N), '-c', '256', ...extra]

interface RunJson {
  text: string
  tokens: number[]
  adapters: Array<{path: string; scale: number; alpha: number; ranks: number[]; weights: number; targets: string[]}>
}

async function runJson(...extra: string[]): Promise<RunJson> {
  const r = await runCliAsync(greedyArgs('--json', ...extra))
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as RunJson
}

before(async () => {
  if (!hasShared()) return
  await makeLoraAdapter(STORIES, adapterA, {seed: 11n, rank: 4, alpha: 8, spread: 0.5, roles: ['attn_q', 'attn_v', 'ffn_down']})
  await makeLoraAdapter(STORIES, adapterB, {seed: 12n, rank: 2, alpha: 0, spread: 0.5, roles: ['attn_k']})
  const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  try {
    const model = await llama.loadModel({modelPath: STORIES})
    const greedy = async (lora: boolean) => {
      const context = await model.createContext({
        contextSize: 256,
        threads: 1,
        ...(lora ? {lora: {adapters: [{filePath: adapterA, scale: 1}]}} : {}),
      })
      try {
        const tokens: Token[] = []
        for await (const t of context.getSequence().evaluate([model.tokens.bos!, ...model.tokenize(PROMPT)], {temperature: 0})) {
          if (model.isEogToken(t)) break
          tokens.push(t)
          if (tokens.length >= N) break
        }
        return tokens.map(Number)
      } finally {
        await context.dispose()
      }
    }
    live.base = await greedy(false)
    live.withA = await greedy(true)
    await model.dispose()
  } finally {
    await llama.dispose()
  }
})

describe('--lora on run, score, chat, embed and verify', {skip: SKIP}, () => {
  test("run --lora gives llama.cpp's greedy tokens with the same adapter, and --json names the adapter", async () => {
    assert.notDeepEqual(live.withA, live.base, 'the adapter changes what llama.cpp generates (else this test proves nothing)')
    const [base, withA] = await Promise.all([runJson(), runJson('--lora', adapterA)])
    assert.deepEqual(base.tokens, live.base)
    assert.deepEqual(withA.tokens, live.withA)
    assert.deepEqual(base.adapters, [])
    assert.deepEqual(withA.adapters, [
      {path: adapterA, scale: 1, alpha: 8, ranks: [4], weights: 15, targets: ['attn_q', 'attn_v', 'ffn_down']},
    ])
  })

  test('scale 0 is the base, bit for bit (score and embed); a nonzero scale is not', async () => {
    const score = scoreStories
    const [base, zero, half] = await Promise.all([score(), score('--lora', `${adapterA}:0`), score('--lora', `${adapterA}:0.5`)])
    assert.equal(zero.nll_mean, base.nll_mean)
    assert.notEqual(half.nll_mean, base.nll_mean)
    assert.equal(base.model.adapters, undefined)
    assert.deepEqual(half.model.adapters, [{file: adapterA, sha256: sha256(adapterA), alpha: 8, scale: 0.5}])

    const embed = async (...extra: string[]) => {
      const r = await runCliAsync(['embed', '-m', STORIES, '-p', PROMPT, '--json', ...extra])
      assert.equal(r.status, 0, r.stderr)
      return r.stdout
    }
    const [eBase, eZero, eOne] = await Promise.all([embed(), embed('--lora', `${adapterA}:0`), embed('--lora', adapterA)])
    assert.equal(eZero, eBase)
    assert.notEqual(eOne, eBase)
  })

  test('two adapters apply in order with their own scales; the same pair reversed gives the same sum', async () => {
    // The deltas are added to the same base output, so the order changes only float rounding.
    const [ab, ba, a] = await Promise.all([
      runJson('--lora', `${adapterA}:0.5`, '--lora', `${adapterB}:-1.5`),
      runJson('--lora', `${adapterB}:-1.5`, '--lora', `${adapterA}:0.5`),
      runJson('--lora', `${adapterA}:0.5`),
    ])
    assert.deepEqual(
      ab.adapters.map((x) => [x.path, x.scale]),
      [
        [adapterA, 0.5],
        [adapterB, -1.5],
      ],
    )
    assert.deepEqual(ab.tokens.slice(0, 8), ba.tokens.slice(0, 8))
    assert.notDeepEqual(ab.tokens, a.tokens, 'the second adapter is applied')
  })

  test('a chat reply with --lora equals run --lora on the rendered prompt', async () => {
    const r = await runCliWithInput(
      ['chat', '-m', STORIES, '--chat-template', 'chatml', '--temp', '0', '-n', '16', '-c', '256', '--json', '--lora', adapterA],
      'Hello\n',
    )
    assert.equal(r.status, 0, r.stderr)
    const reply = JSON.parse(r.stdout.split('\n')[0]!) as {tokens: number[]}
    const prompt = '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n'
    const [run, base] = await Promise.all([
      runCliAsync(['run', '-m', STORIES, '-p', prompt, '--special', '--temp', '0', '-n', '16', '-c', '256', '--json', '--lora', adapterA]),
      runCliAsync(['run', '-m', STORIES, '-p', prompt, '--special', '--temp', '0', '-n', '16', '-c', '256', '--json']),
    ])
    assert.equal(run.status, 0, run.stderr)
    assert.deepEqual(reply.tokens, (JSON.parse(run.stdout) as RunJson).tokens)
    assert.notDeepEqual(reply.tokens, (JSON.parse(base.stdout) as RunJson).tokens, 'the adapter changes the reply')
  })

  test('a receipt records each adapter; verify replays it only with the same adapters (else UNVERIFIABLE, exit 3)', async () => {
    const receipt = join(dir, 'r.json')
    const plain = join(dir, 'plain.json')
    const [made, madePlain] = await Promise.all([
      runCliAsync(greedyArgs('--lora', `${adapterA}:0.5`, '--transcript', receipt)),
      runCliAsync(greedyArgs('--transcript', plain)),
    ])
    assert.equal(made.status, 0, made.stderr)
    assert.equal(madePlain.status, 0, madePlain.stderr)
    const body = JSON.parse(readFileSync(receipt, 'utf8')) as {model: {adapters: unknown}}
    assert.deepEqual(body.model.adapters, [
      {name: 'a.gguf', bytes: readFileSync(adapterA).length, sha256: sha256(adapterA), alpha: 8, scale: 0.5},
    ])
    const verify = (file: string, ...extra: string[]) => runCliAsync(['verify', file, '-m', STORIES, '--json', ...extra])
    const [ok, missing, wrong, extra] = await Promise.all([
      verify(receipt, '--lora', adapterA),
      verify(receipt),
      verify(receipt, '--lora', adapterB),
      verify(plain, '--lora', adapterA),
    ])
    const verdict = (r: CliResult) => JSON.parse(r.stdout) as {verdict: string; reason: string}
    assert.equal(ok.status, 0, ok.stdout)
    assert.equal(verdict(ok).verdict, 'VERIFIED')
    for (const [r, why] of [
      [missing, /made with 1 LoRA adapter\(s\) \(a\.gguf\); give each with --lora/],
      [wrong, /wrong adapter: .*b\.gguf has sha256/],
      [extra, /made without LoRA adapters, 1 given with --lora/],
    ] as const) {
      assert.equal(r.status, 3, r.stdout)
      assert.equal(verdict(r).verdict, 'UNVERIFIABLE')
      assert.match(verdict(r).reason, why)
    }
  })
})

describe('serve --lora', {skip: SKIP}, () => {
  test('every request runs with the adapters, and /v1/capabilities lists them with their sha256', async () => {
    const s = await startTestServer({modelPath: STORIES, nCtx: 256, lora: [{path: adapterA, scale: 1}]})
    try {
      const caps = (await (await fetch(`${s.url}/v1/capabilities`)).json()) as {model: {adapters: unknown}}
      assert.deepEqual(caps.model.adapters, [
        {path: adapterA, scale: 1, alpha: 8, ranks: [4], weights: 15, targets: ['attn_q', 'attn_v', 'ffn_down'], sha256: sha256(adapterA)},
      ])
      const c = await s.client.completions.create({model: 'stories260K', prompt: PROMPT, max_tokens: N, temperature: 0})
      const run = await runJson('--lora', adapterA)
      assert.equal(c.choices[0]!.text, run.text)
    } finally {
      await s.close()
    }
  })
})

/** Write a GGUF built from a valid adapter's header and tensors, edited. */
async function variant(name: string, edit: (kvs: GgufKv[], tensors: GgufWriteTensor[]) => void): Promise<string> {
  const file = readGgufFile(adapterA)
  const kvs: GgufKv[] = [...file.metadata.values()]
  const tensors: GgufWriteTensor[] = file.tensors.map((t) => ({
    name: t.name,
    type: t.type,
    shape: [...t.shape],
    data: {file: t.file, offset: t.offset},
  }))
  edit(kvs, tensors)
  const out = join(dir, `${name}.gguf`)
  await writeGguf(out, {kvs, tensors})
  return out
}

const setKv = (kvs: GgufKv[], key: string, value: string) => {
  const i = kvs.findIndex((k) => k.key === key)
  const kv = {key, type: GgufValueType.STRING, value} as GgufKv
  if (i < 0) kvs.push(kv)
  else kvs[i] = kv
}

describe('hostile adapters are refused by name, before anything runs', {skip: SKIP}, () => {
  const f32 = ggmlTypeByName('F32')!
  const cases: Array<{name: string; exit: number; message: RegExp; make: () => Promise<string> | string}> = [
    {
      name: 'a model without general.type',
      exit: 3,
      message: /general\.type at byte 0: missing: this is not a LoRA adapter/,
      make: () => STORIES,
    },
    {
      name: 'a model given as an adapter',
      exit: 3,
      message: /general\.type at byte \d+: is "model", a LoRA adapter has "adapter" \(this file is a model: give it as -m\)/,
      make: () => variant('model', (kvs) => setKv(kvs, 'general.type', 'model')),
    },
    {
      name: 'another adapter type',
      exit: 5,
      message: /adapter\.type.*"control_vector"; only "lora"/,
      make: () => variant('cvec', (kvs) => setKv(kvs, 'adapter.type', 'control_vector')),
    },
    {
      name: 'an activated LoRA',
      exit: 5,
      message: /adapter\.alora\.invocation_tokens.*not supported/,
      make: () =>
        variant('alora', (kvs) =>
          kvs.push({
            key: 'adapter.alora.invocation_tokens',
            type: GgufValueType.ARRAY,
            value: {itemType: GgufValueType.UINT32, items: Uint32Array.of(1, 2)},
          } as GgufKv),
        ),
    },
    {
      name: 'a lora_a without its lora_b',
      exit: 3,
      message: /"blk\.0\.attn_q\.weight\.lora_a".*its pair "blk\.0\.attn_q\.weight\.lora_b" is missing/,
      make: () =>
        variant('unpaired', (_kvs, t) =>
          t.splice(
            t.findIndex((x) => x.name === 'blk.0.attn_q.weight.lora_b'),
            1,
          ),
        ),
    },
    {
      name: 'ranks that differ between a and b',
      exit: 3,
      message: /lora_b.*ranks.*differ/,
      make: () =>
        variant('rank', (_kvs, t) => {
          const i = t.findIndex((x) => x.name === 'blk.0.attn_q.weight.lora_b')
          const b = t[i]!
          t[i] = {...b, shape: [2, b.shape[1]! * 2]}
        }),
    },
    {
      name: 'an adapter for another architecture',
      exit: 3,
      message: /adapter for "qwen2" models, the model is "llama" \(general\.architecture\)/,
      make: () => variant('arch', (kvs) => setKv(kvs, 'general.architecture', 'qwen2')),
    },
    {
      name: 'a norm vector',
      exit: 5,
      message: /blk\.0\.attn_norm\.weight.*norm vectors in an adapter are not supported/,
      make: () => variant('norm', (_kvs, t) => t.push({name: 'blk.0.attn_norm.weight', type: f32, shape: [64], data: new Uint8Array(256)})),
    },
    {
      name: 'a pair on the token embeddings',
      exit: 5,
      message: /"token_embd\.weight"/,
      make: () =>
        variant('embd', (_kvs, t) => {
          t.push({name: 'token_embd.weight.lora_a', type: f32, shape: [64, 2], data: new Uint8Array(64 * 2 * 4)})
          t.push({name: 'token_embd.weight.lora_b', type: f32, shape: [2, 512], data: new Uint8Array(2 * 512 * 4)})
        }),
    },
    {
      name: 'a pair shaped for another base',
      exit: 3,
      message: /"blk\.0\.attn_q\.weight" is \[64, 64\] in the model.*another base model/,
      make: () =>
        variant('shape', (_kvs, t) => {
          const i = t.findIndex((x) => x.name === 'blk.0.attn_q.weight.lora_a')
          t[i] = {...t[i]!, shape: [32, 4], data: new Uint8Array(32 * 4 * 4)}
        }),
    },
  ]
  // The first through the CLI (what a user sees, and nothing generated); the rest where the CLI
  // gets them from, Model.load, with the exit code the CLI would use.
  for (const [i, c] of cases.entries()) {
    test(c.name, async () => {
      const file = await c.make()
      if (i === 0) {
        const r = await runCliAsync(greedyArgs('--lora', file))
        assert.equal(r.status, c.exit, r.stderr)
        assert.match(r.stderr, c.message)
        assert.equal(r.stdout, '', 'nothing generated')
        return
      }
      await assert.rejects(Model.load(STORIES, {lora: [{path: file, scale: 1}]}), (error: RunnerError) => {
        assert.equal(error.exitCode, c.exit, error.message)
        assert.match(error.message, c.message)
        return true
      })
    })
  }

  test('FILE: and FILE:x are refused as scales, not read as file names', async () => {
    for (const spec of [`${adapterA}:`, `${adapterA}:half`]) {
      const r = await runCliAsync(greedyArgs('--lora', spec))
      assert.equal(r.status, 2, r.stderr)
      assert.match(r.stderr, /after the colon is not a scale; give FILE or FILE:SCALE/)
    }
  })

  test('a missing adapter file is named', async () => {
    const r = await runCliAsync(greedyArgs('--lora', join(dir, 'nope.gguf')))
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /nope\.gguf/)
  })

  test('a family fixture with an adapter made for stories260K is refused naming the tensor', async () => {
    const other = join(dir, 'qwen-shaped-llama.gguf')
    await makeTestModel(other, {
      arch: 'llama',
      nEmbd: 128,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 256,
      nCtx: 256,
      type: 'f32',
      seed: 5n,
      tokenizerFrom: STORIES,
    })
    const r = await runCliAsync(['run', '-m', other, '-p', PROMPT, '-n', '4', '--lora', adapterA])
    assert.equal(r.status, 3, r.stderr)
    assert.match(r.stderr, /blk\.0\.attn_q\.weight" is \[128, 128\] in the model/)
  })
})
