// A copy of a GGUF file with metadata added or replaced, written by our own writer (the tensors are read from the source).
import {type GgufKv, readGgufModel, writeGguf} from '../../src/lib/gguf/index.js'

/** `dst`: `src` with the keys `kvs(arch)` gives, replacing any of the same name. */
export async function withKvs(src: string, dst: string, kvs: (arch: string) => GgufKv[]): Promise<void> {
  const m = readGgufModel(src)
  const arch = m.metadata.get('general.architecture')!.value as string
  const extra = kvs(arch)
  await writeGguf(dst, {
    kvs: [...m.kvs.filter((kv) => !extra.some((e) => e.key === kv.key)), ...extra],
    tensors: m.tensors.map((x) => ({name: x.name, type: x.type, shape: [...x.shape], data: {file: x.file, offset: x.offset}})),
  })
}
