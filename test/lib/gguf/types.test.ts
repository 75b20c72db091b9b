/**
 * The ggml type table against ggml itself: block size and bytes per block come from the ggml library
 * inside node-llama-cpp (ggml_blck_size / ggml_type_size through its bindings), names from
 * node-llama-cpp's GgmlType enum.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import {getLlama, GgmlType as LlamaGgmlType} from 'node-llama-cpp'

import {GGML_TYPES, ggmlTypeById, ggmlTypeByName, LIVE_GGML_TYPES, tensorByteSize} from '../../../src/lib/gguf/index.js'

interface Bindings {
  getBlockSizeForGgmlType(id: number): number | undefined
  getTypeSizeForGgmlType(id: number): number | undefined
}

test('every ggml type id has our name, block size and block bytes (ggml through node-llama-cpp)', async () => {
  const llama = await getLlama({gpu: false, build: 'never', logLevel: 'error'})
  const bindings = (llama as unknown as {_bindings: Bindings})._bindings
  const theirIds = Object.values(LlamaGgmlType).filter((v): v is number => typeof v === 'number')
  assert.deepEqual(
    [...GGML_TYPES.keys()].sort((a, b) => a - b),
    theirIds.sort((a, b) => a - b),
  )
  for (const id of theirIds) {
    const ours = ggmlTypeById(id)!
    assert.equal(ours.name, LlamaGgmlType[id], `type ${id}`)
    assert.equal(ours.blockSize, bindings.getBlockSizeForGgmlType(id), `${ours.name} block size`)
    assert.equal(ours.bytesPerBlock, bindings.getTypeSizeForGgmlType(id), `${ours.name} bytes per block`)
    // ggml reports 0 for the ids it removed.
    assert.equal(Boolean(ours.removed), bindings.getTypeSizeForGgmlType(id) === 0, `${ours.name} removed`)
  }
  await llama.dispose()
})

test('the types the issue lists are all live', () => {
  const want = ['F32', 'F16', 'BF16', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'Q8_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'Q8_K']
  want.push('IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ3_XXS', 'IQ3_S', 'IQ1_S', 'IQ1_M', 'IQ4_NL', 'IQ4_XS', 'TQ1_0', 'TQ2_0', 'MXFP4', 'NVFP4')
  for (const name of want)
    assert.ok(
      LIVE_GGML_TYPES.some((t) => t.name === name),
      name,
    )
})

test('lookup by name is case-insensitive and never returns a removed type', () => {
  assert.equal(ggmlTypeByName('q4_k')?.id, 12)
  assert.equal(ggmlTypeByName('Q4_2'), undefined)
  assert.equal(ggmlTypeByName('nope'), undefined)
})

test('tensor byte size: whole blocks only (Q4_0 blocks of 32 weights take 18 bytes)', () => {
  const q4 = ggmlTypeByName('Q4_0')!
  assert.equal(tensorByteSize(q4, 64n, 64n * 3n), ((64n * 3n) / 32n) * 18n)
  assert.match(String(tensorByteSize(q4, 48n, 48n)), /not a multiple/)
})
