/**
 * Embeddings against llama.cpp run live (node-llama-cpp 3.22.1, CPU, one thread): the same model file
 * through node-llama-cpp's embedding context and through ours, for each pooling llama.cpp offers as a
 * GGUF declaration (`<arch>.pooling_type` 1 mean, 2 cls, 3 last; a file without it is llama.cpp's
 * `none`, for which node-llama-cpp returns the last token's state).
 *
 * node-llama-cpp returns the pooled vector without normalising it, so the raw comparison uses ours with
 * `normalize: false`, and the normalised one checks that ours is theirs scaled to unit length. Two
 * gates: through the public `createEmbeddingContext({threads: 1})` (F16 KV cache and flash attention
 * on, llama.cpp's defaults) cosine >= 0.9999, the tolerance on F32 models; and through an
 * embedding context with the arithmetic of the other differential tests (F32 KV cache, no flash
 * attention) cosine >= 1 - 1e-7 and every value within 1e-5 of theirs (relative to the vector's
 * largest value; 1e-4 for gemma), since then both sides compute the same float operations up to summation order.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, before, describe, test} from 'node:test'

import {getLlama, type Llama, LlamaEmbeddingContext, LlamaLogLevel, type LlamaModel} from 'node-llama-cpp'

import {embed, type Pooling} from '../../src/lib/embed/index.js'
import {Model, Session} from '../../src/lib/engine/index.js'
import {type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

const TEXTS = [
  'Once upon a time, there was a little girl named Lily. She liked to play with her red ball in the park with her friends.',
  'The cat sat on the mat.',
]
/** llama.cpp's pooling enum as GGUF stores it, and the pooling of ours it must equal. */
const DECLARED: ReadonlyArray<{value: number | null; ours: Pooling}> = [
  {value: null, ours: 'last'},
  {value: 1, ours: 'mean'},
  {value: 2, ours: 'cls'},
  {value: 3, ours: 'last'},
]
// Every F32 fixture family: llama (two files), qwen2, qwen3 (q/k norms), gemma2 (soft-caps, sliding
// windows, GELU), gemma3, granite (multipliers), phi3 (fused QKV), qwen3moe (experts).
/** Each F32 fixture, and the largest relative |Δ| of the exact comparison. */
const FILES: ReadonlyArray<{file: string; rel: number}> = [
  {file: 'models/stories260K.gguf', rel: 1e-5},
  {file: 'fixtures/llama.gguf', rel: 1e-5},
  {file: 'fixtures/qwen2.gguf', rel: 1e-5},
  {file: 'fixtures/qwen3.gguf', rel: 1e-5},
  // Gemma's GELU: ggml's vectorised path rounds through its F16 table differently in the last bits,
  // as the logprob tolerances of families.test.ts allow for.
  {file: 'fixtures/gemma2.gguf', rel: 1e-4},
  {file: 'fixtures/gemma3.gguf', rel: 1e-4},
  {file: 'fixtures/granite.gguf', rel: 1e-5},
  {file: 'fixtures/phi3.gguf', rel: 1e-5},
  {file: 'fixtures/qwen3moe.gguf', rel: 1e-5},
]
const N_CTX = 256

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0
  let x = 0
  let y = 0
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!
    x += a[i]! * a[i]!
    y += b[i]! * b[i]!
  }
  return d / Math.sqrt(x * y)
}

/** Largest |a - b| relative to the largest |b|. */
function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0
  let m = 0
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!))
    m = Math.max(m, Math.abs(b[i]!))
  }
  return d / m
}

/** A copy of `src` with more metadata (the tensors are read from src). */
async function withKvs(src: string, dst: string, kvs: (arch: string) => GgufKv[]): Promise<void> {
  const m = readGgufModel(src)
  const arch = m.metadata.get('general.architecture')!.value as string
  const extra = kvs(arch)
  await writeGguf(dst, {
    kvs: [...m.kvs.filter((kv) => !extra.some((e) => e.key === kv.key)), ...extra],
    tensors: m.tensors.map((x) => ({name: x.name, type: x.type, shape: [...x.shape], data: {file: x.file, offset: x.offset}})),
  })
}

/** A copy of `src` whose metadata declares `<arch>.pooling_type`. */
async function withPooling(src: string, dst: string, value: number): Promise<void> {
  await withKvs(src, dst, (arch) => [{key: `${arch}.pooling_type`, type: GgufValueType.UINT32, value}])
}

/** node-llama-cpp's vectors for the texts, through the public embedding context or the exact one. */
async function theirs(model: LlamaModel, exact: boolean): Promise<number[][]> {
  const ctx = exact
    ? // The embedding context over a context with the other differential tests' settings. The
      // constructor is node-llama-cpp's own (createEmbeddingContext calls it the same way); only the
      // options it does not expose differ.
      new (LlamaEmbeddingContext as unknown as new (o: {_llamaContext: unknown}) => LlamaEmbeddingContext)({
        _llamaContext: await model.createContext({
          contextSize: N_CTX,
          threads: 1,
          flashAttention: false,
          experimentalKvCacheKeyType: 'F32',
          experimentalKvCacheValueType: 'F32',
          _embeddings: true,
        } as Parameters<LlamaModel['createContext']>[0]),
      })
    : await model.createEmbeddingContext({contextSize: N_CTX, threads: 1})
  try {
    const out: number[][] = []
    for (const t of TEXTS) out.push([...(await ctx.getEmbeddingFor(t)).vector])
    return out
  } finally {
    await ctx.dispose()
  }
}

describe('embeddings vs llama.cpp (node-llama-cpp embedding context)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'runner-embed-diff-'))
  let llama: Llama
  before(async () => {
    llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error})
  })
  after(async () => {
    await llama?.dispose()
    rmSync(dir, {recursive: true, force: true})
  })

  for (const {file, rel: relTol} of FILES) {
    test(file, async (t) => {
      const lines: string[] = []
      for (const d of DECLARED) {
        const path = d.value === null ? sharedPath(file) : join(dir, `${file.replace(/\W/g, '_')}-${d.value}.gguf`)
        if (d.value !== null) await withPooling(sharedPath(file), path, d.value)
        const ours = await Model.load(path)
        const ctx = await ours.createContext({nCtx: N_CTX, threads: 1, kvType: 'f32'})
        const theirModel = await llama.loadModel({modelPath: path})
        try {
          // A declared pooling is the model's own: ours must pick it with no option given.
          const pooling = d.value === null ? {pooling: d.ours} : {}
          const raw = await embed(new Session(ctx), TEXTS, {...pooling, normalize: false})
          assert.equal(raw.pooling, d.ours, `pooling_type ${d.value} is ${d.ours}`)
          const unit = await embed(new Session(ctx), TEXTS, pooling)
          assert.deepEqual(
            raw.tokenCounts,
            TEXTS.map((x) => theirModel.tokenize(x).length + 1),
            'both evaluate the text with BOS prepended',
          )
          const label = `${file} pooling_type ${d.value ?? 'absent'} (${d.ours})`
          for (const exact of [false, true]) {
            const their = await theirs(theirModel, exact)
            their.forEach((v, i) => {
              assert.equal(v.length, ours.config.nEmbd, `${label}: n_embd values`)
              const cos = cosine(raw.embeddings[i]!, v)
              const tol = exact ? 1 - 1e-7 : 0.9999
              assert.ok(cos >= tol, `${label}, text ${i}${exact ? ', exact settings' : ''}: cosine ${cos} < ${tol}`)
              if (exact) {
                const rel = maxRelDiff(raw.embeddings[i]!, v)
                assert.ok(rel <= relTol, `${label}, text ${i}: max relative |Δ| ${rel} > ${relTol}`)
                // Normalised: theirs scaled to unit length, and of unit length.
                const norm = Math.hypot(...v)
                const rn = maxRelDiff(
                  unit.embeddings[i]!,
                  v.map((x) => x / norm),
                )
                assert.ok(rn <= relTol, `${label}, text ${i}: normalised differs from theirs / |theirs| by ${rn}`)
                assert.ok(Math.abs(Math.hypot(...unit.embeddings[i]!) - 1) < 1e-6, 'unit length')
                lines.push(`${d.ours}: cos ${cos.toPrecision(12)}, max rel |Δ| ${rel.toExponential(2)}`)
              }
            })
          }
        } finally {
          ctx.dispose()
          ours.dispose()
          await theirModel.dispose()
        }
      }
      t.diagnostic(`${file}: ${lines.join('; ')}`)
    })
  }

  test('a vocabulary that adds EOS: both evaluate BOS, the text and EOS, with the same vectors', async () => {
    const path = join(dir, 'llama-eos.gguf')
    await withKvs(sharedPath('fixtures', 'llama.gguf'), path, (arch) => [
      {key: 'tokenizer.ggml.add_eos_token', type: GgufValueType.BOOL, value: true},
      {key: `${arch}.pooling_type`, type: GgufValueType.UINT32, value: 1},
    ])
    const ours = await Model.load(path)
    const ctx = await ours.createContext({nCtx: N_CTX, threads: 1, kvType: 'f32'})
    const theirModel = await llama.loadModel({modelPath: path})
    try {
      const raw = await embed(new Session(ctx), TEXTS, {normalize: false})
      const tokens = ours.tokenizer.encode(TEXTS[0]!, {addSpecial: true})
      assert.equal(tokens.at(-1), ours.tokenizer.eos, 'ours ends with EOS')
      assert.deepEqual(
        raw.tokenCounts,
        TEXTS.map((x) => theirModel.tokenize(x).length + 2),
      )
      const their = await theirs(theirModel, true)
      their.forEach((v, i) => assert.ok(maxRelDiff(raw.embeddings[i]!, v) <= 1e-5, `text ${i}`))
    } finally {
      ctx.dispose()
      ours.dispose()
      await theirModel.dispose()
    }
  })
})
