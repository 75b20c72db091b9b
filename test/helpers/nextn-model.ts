// A model with a multi-token-prediction (NextN) head, written at test time (issue #23): a fixture
// with one more block of seeded random weights and llama.cpp's `blk.N.nextn.*` tensors, so the main
// model's tokens must stay those of the fixture itself.
import {type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'
import {deriveSeed, SeededRandom} from '../../src/lib/util/index.js'

export interface NextnOptions {
  /** `{arch}.nextn_predict_layers` (default 1). */
  readonly predictLayers?: number
  readonly seed?: bigint
  /** Leave out the NextN tensors (a block too many with no head) or write them. */
  readonly withHeadTensors?: boolean
  /** Write the metadata key but no extra block (block_count unchanged). */
  readonly keyOnly?: boolean
  /** Chosen data for some of the new tensors, by name (the rest random). */
  readonly data?: (name: string, shape: readonly number[]) => Float32Array | undefined
  /** Also write the head's own blk.N.nextn.shared_head_head (random unless `data` gives it). */
  readonly withOwnHead?: boolean
}

function f32(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
}

/** Seeded random F32 data of a shape: norms near 1, matrices scaled by 1/sqrt(ne0). */
function random(name: string, shape: readonly number[], seed: bigint): Uint8Array {
  const rng = new SeededRandom(deriveSeed(seed, name))
  const n = shape.reduce((a, b) => a * b, 1)
  const out = new Float32Array(n)
  const isVector = shape.length === 1
  const scale = isVector ? 0.1 : 1 / Math.sqrt(shape[0]!)
  for (let i = 0; i < n; i++) out[i] = (isVector ? 1 : 0) + rng.normal() * scale
  return f32(out)
}

/** Write `source` plus one NextN block (the copy of block 0's tensor list, random weights) to `out`. */
export async function writeNextnModel(source: string, out: string, o: NextnOptions = {}): Promise<void> {
  const seed = o.seed ?? 2323n
  const m = readGgufModel(source)
  const arch = m.kvs.find((k) => k.key === 'general.architecture')!.value as string
  const blocks = Number(m.kvs.find((k) => k.key === `${arch}.block_count`)!.value)
  const added = o.keyOnly ? 0 : 1
  const kvs: GgufKv[] = m.kvs.map((kv) =>
    kv.key === `${arch}.block_count` ? {key: kv.key, type: GgufValueType.UINT32, value: blocks + added} : kv,
  )
  kvs.push({key: `${arch}.nextn_predict_layers`, type: GgufValueType.UINT32, value: o.predictLayers ?? 1})
  const tensors = m.tensors.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}}))
  const chosen = (name: string, shape: readonly number[]) => {
    const given = o.data?.(name, shape)
    return given ? f32(given) : random(name, shape, seed)
  }
  if (!o.keyOnly) {
    const L = blocks
    for (const t of m.tensors.filter((x) => x.name.startsWith('blk.0.'))) {
      const name = t.name.replace('blk.0.', `blk.${L}.`)
      tensors.push({name, type: 0, shape: t.shape, data: chosen(name, t.shape)})
    }
    if (o.withHeadTensors !== false) {
      const e = Number(m.kvs.find((k) => k.key === `${arch}.embedding_length`)!.value)
      const nVocab = (m.kvs.find((k) => k.key === 'tokenizer.ggml.tokens')!.value as {items: readonly unknown[]}).items.length
      const heads: Array<[string, number[]]> = [
        ['eh_proj', [2 * e, e]],
        ['enorm', [e]],
        ['hnorm', [e]],
        ['shared_head_norm', [e]],
        ...(o.withOwnHead ? [['shared_head_head', [e, nVocab]] as [string, number[]]] : []),
      ]
      for (const [suffix, shape] of heads) {
        const name = `blk.${L}.nextn.${suffix}.weight`
        tensors.push({name, type: 0, shape, data: chosen(name, shape)})
      }
    }
  }
  await writeGguf(out, {kvs, tensors})
}
