import {ARCHITECTURES, type ArchitectureSpec, planModel} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {
  type GgufKv,
  type GgufModelFiles,
  type GgufTensorInfo,
  GgufValueType,
  type GgufWriteOptions,
  isGgufArray,
  writeGguf,
} from '../gguf/index.js'
import {checkModel} from '../model-check/index.js'

export interface SublayerRemoval {
  readonly kind: 'attn' | 'mlp'
  readonly block: number
}

export interface RemovalSummary {
  readonly output: string
  readonly removed: readonly SublayerRemoval[]
  readonly droppedTensors: readonly string[]
  readonly droppedBytes: number
  readonly fileBytes: number
}

/** "attn:48,mlp:3" → removals; refused by name when malformed. */
export function parseRemovals(spec: string): SublayerRemoval[] {
  const out: SublayerRemoval[] = []
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^(attn|mlp):(\d+)$/.exec(part)
    if (!m) throw new RunnerError('SUBLAYER_BAD_SPEC', `"${part}" is not attn:N or mlp:N (N a block index)`, ExitCode.usage)
    const r = {kind: m[1] as 'attn' | 'mlp', block: Number(m[2])}
    if (out.some((o) => o.kind === r.kind && o.block === r.block))
      throw new RunnerError('SUBLAYER_BAD_SPEC', `${part} is listed twice`, ExitCode.usage)
    out.push(r)
  }
  if (out.length === 0) throw new RunnerError('SUBLAYER_BAD_SPEC', 'no sublayer to remove: give attn:N and/or mlp:N', ExitCode.usage)
  return out
}

/**
 * The tensors block N loses with its sublayer, by the family's tensor table: every tensor of that
 * sublayer (TensorSpec.sublayer: projections, biases, q/k norms, post-norms, experts in either
 * layout) except its pre-norm, which a removed sublayer may keep.
 */
function sublayerTensors(spec: ArchitectureSpec, r: SublayerRemoval): (name: string) => boolean {
  const sublayer = r.kind === 'attn' ? 'attn' : 'ffn'
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const patterns = spec.tensors
    .filter((s) => s.perLayer && s.sublayer === sublayer && !s.preNorm)
    .flatMap((s) => [s.name, ...(s.split ? [s.split] : [])])
    .map((name) => new RegExp(`^${escape(name).replace('\\{L\\}', String(r.block)).replace('\\{E\\}', '\\d+')}$`))
  return (name) => patterns.some((p) => p.test(name))
}

/** The per-block form of a count with 0 at the removed blocks. */
function perBlockKv(kv: GgufKv | undefined, key: string, nLayer: number, zeroAt: ReadonlySet<number>): GgufKv {
  if (!kv) throw new RunnerError('SUBLAYER_UNSUPPORTED', `${key} is missing`, ExitCode.unsupported)
  const values = isGgufArray(kv.value)
    ? Array.from(kv.value.items as ArrayLike<number | bigint>, Number)
    : Array.from({length: nLayer}, () => Number(kv.value))
  return {
    key,
    type: GgufValueType.ARRAY,
    value: {itemType: GgufValueType.UINT32, items: Uint32Array.from(values, (v, i) => (zeroAt.has(i) ? 0 : v))},
  }
}

/** What a removal changes: the metadata to write, the tensors that stay and those that go. */
export interface RemovalPlan {
  readonly kvs: GgufKv[]
  readonly kept: readonly GgufTensorInfo[]
  readonly dropped: readonly GgufTensorInfo[]
}

/**
 * Plan the removal of sublayers, declared as llama.cpp's "deci" graph does: 0 at that block in the
 * per-block head_count / head_count_kv (attention) or feed_forward_length (FFN) arrays, turning
 * scalars into arrays. The block's pre-norm stays. Used by remove-sublayer and quantize.
 */
export function planRemovals(model: GgufModelFiles, removals: readonly SublayerRemoval[]): RemovalPlan {
  const plan = planModel(model)
  const {config} = plan
  const a = config.architecture
  for (const r of removals) {
    if (r.block >= config.nLayer)
      throw new RunnerError('SUBLAYER_BAD_SPEC', `${r.kind}:${r.block}: the model has blocks 0 to ${config.nLayer - 1}`, ExitCode.usage)
    const already = r.kind === 'attn' ? config.attnRemoved[r.block] : config.ffnRemoved[r.block]
    if (already) throw new RunnerError('SUBLAYER_ALREADY_REMOVED', `${r.kind}:${r.block} is already removed in this file`, ExitCode.usage)
  }
  const attnZero = new Set([
    ...config.attnRemoved.flatMap((x, i) => (x ? [i] : [])),
    ...removals.filter((r) => r.kind === 'attn').map((r) => r.block),
  ])
  const ffnZero = new Set([
    ...config.ffnRemoved.flatMap((x, i) => (x ? [i] : [])),
    ...removals.filter((r) => r.kind === 'mlp').map((r) => r.block),
  ])
  if (attnZero.size === config.nLayer || ffnZero.size === config.nLayer) {
    throw new RunnerError('SUBLAYER_UNSUPPORTED', 'removing that sublayer from every block leaves none: refused', ExitCode.unsupported)
  }
  const replace = new Map<string, GgufKv>()
  if (removals.some((r) => r.kind === 'attn')) {
    for (const key of [`${a}.attention.head_count`, `${a}.attention.head_count_kv`]) {
      replace.set(key, perBlockKv(model.metadata.get(key) ?? model.metadata.get(`${a}.attention.head_count`), key, config.nLayer, attnZero))
    }
  }
  if (removals.some((r) => r.kind === 'mlp')) {
    const key = `${a}.feed_forward_length`
    replace.set(key, perBlockKv(model.metadata.get(key), key, config.nLayer, ffnZero))
  }
  const removed = removals.map((r) => `${r.kind}:${r.block}`).join(',')
  const provenance: GgufKv = {key: 'runner.surgery.removed', type: GgufValueType.STRING, value: removed}
  const kvs = model.kvs.filter((kv) => !kv.key.startsWith('split.') && kv.key !== provenance.key).map((kv) => replace.get(kv.key) ?? kv)
  for (const [key, kv] of replace) if (!model.metadata.has(key)) kvs.push(kv)
  kvs.push(provenance)
  const spec = ARCHITECTURES.get(a)
  if (!spec) throw new RunnerError('SUBLAYER_UNSUPPORTED', `architecture ${a} has no tensor table`, ExitCode.unsupported)
  const drops = removals.map((r) => sublayerTensors(spec, r))
  const dropped = model.tensors.filter((t) => drops.some((drop) => drop(t.name)))
  return {kvs, kept: model.tensors.filter((t) => !dropped.includes(t)), dropped}
}

/**
 * Physically drop sublayers (planRemovals) and write the result atomically. `write`: refuse an
 * existing output (no --force) and stop on Ctrl+C, as writeGguf.
 */
export async function removeSublayers(
  model: GgufModelFiles,
  out: string,
  removals: readonly SublayerRemoval[],
  write: Pick<GgufWriteOptions, 'exclusive' | 'signal'> = {},
): Promise<RemovalSummary> {
  checkModel(model) // what run would refuse is not cut
  const {kvs, kept, dropped} = planRemovals(model, removals)
  const result = await writeGguf(
    out,
    {version: 3, kvs, tensors: kept.map((t) => ({name: t.name, type: t.type, shape: t.shape, data: {file: t.file, offset: t.offset}}))},
    {...write, inputs: model.shards.map((s) => s.path)},
  )
  return {
    output: result.path,
    removed: removals,
    droppedTensors: dropped.map((t) => t.name),
    droppedBytes: dropped.reduce((n, t) => n + t.byteSize, 0),
    fileBytes: result.bytes,
  }
}
