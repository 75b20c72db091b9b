import {basename, dirname, join} from 'node:path'

import {GgufError, GgufErrorCode} from './errors.js'
import {type GgufFile, type GgufTensorInfo, readGgufFile} from './reader.js'
import type {GgufKv} from './values.js'

/** llama.cpp's split naming: `<prefix>-00001-of-00003.gguf`, shard numbers from 1. */
const SHARD_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/

/** A model as one unit, whether it is one file or a sharded set. */
export interface GgufModelFiles {
  /** The first shard (or the only file). */
  readonly path: string
  readonly shards: readonly GgufFile[]
  readonly version: number
  /** Metadata of the first shard, which carries the model's metadata in a split set. */
  readonly kvs: readonly GgufKv[]
  readonly metadata: ReadonlyMap<string, GgufKv>
  /** Every tensor of every shard; each names the file that holds its data. */
  readonly tensors: readonly GgufTensorInfo[]
  readonly totalBytes: number
}

export function shardPaths(path: string): string[] | undefined {
  const m = SHARD_NAME.exec(basename(path))
  if (!m) return undefined
  const count = Number(m[3])
  if (count < 1) return undefined
  const dir = dirname(path)
  return Array.from({length: count}, (_, i) => join(dir, `${m[1]}-${String(i + 1).padStart(5, '0')}-of-${m[3]}.gguf`))
}

/** Read a GGUF model: one file, or every shard of a split set (any shard's path may be given). */
export function readGgufModel(path: string): GgufModelFiles {
  const paths = shardPaths(path)
  const first = paths ? readShard(paths[0]!) : readGgufFile(path)
  const declared = splitCount(first)
  if (!paths || (paths.length === 1 && declared <= 1)) {
    if (declared > 1) {
      throw new GgufError(
        GgufErrorCode.shardMissing,
        'split.count',
        first.kvOffsets.get('split.count') ?? 0,
        `the file says it is one of ${declared} shards but its name does not follow <name>-0000N-of-0000M.gguf`,
        first.path,
      )
    }
    return single(first)
  }
  const shards = [first, ...paths.slice(1).map((p) => readShard(p))]
  shards.forEach((s, i) => checkShard(s, i, paths.length))
  const tensors = shards.flatMap((s) => s.tensors)
  const seen = new Set<string>()
  for (const t of tensors) {
    if (seen.has(t.name)) {
      throw new GgufError(GgufErrorCode.duplicateTensor, `tensor '${t.name}'`, t.infoOffset, 'appears in more than one shard', t.file)
    }
    seen.add(t.name)
  }
  const declaredTensors = first.metadata.get('split.tensors.count')
  if (declaredTensors && Number(declaredTensors.value) !== tensors.length) {
    throw new GgufError(
      GgufErrorCode.shardMismatch,
      'split.tensors.count',
      first.kvOffsets.get('split.tensors.count') ?? 0,
      `says ${declaredTensors.value} tensors but the shards hold ${tensors.length}`,
      first.path,
    )
  }
  return {
    path: first.path,
    shards,
    version: first.version,
    kvs: first.kvs,
    metadata: first.metadata,
    tensors,
    totalBytes: shards.reduce((n, s) => n + s.fileSize, 0),
  }
}

function single(f: GgufFile): GgufModelFiles {
  return {path: f.path, shards: [f], version: f.version, kvs: f.kvs, metadata: f.metadata, tensors: f.tensors, totalBytes: f.fileSize}
}

/** Read one shard; a shard that is absent is named as a missing shard, not as a missing file. */
function readShard(path: string): GgufFile {
  try {
    return readGgufFile(path)
  } catch (error) {
    if (error instanceof GgufError && error.code === GgufErrorCode.notFound) {
      throw new GgufError(GgufErrorCode.shardMissing, 'file', 0, 'shard of a split model is missing', path)
    }
    throw error
  }
}

function splitCount(f: GgufFile): number {
  const kv = f.metadata.get('split.count')
  return kv ? Number(kv.value) : 1
}

function checkShard(s: GgufFile, index: number, count: number): void {
  const no = s.metadata.get('split.no')
  const n = s.metadata.get('split.count')
  const at = (k: string) => s.kvOffsets.get(k) ?? 0
  if (!no || !n) {
    throw new GgufError(GgufErrorCode.shardMismatch, 'split.no', 0, 'a shard of a split set lacks split.no / split.count', s.path)
  }
  if (Number(n.value) !== count) {
    throw new GgufError(
      GgufErrorCode.shardMismatch,
      'split.count',
      at('split.count'),
      `is ${n.value} but the file names say ${count}`,
      s.path,
    )
  }
  if (Number(no.value) !== index) {
    throw new GgufError(
      GgufErrorCode.shardMismatch,
      'split.no',
      at('split.no'),
      `is ${no.value} but this is shard ${index + 1} of ${count} (split.no ${index} expected)`,
      s.path,
    )
  }
}
