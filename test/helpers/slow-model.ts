// A random-weight llama slow enough (about a millisecond per token) that a test's abort, stop or
// timeout always lands mid-generation; the tests that race the engine share it.
import {makeTestModel} from '../../scripts/make-test-model.js'
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
}
