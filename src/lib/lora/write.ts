import {ggmlTypeByName, GgufValueType, writeGguf, type GgufKv, type GgufWriteOptions, type GgufWriteTensor} from '../gguf/index.js'

/** One adapted weight's matrices as written: a [nIn, rank] and b [rank, nOut] in ggml order, F32. */
export interface LoraPairData {
  /** The base tensor, e.g. `blk.0.attn_q.weight`. */
  readonly target: string
  readonly nIn: number
  readonly nOut: number
  readonly rank: number
  /** rank rows of nIn values (PEFT's lora_A.weight [r, in], row-major). */
  readonly a: Float32Array
  /** nOut rows of rank values (PEFT's lora_B.weight [out, r], row-major). */
  readonly b: Float32Array
}

export interface LoraFileContent {
  readonly architecture: string
  readonly alpha: number
  readonly pairs: readonly LoraPairData[]
  readonly name?: string
  /** Extra metadata (training settings, the base's sha256), written after the required keys. */
  readonly extra?: readonly GgufKv[]
}

const f32 = ggmlTypeByName('F32')!

/**
 * Write an adapter in llama.cpp's GGUF LoRA format (what convert_lora_to_gguf.py writes: general.type
 * "adapter", adapter.type "lora", adapter.lora.alpha as f32, `<target>.lora_a` / `.lora_b`), through
 * the GGUF writer: temporary name, fsync, rename.
 */
export async function writeLoraAdapter(path: string, content: LoraFileContent, options: GgufWriteOptions = {}) {
  const kvs: GgufKv[] = [
    {key: 'general.architecture', type: GgufValueType.STRING, value: content.architecture},
    {key: 'general.type', type: GgufValueType.STRING, value: 'adapter'},
    ...(content.name === undefined ? [] : [{key: 'general.name', type: GgufValueType.STRING, value: content.name}]),
    {key: 'adapter.type', type: GgufValueType.STRING, value: 'lora'},
    {key: 'adapter.lora.alpha', type: GgufValueType.FLOAT32, value: content.alpha},
    ...(content.extra ?? []),
  ]
  const tensors: GgufWriteTensor[] = []
  for (const p of content.pairs) {
    if (p.a.length !== p.rank * p.nIn || p.b.length !== p.nOut * p.rank)
      throw new RangeError(
        `${p.target}: a holds ${p.a.length} values and b ${p.b.length}, expected ${p.rank * p.nIn} and ${p.nOut * p.rank}`,
      )
    const bytes = (x: Float32Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength)
    tensors.push({name: `${p.target}.lora_a`, type: f32, shape: [p.nIn, p.rank], data: bytes(p.a)})
    tensors.push({name: `${p.target}.lora_b`, type: f32, shape: [p.rank, p.nOut], data: bytes(p.b)})
  }
  return writeGguf(path, {kvs, tensors}, options)
}
