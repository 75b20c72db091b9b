/**
 * F16 and BF16 conversions against llama.cpp's own converter: shared/fixtures/llama-f16.gguf and
 * llama-bf16.gguf are byte-identical to llama.cpp's `llama_model_quantize` output from llama.gguf
 * (shared/reference/README.md), so converting llama.gguf's F32 weights must give the same bytes.
 */
import assert from 'node:assert/strict'
import {closeSync, openSync, readSync} from 'node:fs'
import {test} from 'node:test'

import {type GgufTensorInfo, readGgufModel} from '../../../src/lib/gguf/index.js'
import {bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits} from '../../../src/lib/util/half.js'
import {hasShared, NO_SHARED_REASON, sharedPath} from '../../helpers/shared.js'

function tensorBytes(t: GgufTensorInfo): Buffer {
  const fd = openSync(t.file, 'r')
  try {
    const b = Buffer.alloc(t.byteSize)
    readSync(fd, b, 0, b.length, t.offset)
    return b
  } finally {
    closeSync(fd)
  }
}

for (const [variant, convert] of [
  ['f16', f32ToF16Bits],
  ['bf16', f32ToBf16Bits],
] as const) {
  test(
    `F32 → ${variant.toUpperCase()} is bit-identical to llama.cpp's converter (llama-${variant}.gguf)`,
    {skip: hasShared() ? false : NO_SHARED_REASON},
    () => {
      const parent = readGgufModel(sharedPath('fixtures', 'llama.gguf'))
      const child = readGgufModel(sharedPath('fixtures', `llama-${variant}.gguf`))
      let converted = 0
      for (const t of child.tensors) {
        if (t.type.name === 'F32') continue
        const src = parent.tensors.find((p) => p.name === t.name)!
        const f32 = new Float32Array(new Uint8Array(tensorBytes(src)).buffer)
        const want = tensorBytes(t)
        const got = Buffer.alloc(f32.length * 2)
        for (let i = 0; i < f32.length; i++) got.writeUInt16LE(convert(f32[i]!), 2 * i)
        assert.ok(got.equals(want), `${t.name} differs`)
        converted++
      }
      assert.ok(converted >= 20, `only ${converted} tensors compared`)
    },
  )
}

test('F16 edge cases: rounding ties to even, subnormals, overflow, NaN (IEEE 754 binary16)', () => {
  assert.equal(f32ToF16Bits(1), 0x3c00)
  assert.equal(f32ToF16Bits(-2), 0xc000)
  assert.equal(f32ToF16Bits(65504), 0x7bff) // largest finite half
  assert.equal(f32ToF16Bits(65520), 0x7c00) // rounds up to infinity
  assert.equal(f32ToF16Bits(2 ** -24), 0x0001) // smallest subnormal
  assert.equal(f32ToF16Bits(2 ** -25), 0x0000) // halfway to zero: ties to even
  assert.equal(f32ToF16Bits(3 * 2 ** -25), 0x0002) // 1.5 ulp: ties to even (up)
  assert.equal(f32ToF16Bits(1 + 2 ** -11), 0x3c00) // halfway between 1 and next: even
  assert.equal(f32ToF16Bits(1 + 3 * 2 ** -11), 0x3c02)
  assert.equal(f32ToF16Bits(-0), 0x8000)
  assert.equal(f32ToF16Bits(Infinity), 0x7c00)
  assert.ok((f32ToF16Bits(NaN) & 0x7c00) === 0x7c00 && (f32ToF16Bits(NaN) & 0x3ff) !== 0)
  for (let h = 0; h < 0x10000; h++) {
    const x = f16BitsToF32(h)
    if (!Number.isNaN(x)) assert.equal(f32ToF16Bits(x), h, `half 0x${h.toString(16)} does not round-trip`)
  }
})

test('BF16 round-trips every non-NaN pattern', () => {
  for (let h = 0; h < 0x10000; h++) {
    const x = bf16BitsToF32(h)
    if (!Number.isNaN(x)) assert.equal(f32ToBf16Bits(x), h)
  }
})
