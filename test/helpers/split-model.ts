// A model written as llama.cpp's split convention (gguf-split): the first shard carries the metadata,
// each shard its half of the tensors, and split.no / split.count / split.tensors.count in both.
import {type GgufKv, GgufValueType, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'

/** Write `source` as two shards at the two paths given. */
export async function writeTwoShards(source: string, first: string, second: string): Promise<void> {
  const model = readGgufModel(source)
  const half = Math.ceil(model.tensors.length / 2)
  const split = (no: number): GgufKv[] => [
    {key: 'split.no', type: GgufValueType.UINT16, value: no},
    {key: 'split.count', type: GgufValueType.UINT16, value: 2},
    {key: 'split.tensors.count', type: GgufValueType.INT32, value: model.tensors.length},
  ]
  const tensors = (list: typeof model.tensors) =>
    list.map((x) => ({name: x.name, type: x.type, shape: x.shape, data: {file: x.file, offset: x.offset}}))
  await writeGguf(first, {kvs: [...model.kvs, ...split(0)], tensors: tensors(model.tensors.slice(0, half))})
  await writeGguf(second, {kvs: split(1), tensors: tensors(model.tensors.slice(half))})
}
