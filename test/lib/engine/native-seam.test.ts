/**
 * Errors keep their meaning across the seam: every error the addon throws or rejects with carries a
 * code from runner.h's status table, and src/lib/errors.ts gives each its exit code (out of memory a
 * failure, never usage). And the last-logits accessor returns what runner.h promises.
 */
import assert from 'node:assert/strict'
import {after, before, describe, test} from 'node:test'

import {planModel} from '../../../src/lib/arch/index.js'
import {loadAddon, type NativeContextHandle, type NativeModelHandle} from '../../../src/lib/engine/addon.js'
import {engineError} from '../../../src/lib/engine/errors.js'
import {nativeConfig, nativeTensor} from '../../../src/lib/engine/index.js'
import {loadTestAddon} from '../../../src/lib/engine/test-addon.js'
import {ExitCode, type ExitCodeValue, RunnerError} from '../../../src/lib/errors.js'
import {readGgufModel} from '../../../src/lib/gguf/index.js'
import {bits} from '../../helpers/engine.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

/** fn throws (or its promise rejects with) an error of `code`, naming `mentions`, converting to `exit`. */
async function refused(fn: () => unknown, code: string, exit: ExitCodeValue, ...mentions: string[]): Promise<void> {
  let caught: unknown
  try {
    await fn()
  } catch (e) {
    caught = e
  }
  assert.ok(caught instanceof Error, `an error with code ${code}`)
  assert.equal(Reflect.get(caught, 'code'), code, caught.message)
  for (const m of mentions) assert.ok(caught.message.includes(m), `"${caught.message}" names ${m}`)
  const converted = engineError(caught)
  assert.ok(converted instanceof RunnerError, 'engineError makes it a RunnerError')
  assert.equal(converted.code, code)
  assert.equal(converted.exitCode, exit)
}

describe('errors across the seam', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const STORIES = sharedPath('models', 'stories260K.gguf')
  const addon = loadAddon()
  let model: NativeModelHandle
  let ctx: NativeContextHandle
  before(async () => {
    const plan = planModel(readGgufModel(STORIES))
    model = await addon.modelLoad(nativeConfig(plan.config), [STORIES], plan.tensors.map(nativeTensor))
    ctx = await addon.contextCreate(model, {nCtx: 64, nBatch: 8, threads: 1, kvType: 1})
  })
  after(() => {
    addon.contextFree(ctx)
    addon.modelFree(model)
  })

  test('a busy context refuses a second call with ENGINE_BUSY (exit 1), and is usable once the first ends', async () => {
    const running = addon.decode(
      ctx,
      Int32Array.from({length: 32}, (_, i) => 1 + i),
      0,
      1,
      new Float32Array(512),
    )
    await refused(() => addon.decode(ctx, Int32Array.of(1), 0, 1), 'ENGINE_BUSY', ExitCode.failure, 'busy')
    await refused(() => addon.kvTruncate(ctx, 0), 'ENGINE_BUSY', ExitCode.failure, 'busy')
    await refused(() => addon.nPast(ctx), 'ENGINE_BUSY', ExitCode.failure, 'busy')
    await refused(() => addon.contextLogits(ctx), 'ENGINE_BUSY', ExitCode.failure, 'busy')
    await running
    assert.equal(addon.nPast(ctx), 32)
  })

  test('kvTruncate outside [0, n_past] is ENGINE_INVALID_ARGUMENT (exit 2) naming n_keep and n_past', async () => {
    await addon.decode(ctx, Int32Array.of(1, 2, 3, 4, 5), 0, 0)
    await refused(() => addon.kvTruncate(ctx, 9), 'ENGINE_INVALID_ARGUMENT', ExitCode.usage, 'n_keep 9', 'n_past 5')
    await refused(() => addon.kvTruncate(ctx, -1), 'ENGINE_INVALID_ARGUMENT', ExitCode.usage, 'n_keep -1', 'n_past 5')
    addon.kvTruncate(ctx, 3)
    assert.equal(addon.nPast(ctx), 3)
  })

  test('a disposed handle is ENGINE_DISPOSED (exit 1), for contexts and models', async () => {
    const m = await addon.modelLoad(
      nativeConfig(planModel(readGgufModel(STORIES)).config),
      [STORIES],
      planModel(readGgufModel(STORIES)).tensors.map(nativeTensor),
    )
    const c = await addon.contextCreate(m, {nCtx: 16, nBatch: 16, threads: 1, kvType: 1})
    addon.contextFree(c)
    await refused(() => addon.decode(c, Int32Array.of(1), 0, 1), 'ENGINE_DISPOSED', ExitCode.failure, 'context', 'disposed')
    await refused(() => addon.nPast(c), 'ENGINE_DISPOSED', ExitCode.failure, 'disposed')
    addon.modelFree(m)
    await refused(
      () => addon.contextCreate(m, {nCtx: 16, nBatch: 16, threads: 1, kvType: 1}),
      'ENGINE_DISPOSED',
      ExitCode.failure,
      'model',
      'disposed',
    )
  })

  test('argument errors of the addon carry ENGINE_INVALID_ARGUMENT (exit 2) and name the argument', async () => {
    await refused(
      () => addon.decode(ctx, Float64Array.of(1) as unknown as Int32Array, 0, 1),
      'ENGINE_INVALID_ARGUMENT',
      ExitCode.usage,
      'tokens',
      'Int32Array',
    )
    await refused(() => addon.decode(ctx, Int32Array.of(1), 0.5, 1), 'ENGINE_INVALID_ARGUMENT', ExitCode.usage, 'pos', '0.5')
    await refused(
      () => addon.decode(ctx, Int32Array.of(1, 2), 0, 2, new Float32Array(3)),
      'ENGINE_INVALID_ARGUMENT',
      ExitCode.usage,
      'logits holds 3',
    )
    await refused(() => addon.kvTruncate(ctx, Number.NaN), 'ENGINE_INVALID_ARGUMENT', ExitCode.usage, 'nKeep')
    await refused(
      () => addon.decode(model as unknown as NativeContextHandle, Int32Array.of(1), 0, 1),
      'ENGINE_INVALID_ARGUMENT',
      ExitCode.usage,
      'context handle',
    )
    await refused(
      () => addon.contextCreate(model, {nCtx: 16, nBatch: 16, threads: 1.5, kvType: 1}),
      'ENGINE_INVALID_ARGUMENT',
      ExitCode.usage,
      'params.threads',
    )
    // The context is not left busy by a refused call.
    await addon.decode(ctx, Int32Array.of(1), 0, 1)
  })

  test('a raised abort cancels a model load (ENGINE_ABORTED, exit 130, "cancelled"); an unraised one loads', async () => {
    const {Model} = await import('../../../src/lib/engine/index.js')
    const raised = new AbortController()
    raised.abort()
    await refused(() => Model.load(STORIES, {signal: raised.signal}), 'ENGINE_ABORTED', ExitCode.interrupted, 'cancelled')
    const loaded = await Model.load(STORIES, {signal: new AbortController().signal})
    assert.equal(loaded.config.nVocab, 512)
    loaded.dispose()
  })
  test('a C++ exception inside a worker keeps its meaning: out of memory is ENGINE_NO_MEMORY (exit 1), never usage', async () => {
    const hooks = loadTestAddon()
    await refused(() => hooks.testWorkerThrow('bad_alloc'), 'ENGINE_NO_MEMORY', ExitCode.failure, 'out of memory')
    await refused(() => hooks.testWorkerThrow('runtime_error'), 'ENGINE_INTERNAL', ExitCode.failure, 'a test failure')
    await refused(() => hooks.testWorkerThrow('unknown'), 'ENGINE_INTERNAL', ExitCode.failure, 'unknown exception')
    await hooks.testWorkerThrow('none') // the anchor: the same worker resolves when nothing throws
  })
})

describe('the last logits row (runner_context_logits)', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  test("after decode(..., 'all') over more tokens than n_batch it is the last row of the returned logits, bitwise", async () => {
    const STORIES = sharedPath('models', 'stories260K.gguf')
    const plan = planModel(readGgufModel(STORIES))
    const addon = loadAddon()
    const nVocab = plan.config.nVocab
    const model = await addon.modelLoad(nativeConfig(plan.config), [STORIES], plan.tensors.map(nativeTensor))
    const ctx = await addon.contextCreate(model, {nCtx: 64, nBatch: 8, threads: 1, kvType: 1})
    try {
      assert.equal(addon.contextLogits(ctx), null, 'nothing computed yet')
      const tokens = Int32Array.from({length: 21}, (_, i) => 1 + ((i * 37) % (nVocab - 1)))
      const all = new Float32Array(tokens.length * nVocab)
      await addon.decode(ctx, tokens, 0, 2, all)
      const last = all.subarray((tokens.length - 1) * nVocab)
      const firstOfLastChunk = all.subarray(16 * nVocab, 17 * nVocab) // what it returned before the fix
      const got = addon.contextLogits(ctx)!
      assert.deepEqual(bits(got), bits(last))
      assert.notDeepEqual(bits(got), bits(firstOfLastChunk), 'the anchor: the first row of the last chunk differs')
      const one = new Float32Array(nVocab)
      await addon.decode(ctx, Int32Array.of(5), 3, 1, one)
      assert.deepEqual(bits(addon.contextLogits(ctx)!), bits(one), "'last': the row it returned")
      await addon.decode(ctx, Int32Array.of(6, 7), 4, 0)
      assert.equal(addon.contextLogits(ctx), null, "'none' computes no logits")
      await addon.decode(ctx, Int32Array.of(6), 4, 1, one)
      addon.kvTruncate(ctx, 2)
      assert.equal(addon.contextLogits(ctx), null, 'forgotten by a truncate')
    } finally {
      addon.contextFree(ctx)
      addon.modelFree(model)
    }
  })
})
