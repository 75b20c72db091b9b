/**
 * The weight quantizers against llama.cpp's own output. Outside fact: ../shared/fixtures/llama-<type>.gguf
 * are byte-identical to what llama.cpp's quantizer (llama_model_quantize, no imatrix) wrote from
 * ../shared/fixtures/llama.gguf (all F32), and stories260K-q8_0 / -q4_0 from
 * ../shared/models/stories260K.gguf, where tensors whose ne0 % 32 != 0 fell back to F16 and 1-D
 * tensors stayed F32 (see ../shared/reference/README.md). Quantizing each parent tensor with our
 * quantizeRef must give the child's bytes exactly; dequantizing the child must land within half a
 * quantization step of the parent.
 */
import assert from 'node:assert/strict'
import {closeSync, openSync, readSync} from 'node:fs'
import {describe, it} from 'node:test'

import {quantizeRef, toFloat} from '../../src/lib/engine/kernels.js'
import {type GgufTensorInfo, readGgufModel} from '../../src/lib/gguf/index.js'
import {f16BitsToF32} from '../../src/lib/util/half.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../helpers/shared.js'

function readBytes(t: GgufTensorInfo): Uint8Array {
  const out = new Uint8Array(t.byteSize)
  const fd = openSync(t.file, 'r')
  try {
    let done = 0
    while (done < out.length) {
      const got = readSync(fd, out, done, out.length - done, t.offset + done)
      if (got === 0) throw new Error(`short read of tensor ${t.name} in ${t.file}`)
      done += got
    }
  } finally {
    closeSync(fd)
  }
  return out
}

function readF32(t: GgufTensorInfo): Float32Array {
  assert.equal(t.type.name, 'F32', `${t.name} in the parent is F32`)
  const b = readBytes(t)
  return new Float32Array(b.buffer, b.byteOffset, t.nElements)
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i
  return a.length === b.length ? -1 : n
}

interface Pair {
  parent: string
  child: string
}

const PAIRS: Pair[] = [
  ...['q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'f16', 'bf16'].map((t) => ({
    parent: sharedPath('fixtures', 'llama.gguf'),
    child: sharedPath('fixtures', `llama-${t}.gguf`),
  })),
  {parent: sharedPath('models', 'stories260K.gguf'), child: sharedPath('fixtures', 'stories260K-q8_0.gguf')},
  {parent: sharedPath('models', 'stories260K.gguf'), child: sharedPath('fixtures', 'stories260K-q4_0.gguf')},
]

const HALF_EPS = 2 ** -11 // relative rounding of a value stored as a half

/**
 * Largest allowed |parent - dequantized| in one block: half a step of the stored scale, plus what
 * rounding d (and m) to half costs at the largest quant, plus a full step for the one value the
 * symmetric types clamp (x = -max maps to q = 16 / 32 and is stored as 15 / 31).
 */
function blockBound(type: string, block: Uint8Array): number {
  const d = Math.abs(f16BitsToF32(block[0]! | (block[1]! << 8)))
  const m = type === 'Q4_1' || type === 'Q5_1' ? Math.abs(f16BitsToF32(block[2]! | (block[3]! << 8))) : 0
  const qmax = {Q8_0: 127, Q4_0: 8, Q5_0: 16, Q4_1: 15, Q5_1: 31}[type] ?? 0
  const clamp = type === 'Q4_0' || type === 'Q5_0' ? 1 : 0.5
  // d itself is rounded from f32 to half: |q| * |d16 - d32| <= qmax * d * 2^-11 (relative to d16, a hair more).
  return clamp * d + qmax * d * HALF_EPS * 1.001 + m * HALF_EPS + 1e-30
}

describe('quantizeRef reproduces llama.cpp quantizer output byte for byte', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  for (const {parent, child} of PAIRS) {
    it(`${child.split('/').pop()} from ${parent.split('/').pop()}`, () => {
      const p = readGgufModel(parent)
      const c = readGgufModel(child)
      const parents = new Map(p.tensors.map((t) => [t.name, t]))
      const types = new Set<string>()
      for (const ct of c.tensors) {
        const pt = parents.get(ct.name)
        assert.ok(pt, `parent has ${ct.name}`)
        assert.deepEqual(ct.shape, pt.shape, `${ct.name} shape`)
        const want = readBytes(ct)
        const src = readF32(pt)
        const got = quantizeRef(ct.type.name, src)
        const at = firstDiff(got, want)
        assert.equal(at, -1, `${ct.name} (${ct.type.name}, [${ct.shape.join(', ')}]): first differing byte ${at} of ${want.length}`)
        types.add(ct.type.name)
      }
      // The child really exercises a non-F32 type (and stories260K its F16 fallback).
      assert.ok(
        [...types].some((t) => t !== 'F32'),
        `${child} has quantized tensors`,
      )
      if (child.includes('stories260K')) assert.ok(types.has('F16'), 'stories260K children have F16 fallback tensors')
    })
  }
})

describe(
  'toFloat of llama.cpp-quantized tensors lands within half a step of the F32 parent',
  {skip: hasShared() ? false : NO_SHARED_REASON},
  () => {
    for (const type of ['q8_0', 'q4_0', 'q4_1', 'q5_0', 'q5_1']) {
      it(`llama-${type}.gguf`, () => {
        const parents = new Map(readGgufModel(sharedPath('fixtures', 'llama.gguf')).tensors.map((t) => [t.name, t]))
        let checked = 0
        for (const ct of readGgufModel(sharedPath('fixtures', `llama-${type}.gguf`)).tensors) {
          if (ct.type.name === 'F32') continue
          const src = readF32(parents.get(ct.name)!)
          const bytes = readBytes(ct)
          const deq = toFloat(ct.type, bytes, ct.nElements)
          const bb = ct.type.bytesPerBlock
          for (let b = 0; b < ct.nElements / 32; b++) {
            const bound = blockBound(ct.type.name, bytes.subarray(b * bb, (b + 1) * bb))
            for (let j = 0; j < 32; j++) {
              const i = b * 32 + j
              const err = Math.abs(deq[i]! - src[i]!)
              if (err > bound) assert.fail(`${ct.name} value ${i}: parent ${src[i]}, dequantized ${deq[i]}, |error| ${err} > ${bound}`)
            }
          }
          checked++
        }
        assert.ok(checked > 0)
      })
    }

    for (const type of ['f16', 'bf16']) {
      it(`llama-${type}.gguf: dequantize then convert back gives the same bytes (exact round trip)`, () => {
        for (const ct of readGgufModel(sharedPath('fixtures', `llama-${type}.gguf`)).tensors) {
          if (ct.type.name === 'F32') continue
          const bytes = readBytes(ct)
          const back = quantizeRef(ct.type, toFloat(ct.type, bytes, ct.nElements))
          assert.equal(firstDiff(back, bytes), -1, ct.name)
        }
      })
    }
  },
)
