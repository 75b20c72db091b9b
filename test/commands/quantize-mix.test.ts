/**
 * `runner quantize` with llama.cpp's named mixes (Q4_K_M, ...) and the K-quant types, against
 * llama.cpp itself: node-llama-cpp's libllama exports llama_model_quantize, which
 * test/native/ggml-ref/llama_quantize_ref.c (compiled here with `cc`) runs on the same F32 model.
 * For every mix, each tensor must get the type llama.cpp gives it and the very same bytes, and
 * general.file_type must agree. The result must load and generate in node-llama-cpp. Independently
 * of the live run, the Q4_K_M, Q3_K_M and Q2_K tables below are written out from reading
 * llama.cpp's src/llama-quant.cpp (llama_tensor_get_type_impl, tensor_type_fallback).
 */
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, before, describe, test} from 'node:test'
import {fileURLToPath} from 'node:url'

import {getLlama, LlamaLogLevel} from 'node-llama-cpp'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {ENGINE_WEIGHT_TYPES} from '../../src/lib/arch/index.js'
import {Model} from '../../src/lib/engine/model.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {FILE_TYPE} from '../../src/lib/quantize/index.js'
import {greedy} from '../helpers/engine.js'
import {tensorBytes} from '../helpers/gguf.js'
import {hasShared, NO_SHARED_REASON, runCli, sharedPath} from '../helpers/shared.js'

const here = dirname(fileURLToPath(import.meta.url))
const LIB_DIR = join(here, '..', '..', 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64')

function buildHarness(dir: string): {exe?: string; why?: string} {
  if (process.platform !== 'linux' || process.arch !== 'x64') return {why: 'node-llama-cpp ships libllama for linux-x64 only here'}
  const lib = existsSync(LIB_DIR) ? readdirSync(LIB_DIR).find((f) => /^libllama(\.v[\d.]+)?\.so$/.test(f)) : undefined
  if (!lib) return {why: `no libllama*.so in ${LIB_DIR}`}
  const cc = spawnSync('cc', ['--version'])
  if (cc.error || cc.status !== 0) return {why: 'no C compiler (cc) on PATH'}
  const exe = join(dir, 'llama_quantize_ref')
  execFileSync('cc', [
    '-O2',
    '-o',
    exe,
    join(here, '..', 'native', 'ggml-ref', 'llama_quantize_ref.c'),
    `-L${LIB_DIR}`,
    `-l:${lib}`,
    `-Wl,-rpath,${LIB_DIR}`,
  ])
  return {exe}
}

/**
 * The test model: llama, 8 layers, n_embd 256, n_ff 288 (so ffn_down's ne0 = 288 is not a multiple
 * of 256 and takes the fallbacks), 8 heads over 2 KV heads (n_gqa = 4), untied output.
 */
const SPEC = {arch: 'llama' as const, nEmbd: 256, nLayer: 8, nHead: 8, nHeadKv: 2, nFf: 288, nCtx: 128, seed: 11n}

/**
 * Expected types, from reading llama.cpp's src/llama-quant.cpp for this model (n_layer 8, so
 * use_more_bits(i, 8) = i < 1 || i >= 7 || (i - 1) % 3 == 2 holds for layers 0, 3, 6, 7; n_gqa 4):
 *  - output.weight: Q6_K (OUTPUT: new_type != Q8_0 -> Q6_K); token_embd keeps the default type (untied);
 *  - attn_v: Q4_K_M -> Q6_K where use_more_bits(i_attention_wv, n_attention_wv); Q3_K_M -> Q5_K for the
 *    first two, then Q4_K; Q2_K -> Q4_K (n_gqa >= 4);
 *  - ffn_down: Q4_K_M -> Q6_K where use_more_bits, Q3_K_M -> Q5_K for i < n/16 (none) else Q4_K,
 *    Q2_K -> Q3_K; then ne0 = 288 falls back (tensor_type_fallback): Q6_K -> Q8_0, Q4_K -> Q5_0,
 *    Q3_K -> Q4_0;
 *  - attn_output: Q3_K_M -> Q4_K, Q2_K -> Q3_K; everything else the default type.
 */
function expected(mix: 'Q4_K_M' | 'Q3_K_M' | 'Q2_K', name: string): string {
  const layer = Number(/^blk\.(\d+)\./.exec(name)?.[1] ?? -1)
  const moreBits = [0, 3, 6, 7].includes(layer)
  const base = {Q4_K_M: 'Q4_K', Q3_K_M: 'Q3_K', Q2_K: 'Q2_K'}[mix]
  if (name.endsWith('_norm.weight')) return 'F32'
  if (name === 'output.weight') return 'Q6_K'
  if (name === 'token_embd.weight') return base
  if (name.endsWith('attn_v.weight'))
    return mix === 'Q4_K_M' ? (moreBits ? 'Q6_K' : 'Q4_K') : mix === 'Q3_K_M' ? (layer < 2 ? 'Q5_K' : 'Q4_K') : 'Q4_K'
  if (name.endsWith('ffn_down.weight')) return mix === 'Q4_K_M' ? (moreBits ? 'Q8_0' : 'Q5_0') : mix === 'Q3_K_M' ? 'Q5_0' : 'Q4_0'
  if (name.endsWith('attn_output.weight')) return mix === 'Q3_K_M' ? 'Q4_K' : mix === 'Q2_K' ? 'Q3_K' : base
  return base
}

describe('runner quantize: named mixes and K-quants against llama.cpp', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-quantize-mix-'))
  const harness = buildHarness(dir)
  const f32 = join(dir, 'f32.gguf')
  const tied = join(dir, 'f32-tied.gguf')
  before(async () => {
    await makeTestModel(f32, {...SPEC, type: 'f32', tokenizerFrom: sharedPath('models', 'stories260K.gguf')})
    await makeTestModel(tied, {
      ...SPEC,
      nLayer: 4,
      nFf: 512,
      tied: true,
      type: 'f32',
      tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
    })
  })
  after(() => rmSync(dir, {recursive: true, force: true}))

  const ours = (input: string, type: string, pure: boolean) => {
    const out = join(dir, `ours-${type}-${pure ? 'pure' : 'mix'}-${input.endsWith('tied.gguf') ? 'tied' : 'untied'}.gguf`)
    // --force: the same file is made again by the tests that compare it with llama.cpp's.
    const r = runCli(['quantize', input, out, '--type', type, ...(pure ? ['--pure'] : []), '--force', '--json'])
    assert.equal(r.status, 0, r.stderr)
    return out
  }

  for (const mix of ['Q4_K_M', 'Q3_K_M', 'Q2_K'] as const) {
    test(`${mix}: the tensor types llama.cpp's rules give (table written from llama-quant.cpp)`, () => {
      const model = readGgufModel(ours(f32, mix, false))
      for (const t of model.tensors) assert.equal(t.type.name, expected(mix, t.name), t.name)
      assert.equal(model.metadata.get('general.file_type')?.value, FILE_TYPE[mix])
    })
  }

  const LIVE: Array<[string, boolean, 'untied' | 'tied']> = [
    ...['Q2_K', 'Q3_K_S', 'Q3_K_M', 'Q3_K_L', 'Q4_K_S', 'Q4_K_M', 'Q5_K_S', 'Q5_K_M', 'Q6_K', 'Q4_0', 'Q8_0', 'IQ4_NL'].map(
      (m) => [m, false, 'untied'] as [string, boolean, 'untied'],
    ),
    ['Q4_K_M', false, 'tied'],
    ['Q2_K', false, 'tied'],
    ['Q4_K', true, 'untied'],
    ['Q6_K', true, 'untied'],
    ['Q3_K_S', true, 'untied'],
    ['Q5_K_S', true, 'tied'],
  ]
  for (const [type, pure, which] of LIVE) {
    test(
      `${type}${pure ? ' --pure' : ''} (${which}): every tensor's type and bytes equal llama_model_quantize's`,
      {skip: harness.why},
      () => {
        const input = which === 'tied' ? tied : f32
        const mine = readGgufModel(ours(input, type, pure))
        const theirsPath = join(dir, `llama-${type}-${pure}-${which}.gguf`)
        const ftype = FILE_TYPE[type]!
        const r = spawnSync(harness.exe!, [input, theirsPath, String(ftype), pure ? '1' : '0', '1'], {encoding: 'utf8'})
        assert.equal(r.status, 0, r.stderr)
        const theirs = readGgufModel(theirsPath)
        const byName = new Map(theirs.tensors.map((t) => [t.name, t]))
        assert.equal(mine.tensors.length, theirs.tensors.length)
        for (const t of mine.tensors) {
          const u = byName.get(t.name)
          assert.ok(u, `llama.cpp wrote ${t.name}`)
          assert.equal(t.type.name, u.type.name, `${t.name}: ours ${t.type.name}, llama.cpp ${u.type.name}`)
          assert.ok(tensorBytes(t).equals(tensorBytes(u)), `${t.name} (${t.type.name}): bytes differ from llama.cpp's`)
        }
        assert.equal(mine.metadata.get('general.file_type')?.value, theirs.metadata.get('general.file_type')?.value, 'general.file_type')
      },
    )
  }

  // Every architecture of the shared fixtures (attn_qkv in phi3, MoE experts in qwen3moe, tied
  // embeddings, widths that are not multiples of 256): the same choices and bytes as llama.cpp.
  for (const fixture of ['llama', 'qwen2', 'qwen3', 'phi3', 'gemma2', 'gemma3', 'granite', 'qwen3moe']) {
    for (const mix of ['Q4_K_M', 'Q3_K_M', 'Q2_K', 'Q5_K_S']) {
      test(`fixtures/${fixture}.gguf ${mix}: every tensor's type and bytes equal llama_model_quantize's`, {skip: harness.why}, () => {
        const input = sharedPath('fixtures', `${fixture}.gguf`)
        const out = join(dir, `ours-${fixture}-${mix}.gguf`)
        const r = runCli(['quantize', input, out, '--type', mix, '--json'])
        assert.equal(r.status, 0, r.stderr)
        const theirsPath = join(dir, `llama-${fixture}-${mix}.gguf`)
        const q = spawnSync(harness.exe!, [input, theirsPath, String(FILE_TYPE[mix]), '0', '1'], {encoding: 'utf8'})
        assert.equal(q.status, 0, q.stderr)
        const mine = readGgufModel(out)
        const byName = new Map(readGgufModel(theirsPath).tensors.map((t) => [t.name, t]))
        for (const t of mine.tensors) {
          const u = byName.get(t.name)
          assert.ok(u, `llama.cpp wrote ${t.name}`)
          assert.equal(t.type.name, u.type.name, `${t.name}: ours ${t.type.name}, llama.cpp ${u.type.name}`)
          assert.ok(tensorBytes(t).equals(tensorBytes(u)), `${t.name} (${t.type.name}): bytes differ from llama.cpp's`)
        }
      })
    }
  }

  test('a Q4_K_M file we write loads and generates in llama.cpp (node-llama-cpp), and our engine agrees', async () => {
    const path = ours(f32, 'Q4_K_M', false)
    const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
    const theirs: number[] = []
    let ids: number[] = []
    try {
      const model = await llama.loadModel({modelPath: path})
      const ctx = await model.createContext({
        contextSize: 128,
        threads: 1,
        experimentalKvCacheKeyType: 'F32',
        experimentalKvCacheValueType: 'F32',
        flashAttention: false,
      })
      ids = [...model.tokenize('Once upon a time', true)]
      for await (const t of ctx.getSequence().evaluate(ids, {temperature: 0})) {
        theirs.push(t)
        if (theirs.length === 16) break
      }
      assert.equal(theirs.length, 16)
      await ctx.dispose()
      await model.dispose()
    } finally {
      await llama.dispose()
    }
    // Our engine on the same mixed file (Q4_K, Q6_K, Q5_0, Q8_0 tensors), once src/lib/arch admits the K-quants.
    if (!['Q4_K', 'Q6_K'].every((t) => ENGINE_WEIGHT_TYPES.has(t))) return
    const m = await Model.load(path)
    const c = await m.createContext({nCtx: 128, threads: 1, kvType: 'f32'})
    const mine = (await c.generate(ids, {maxTokens: 16, sampling: greedy(), stopTokens: []}).result).tokens
    c.dispose()
    m.dispose()
    // Quantized arithmetic may legitimately part after a near tie; the first tokens must agree.
    let same = 0
    while (same < 16 && mine[same] === theirs[same]) same++
    assert.ok(same >= 8, `only ${same} greedy tokens agree: ours ${mine} vs llama.cpp ${theirs}`)
  })
})
