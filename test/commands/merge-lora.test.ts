/**
 * `runner quantize --merge-lora FILE[:SCALE]`, held to llama.cpp: a merged F32 file, read by llama.cpp
 * (node-llama-cpp 3.22.1, CPU, one thread, F32 KV cache), must give the teacher-forced log-probabilities
 * llama.cpp gives for the base with the same adapters applied at run time (its context `lora`
 * option), within float rounding; and runner reading the merged file must agree with runner's own
 * `--lora` the same way. At scale 0 every tensor keeps the base's bytes. Quantizing after the merge
 * gives the bytes of merging to F32 and quantizing that file (the merge is in F32, once), for any
 * --threads. Merges that would lose precision twice, or drop part of an adapter, are refused by name.
 */
import assert from 'node:assert/strict'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaLogLevel} from 'node-llama-cpp'

import {Model} from '../../src/lib/engine/index.js'
import {readGgufFile, readGgufModel} from '../../src/lib/gguf/index.js'
import type {LoraSpec} from '../../src/lib/lora/index.js'
import {makeLoraAdapter} from '../helpers/lora.js'
import {teacherForcedLogprobs} from '../helpers/logprobs.js'
import {hasShared, NO_SHARED_REASON, runCliAsync, sharedPath} from '../helpers/shared.js'

const SKIP = hasShared() ? false : NO_SHARED_REASON
const TEXT = 'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park.'
const STORIES = sharedPath('models', 'stories260K.gguf')

const dir = mkdtempSync(join(tmpdir(), 'runner-merge-lora-'))
after(() => rmSync(dir, {recursive: true, force: true}))
let llama: Llama
before(async () => {
  llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
})
after(async () => llama?.dispose())

/** llama.cpp's log-probability of each next token of TEXT (from position 1), with `lora` applied at run time. */
async function llamaLogprobs(path: string, lora: readonly LoraSpec[] = []): Promise<number[]> {
  const model = await llama.loadModel({modelPath: path})
  try {
    const ctx = await model.createContext({
      contextSize: 256,
      threads: 1,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      ...(lora.length ? {lora: {adapters: lora.map((l) => ({filePath: l.path, scale: l.scale}))}} : {}),
    })
    const ids = [model.tokens.bos!, ...model.tokenize(TEXT)]
    const seq = ctx.getSequence()
    const out = await seq.controlledEvaluate(
      ids.map((id) => [id, {generateNext: {logits: true}}]) as Parameters<typeof seq.controlledEvaluate>[0],
    )
    const lps: number[] = []
    for (let i = 0; i + 1 < ids.length; i++) {
      const logits = [...out[i]!.next.logits!.values()]
      const max = Math.max(...logits)
      const lse = max + Math.log(logits.reduce((s, v) => s + Math.exp(v - max), 0))
      lps.push(out[i]!.next.logits!.get(ids[i + 1]!)! - lse)
    }
    await ctx.dispose()
    return lps
  } finally {
    await model.dispose()
  }
}

/** runner's log-probability of each next token of TEXT, with `lora` applied at run time. */
async function ourLogprobs(path: string, lora: readonly LoraSpec[] = []): Promise<number[]> {
  const model = await Model.load(path, {lora})
  try {
    return await teacherForcedLogprobs(model, model.tokenizer.encode(TEXT, {addSpecial: true}))
  } finally {
    model.dispose()
  }
}

const maxDiff = (x: number[], y: number[]) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i]!)), 0)

/** Each tensor's data bytes, by name. */
function tensorBytes(path: string): Map<string, string> {
  const file = readGgufFile(path)
  const buf = readFileSync(path)
  return new Map(
    file.tensors.map((t) => [
      t.name,
      createHash('sha256')
        .update(buf.subarray(t.offset, t.offset + t.byteSize))
        .digest('hex'),
    ]),
  )
}

async function quantize(...args: string[]) {
  const r = await runCliAsync(['quantize', ...args, '--json'])
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as {converted: number; mergedLora: Array<{name: string; sha256: string; scale: number; weights: number}>}
}

describe('quantize --merge-lora', {skip: SKIP}, () => {
  const a = join(dir, 'a.gguf')
  const b = join(dir, 'b.gguf')
  before(async () => {
    if (!hasShared()) return
    await makeLoraAdapter(STORIES, a, {seed: 31n, rank: 4, alpha: 8, spread: 0.5})
    await makeLoraAdapter(STORIES, b, {seed: 32n, rank: 8, alpha: 0, spread: 0.3, roles: ['attn_v', 'ffn_up']})
  })

  test("a merged F32 model gives llama.cpp's base + adapters at run time, within float rounding", async (t) => {
    const merged = join(dir, 'merged-f32.gguf')
    const lora = [
      {path: a, scale: 1},
      {path: b, scale: -1.5},
    ]
    const doc = await quantize(STORIES, merged, '--type', 'F32', '--merge-lora', a, '--merge-lora', `${b}:-1.5`)
    assert.deepEqual(
      doc.mergedLora.map((m) => [m.name, m.scale, m.weights]),
      [
        ['a.gguf', 1, 36],
        ['b.gguf', -1.5, 10],
      ],
    )
    const [theirsRuntime, theirsMerged, theirsBase] = [
      await llamaLogprobs(STORIES, lora),
      await llamaLogprobs(merged),
      await llamaLogprobs(STORIES),
    ]
    const moved = maxDiff(theirsRuntime, theirsBase)
    assert.ok(moved > 0.05, `the adapters move llama.cpp's log-probabilities (max ${moved})`)
    const dTheirs = maxDiff(theirsMerged, theirsRuntime)
    const dOurs = maxDiff(await ourLogprobs(merged), await ourLogprobs(STORIES, lora))
    const dCross = maxDiff(await ourLogprobs(merged), theirsRuntime)
    t.diagnostic(
      `max |Δ logprob|: llama.cpp merged vs run-time ${dTheirs.toExponential(2)}, runner ${dOurs.toExponential(2)}, runner merged vs llama.cpp run-time ${dCross.toExponential(2)} (adapters move it by ${moved.toFixed(3)})`,
    )
    assert.ok(dTheirs <= 1e-4, `llama.cpp: merged vs run-time ${dTheirs}`)
    assert.ok(dOurs <= 1e-4, `runner: merged vs run-time ${dOurs}`)
    assert.ok(dCross <= 1e-4, `runner merged vs llama.cpp run-time ${dCross}`)
    const meta = readGgufModel(merged).metadata
    assert.deepEqual(meta.get('runner.quantize.lora.sha256')?.value, {
      itemType: 8,
      items: [a, b].map((f) => createHash('sha256').update(readFileSync(f)).digest('hex')),
    })
  })

  test("phi3's fused attn_qkv and ffn_up merge row for row (llama.cpp as the judge)", async () => {
    const base = sharedPath('fixtures', 'phi3.gguf')
    const adapter = join(dir, 'phi3-lora.gguf')
    const pairs = await makeLoraAdapter(base, adapter, {seed: 33n, rank: 4, alpha: 4, spread: 0.5, roles: ['attn_qkv', 'ffn_up']})
    assert.ok(pairs.some((p) => p.target.endsWith('attn_qkv.weight')))
    const merged = join(dir, 'phi3-merged.gguf')
    await quantize(base, merged, '--type', 'F32', '--merge-lora', adapter)
    const d = maxDiff(await llamaLogprobs(merged), await llamaLogprobs(base, [{path: adapter, scale: 1}]))
    assert.ok(d <= 1e-4, `merged vs run-time ${d}`)
  })

  test('scale 0 writes the base, bit for bit, and records the adapter', async () => {
    const zero = join(dir, 'zero.gguf')
    const doc = await quantize(STORIES, zero, '--type', 'F32', '--merge-lora', `${a}:0`)
    assert.equal(doc.mergedLora[0]!.weights, 0)
    assert.deepEqual(tensorBytes(zero), tensorBytes(STORIES))
    assert.deepEqual(readGgufModel(zero).metadata.get('runner.quantize.lora.names')?.value, {itemType: 8, items: ['a.gguf']})
  })

  test('merge then quantize is the merged F32 file quantized, for any --threads; an F16 base stays F16', async () => {
    const f32 = join(dir, 'm-f32.gguf')
    const direct1 = join(dir, 'm-q8-t1.gguf')
    const direct2 = join(dir, 'm-q8-t2.gguf')
    const staged = join(dir, 'm-q8-staged.gguf')
    await quantize(STORIES, f32, '--type', 'F32', '--merge-lora', a)
    await Promise.all([
      quantize(STORIES, direct1, '--type', 'Q8_0', '--pure', '--merge-lora', a, '--threads', '1'),
      quantize(STORIES, direct2, '--type', 'Q8_0', '--pure', '--merge-lora', a, '--threads', '2'),
      quantize(f32, staged, '--type', 'Q8_0', '--pure'),
    ])
    assert.deepEqual(tensorBytes(direct1), tensorBytes(staged))
    assert.deepEqual(tensorBytes(direct2), tensorBytes(direct1))

    const f16Base = sharedPath('fixtures', 'llama-f16.gguf')
    const f16Adapter = join(dir, 'llama-f16-lora.gguf')
    await makeLoraAdapter(f16Base, f16Adapter, {seed: 34n, rank: 4, alpha: 8, spread: 0.5, roles: ['attn_q', 'ffn_down']})
    const f16Merged = join(dir, 'llama-f16-merged.gguf')
    const doc = await quantize(f16Base, f16Merged, '--type', 'F16', '--pure', '--merge-lora', f16Adapter)
    assert.ok(doc.converted > 0)
    const types = new Map(readGgufFile(f16Merged).tensors.map((t) => [t.name, t.type.name]))
    assert.equal(types.get('blk.0.attn_q.weight'), 'F16')
    const d = maxDiff(await llamaLogprobs(f16Merged), await llamaLogprobs(f16Base, [{path: f16Adapter, scale: 1}]))
    assert.ok(d <= 0.02, `F16 merged vs run-time ${d} (F16 rounding of the merged weights)`)
  })

  test('refused by name: a quantized base, an adapter on a removed sublayer, a bad scale', async () => {
    const q8Adapter = join(dir, 'q8-lora.gguf')
    await makeLoraAdapter(sharedPath('fixtures', 'stories260K-q8_0.gguf'), q8Adapter, {seed: 35n, rank: 2, alpha: 2, roles: ['attn_q']})
    const cases: Array<[string[], number, RegExp]> = [
      [
        [sharedPath('fixtures', 'stories260K-q8_0.gguf'), join(dir, 'x1.gguf'), '--type', 'Q8_0', '--merge-lora', q8Adapter],
        2,
        /"blk\.0\.attn_q\.weight" is Q8_0; merging an adapter into it would requantize it.*\[LORA_MERGE_QUANTIZED\]/,
      ],
      [
        [STORIES, join(dir, 'x2.gguf'), '--type', 'Q8_0', '--remove-sublayer', 'attn:1', '--merge-lora', a],
        2,
        /adapts "blk\.1\.attn_[a-z]+\.weight", which --remove-sublayer removes.*\[LORA_MERGE_REMOVED\]/,
      ],
      [
        [STORIES, join(dir, 'x3.gguf'), '--type', 'F32', '--merge-lora', `${a}:`],
        2,
        /--merge-lora .*nothing after the colon is not a scale/,
      ],
    ]
    for (const [args, exit, message] of cases) {
      const r = await runCliAsync(['quantize', ...args])
      assert.equal(r.status, exit, r.stderr)
      assert.match(r.stderr, message)
    }
  })
})
