/** Model loading: on a worker thread, with progress, weights mapped in place. */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {Model} from '../../../src/lib/engine/model.js'
import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

test('load reports progress up to the bytes of every tensor', {skip: hasShared() ? false : NO_SHARED_REASON}, async () => {
  const path = sharedPath('fixtures', 'llama-q8_0.gguf')
  const tensorBytes = readGgufModel(path).tensors.reduce((n, t) => n + t.byteSize, 0)
  const calls: Array<[number, number]> = []
  const model = await Model.load(path, {onProgress: (done, total) => calls.push([done, total])})
  assert.ok(calls.length >= 1)
  for (const [, total] of calls) assert.equal(total, tensorBytes)
  assert.deepEqual(calls[calls.length - 1], [tensorBytes, tensorBytes])
  for (let i = 1; i < calls.length; i++) assert.ok(calls[i]![0] >= calls[i - 1]![0], 'progress never goes back')
  assert.equal(model.config.nLayer, 3)
  model.dispose()
})

test('a disposed model and context refuse further use by name', {skip: hasShared() ? false : NO_SHARED_REASON}, async () => {
  const model = await Model.load(sharedPath('models', 'stories260K.gguf'))
  const ctx = await model.createContext({nCtx: 32, threads: 1})
  ctx.dispose()
  await assert.rejects(ctx.decode([1, 2, 3]), /disposed/)
  model.dispose()
  await assert.rejects(model.createContext(), /disposed/)
})
