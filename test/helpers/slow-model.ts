// A random-weight llama slow enough (about a millisecond per token) that a test's abort, stop or
// timeout always lands mid-generation; the tests that race the engine share it. Its head's row for
// EOS (token 2) is zero, so greedy never picks it over the random logits of the others: a run ends
// only by max_tokens, a stop or an abort, however fast the machine (random weights otherwise sample
// EOS within a few hundred tokens, which AVX-512 reached inside a test's grace period).
import {closeSync, openSync, writeSync} from 'node:fs'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {readGgufModel} from '../../src/lib/gguf/index.js'
import {sharedPath} from './shared.js'

export async function makeSlowModel(path: string): Promise<void> {
  await makeTestModel(path, {
    arch: 'llama',
    nEmbd: 256,
    nLayer: 4,
    nHead: 4,
    nHeadKv: 4,
    nFf: 704,
    nCtx: 2048,
    type: 'q8_0',
    seed: 1n,
    tokenizerFrom: sharedPath('models', 'stories260K.gguf'),
  })
  const out = readGgufModel(path).tensors.find((t) => t.name === 'output.weight')!
  const rowBytes = out.byteSize / out.shape[1]!
  const fd = openSync(path, 'r+')
  try {
    writeSync(fd, new Uint8Array(rowBytes), 0, rowBytes, out.offset + 2 * rowBytes)
  } finally {
    closeSync(fd)
  }
}
