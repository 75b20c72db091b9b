/**
 * The engine's weight-type table and kernels (native/src/quant). What is checked, and against what:
 *  - the native table agrees with src/lib/gguf/types.ts (ids, names, block sizes, bytes per block),
 *    and with ggml's choice of activation type per weight type (ggml-cpu's type_traits vec_dot_type);
 *  - every SIMD variant this CPU runs equals its scalar reference BITWISE, for vec_dot and for the
 *    activation quantizers, on seeded random data with edge values, for every tail length and at
 *    many byte alignments (the contract of docs/kernels.md);
 *  - the F16/BF16 conversions agree with src/lib/util/half.ts (written from ggml's and F16C's rules)
 *    and round-trip exactly;
 *  - the scalar vec_dot itself is right: it matches a float64 dot of the dequantized rows within
 *    a bound derived from its float32 accumulation (and, for Q4_1/Q5_1, from s being a half).
 * Byte identity of the weight quantizers with llama.cpp is quant-fixtures.test.ts.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'

import {cpuFeatures} from '../../src/lib/engine/addon.js'
import {
  KERNEL_VARIANTS,
  type KernelTypeTraits,
  type KernelVariant,
  quantizeRef,
  rowBytes,
  toFloat,
  typeTraits,
} from '../../src/lib/engine/kernels.js'
import {fromFloat, loadTestAddon, vecDot, vecDot2, vecDotTile} from '../../src/lib/engine/test-addon.js'
import {GGML_TYPES} from '../../src/lib/gguf/index.js'
import {bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits} from '../../src/lib/util/half.js'
import {SeededRandom} from '../../src/lib/util/random.js'

const traits = typeTraits()
const byName = new Map(traits.map((t) => [t.name, t]))
const T = (name: string): KernelTypeTraits => {
  const t = byName.get(name)
  assert.ok(t, `the engine implements ${name}`)
  return t
}

/** ggml-cpu's type_traits_cpu[...].vec_dot_type for each weight type (Q8_1 as a weight: its own). */
const GGML_VEC_DOT_TYPE: Record<string, string> = {
  F32: 'F32',
  // Not ggml's F16 (ggml_type_traits says F16): llama.cpp's F16 matmuls run on F32 activations in
  // practice (reference llama-f16.json: quantized_vs_dequantized is exactly 0), and we follow that.
  F16: 'F32',
  BF16: 'BF16',
  Q4_0: 'Q8_0',
  Q5_0: 'Q8_0',
  Q8_0: 'Q8_0',
  Q4_1: 'Q8_1',
  Q5_1: 'Q8_1',
  Q8_1: 'Q8_1',
  Q2_K: 'Q8_K',
  Q3_K: 'Q8_K',
  Q4_K: 'Q8_K',
  Q5_K: 'Q8_K',
  Q6_K: 'Q8_K',
  IQ4_NL: 'Q8_0',
  MXFP4: 'Q8_0',
}
/** Types with their own kernel tests (K-quants, IQ4_NL, MXFP4: test/native/kquant.test.ts). */
const K_WEIGHT_TYPES = ['Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'MXFP4']
const WEIGHT_TYPES = ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_1']
const ACTIVATION_TYPES = ['F16', 'BF16', 'Q8_0', 'Q8_1']

/** Variants other than scalar that this build has and this CPU runs. */
const simd = (vs: readonly KernelVariant[]) => vs.filter((v) => v !== 'scalar')

// ---- data --------------------------------------------------------------------------------------

const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)
const fromBits = (b: number) => {
  u32[0] = b >>> 0
  return f32[0]!
}

/** Floats with the edge cases the kernels must agree on, one "style" per block of 32. */
function edgyFloats(rng: SeededRandom, n: number, withNonFinite = false): Float32Array {
  const out = new Float32Array(n)
  for (let b = 0; b < n; b += 32) {
    const style = rng.nextU32() % (withNonFinite ? 14 : 12)
    const scale = [1, 1e-3, 1e3, 1e-30, 3e30, 1e-40][rng.nextU32() % 6]!
    const constant = (rng.uniform() - 0.5) * 8
    for (let i = b; i < Math.min(n, b + 32); i++) {
      let v: number
      switch (style) {
        case 0:
          v = 0
          break // all zero
        case 1:
          v = constant
          break // all equal
        case 2:
          v = i % 3 === 0 ? -0 : 0
          break // signed zeros
        case 3:
          v = fromBits(rng.nextU32() & 0x807fffff)
          break // subnormals of both signs
        case 4:
          v = (rng.uniform() - 0.5) * 2 * 3.4e38
          break // near the float range
        case 5:
          v = i === b ? 127 : ((rng.nextU32() % 255) - 127) / 2
          break // exact .5 ties after scaling
        case 6:
          v = rng.normal() * 65504 * (rng.uniform() < 0.5 ? 1 : 1.0005)
          break // around the half range
        case 7:
          v = rng.uniform() < 0.9 ? rng.normal() * 1e-3 : rng.normal() * 50
          break // outliers
        case 8:
          v = fromBits(rng.nextU32())
          if (!Number.isFinite(v)) v = 1
          break // any finite bit pattern
        case 9:
          v = (rng.nextU32() % 2 ? 1 : -1) * 2 ** -24 * (rng.nextU32() % 2048)
          break // half subnormals
        case 12:
          v = rng.uniform() < 0.2 ? (rng.uniform() < 0.5 ? Infinity : -Infinity) : rng.normal()
          break
        case 13:
          v = rng.uniform() < 0.2 ? fromBits(0x7f800001 + (rng.nextU32() % 0x7fffff)) * (rng.uniform() < 0.5 ? 1 : -1) : rng.normal()
          break
        default:
          v = rng.normal() * scale
      }
      out[i] = v
    }
  }
  return out
}

/** Random half bits that are finite: mostly ordinary scales, some zero, -0, subnormal and huge. */
function randomHalf(rng: SeededRandom): number {
  const r = rng.nextU32() % 16
  if (r === 0) return 0
  if (r === 1) return 0x8000
  if (r === 2) return rng.nextU32() & 0x83ff // subnormal
  if (r === 3) return 0x7800 | (rng.nextU32() & 0x83ff) // 2^15 .. 65504
  return f32ToF16Bits((rng.uniform() - 0.5) * 0.1)
}

/** Random bytes of `type` whose scales are finite halves (the quants are any bytes at all). */
function randomBlocks(rng: SeededRandom, type: KernelTypeTraits, n: number): Uint8Array {
  const out = new Uint8Array(rowBytes(type, n))
  for (let i = 0; i < out.length; i++) out[i] = rng.nextU32() & 0xff
  if (type.blockSize === 1) {
    // F32/F16/BF16: keep values finite so that no NaN arises (NaN payloads are not compared).
    const vals = edgyFloats(rng, n)
    if (type.name === 'F32') out.set(new Uint8Array(vals.buffer))
    for (let i = 0; i < n && type.name !== 'F32'; i++) {
      const h = type.name === 'F16' ? f32ToF16Bits(vals[i]!) : f32ToBf16Bits(vals[i]!)
      const fin = type.name === 'F16' ? (h & 0x7c00) !== 0x7c00 : (h & 0x7f80) !== 0x7f80
      const v = fin ? h : 0x3c00
      out[2 * i] = v & 0xff
      out[2 * i + 1] = v >> 8
    }
    return out
  }
  const halves = type.name === 'Q4_1' || type.name === 'Q5_1' || type.name === 'Q8_1' ? 2 : 1
  for (let b = 0; b < n / 32; b++) {
    for (let h = 0; h < halves; h++) {
      const v = randomHalf(rng)
      out[b * type.typeSize + 2 * h] = v & 0xff
      out[b * type.typeSize + 2 * h + 1] = v >> 8
    }
  }
  return out
}

/** `bytes` copied `offset` bytes into a fresh buffer (to run kernels at every alignment). */
function at(bytes: Uint8Array, offset: number): Uint8Array {
  const buf = new Uint8Array(bytes.length + offset)
  buf.set(bytes, offset)
  return buf.subarray(offset)
}

/** A weight row and an activation row for vec_dot: half from the quantizers, half random bytes. */
function dotInputs(rng: SeededRandom, t: KernelTypeTraits, n: number, k: number): {x: Uint8Array; y: Uint8Array} {
  const act = traits.find((a) => a.type === t.vecDotType)!
  if (k % 2 === 0) {
    const x = t.name === 'F32' ? new Uint8Array(edgyFloats(rng, n).buffer) : quantizeRef(t.name, edgyFloats(rng, n))
    const yf = edgyFloats(rng, n)
    const y = act.name === 'F32' ? new Uint8Array(yf.buffer) : fromFloat(act.name, yf, 'scalar')
    return {x, y}
  }
  return {x: randomBlocks(rng, t, n), y: randomBlocks(rng, act, n)}
}

const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))

// ---- the table -----------------------------------------------------------------------------------

describe('typeTraits(): the native type table', () => {
  it('implements exactly the documented types, in id order', () => {
    assert.deepEqual(
      traits.map((t) => t.name),
      [
        'F32',
        'F16',
        'Q4_0',
        'Q4_1',
        'Q5_0',
        'Q5_1',
        'Q8_0',
        'Q8_1',
        'Q2_K',
        'Q3_K',
        'Q4_K',
        'Q5_K',
        'Q6_K',
        'Q8_K',
        'IQ4_NL',
        'BF16',
        'MXFP4',
      ],
    )
  })

  it('agrees with src/lib/gguf/types.ts on id, name, block size and bytes per block', () => {
    for (const t of traits) {
      const g = GGML_TYPES.get(t.type)
      assert.ok(g, `types.ts knows type ${t.type}`)
      assert.deepEqual(
        {id: t.type, name: t.name, blockSize: t.blockSize, bytesPerBlock: t.typeSize},
        {id: g.id, name: g.name, blockSize: g.blockSize, bytesPerBlock: g.bytesPerBlock},
      )
    }
  })

  it("dots each weight type against ggml's activation type", () => {
    for (const name of [...WEIGHT_TYPES, ...K_WEIGHT_TYPES])
      assert.equal(traits.find((t) => t.type === T(name).vecDotType)?.name, GGML_VEC_DOT_TYPE[name], name)
  })

  it('lists variants slowest first, always has the scalar reference, and picks the fastest', () => {
    for (const t of traits) {
      for (const [list, picked] of [
        [t.variants, t.pickedVecDot],
        [t.fromFloatVariants, t.pickedFromFloat],
      ] as const) {
        assert.deepEqual(
          [...list],
          KERNEL_VARIANTS.filter((v) => list.includes(v)),
          `${t.name} order`,
        )
        if (list.length > 0) {
          assert.equal(list[0], 'scalar', `${t.name} has a scalar reference`)
          assert.equal(picked, list[list.length - 1], `${t.name} picks the fastest`)
        } else {
          assert.equal(picked, null)
        }
      }
      assert.ok(t.variants.length > 0, `${t.name} has a vec_dot`)
      assert.equal(t.hasQuantizeRef, true, `${t.name} has a weight quantizer`)
    }
    for (const name of [...ACTIVATION_TYPES, 'Q8_K']) assert.ok(T(name).fromFloatVariants.length > 0, `${name} has an activation quantizer`)
  })

  it('offers the SIMD variants the CPU supports (x86-64 with AVX2 / AVX-512 VNNI)', {skip: process.arch !== 'x64'}, () => {
    const cpu = cpuFeatures()
    const avx2 = cpu.avx2 && cpu.fma && cpu.f16c
    const avx512 = avx2 && cpu.avx512f && cpu.avx512bw && cpu.avx512vl
    // Q8_K is only an activation type here: its dot (Q8_K as a weight, which ggml never stores) is scalar only.
    for (const t of traits.filter((x) => x.name !== 'Q8_K')) {
      assert.equal(t.variants.includes('avx2'), avx2, `${t.name} avx2`)
      const needsVnni = t.blockSize > 1
      assert.equal(t.variants.includes('avx512'), avx512 && (!needsVnni || cpu.avx512_vnni), `${t.name} avx512`)
    }
  })

  it('refuses bad arguments by name instead of reading out of bounds', () => {
    const q = new Uint8Array(18)
    const y = new Uint8Array(34)
    assert.throws(() => vecDot('Q4_0', 32, q, new Uint8Array(33), 'scalar'), /y has 33 bytes; 32 values of Q8_0 take 34/)
    assert.throws(() => vecDot('Q4_0', 64, q, y, 'scalar'), /x has 18 bytes; 64 values of Q4_0 take 36/)
    assert.throws(() => vecDot('Q4_0', 31, q, y, 'scalar'), /n = 31 is not a multiple of Q4_0's block size 32/)
    assert.throws(() => vecDot('Q4_0', 32, q, y, 'neon' as KernelVariant), /variant 'neon' is not one of/)
    assert.throws(() => toFloat('Q8_0', new Uint8Array(10), 32), /bytes has 10 bytes/)
    assert.throws(() => quantizeRef('Q4_0', new Float32Array(33)), /x.length = 33 is not a multiple/)
    assert.throws(() => quantizeRef('IQ2_XXS', new Float32Array(256)), /not a type the engine implements|does not implement/)
    assert.throws(() => fromFloat('Q4_0', new Float32Array(32), 'scalar'), /Q4_0 has no from_float/)
    assert.throws(() => fromFloat('Q8_0', new Float32Array(32), 'scalar', 64), /dstOffset must be 0..63/)
    assert.throws(() => vecDot2('Q4_0', 32, new Uint8Array(35), y, 'scalar'), /Q4_0 has no vec_dot2 of that variant/)
  })
})

// ---- SIMD == scalar ------------------------------------------------------------------------------

/** Block counts: every tail of a 16-block group (the AVX-512 grouping) and of an 8-block one, twice over. */
const BLOCK_COUNTS = [...Array.from({length: 40}, (_, i) => i + 1), 128, 344]
const FLOAT_COUNTS = [...Array.from({length: 300}, (_, i) => i + 1), 4096, 11008]
// every tail of a 64-lane step (odd counts split a BF16 word), two whole steps plus tails, long rows
const TILE_FLOAT_COUNTS = [...Array.from({length: 130}, (_, i) => i + 1), 191, 255, 4096, 5632 + 33]

describe('vec_dot: every SIMD variant equals the scalar reference bitwise', () => {
  for (const name of WEIGHT_TYPES) {
    const t = T(name)
    for (const variant of simd(t.variants)) {
      it(`${name} x ${traits.find((a) => a.type === t.vecDotType)!.name}: ${variant}`, () => {
        const rng = new SeededRandom(0x5eed0000n + BigInt(t.type))
        const counts = t.blockSize === 1 ? FLOAT_COUNTS : BLOCK_COUNTS.map((b) => b * 32)
        let k = 0
        for (const n of counts) {
          const {x, y} = dotInputs(rng, t, n, k)
          const xo = at(x, (k * 7) % 64)
          const yo = at(y, (k * 13 + 5) % 64)
          const want = vecDot(name, n, x, y, 'scalar')
          const got = vecDot(name, n, xo, yo, variant)
          if (!same(got, want))
            assert.fail(`n = ${n} (case ${k}, offsets ${xo.byteOffset}/${yo.byteOffset}): ${variant} ${got} != scalar ${want}`)
          k++
        }
        // One row at all 64 byte offsets of both operands.
        const n = t.blockSize === 1 ? 77 : 5 * 32
        const {x, y} = dotInputs(rng, t, n, 1)
        const want = vecDot(name, n, x, y, 'scalar')
        for (let o = 0; o < 64; o++) {
          const got = vecDot(name, n, at(x, o), at(y, 63 - o), variant)
          if (!same(got, want)) assert.fail(`offset ${o}: ${variant} ${got} != scalar ${want}`)
        }
      })
    }
  }
})

describe('vec_dot2 (two rows per call): each result equals the scalar vec_dot of its row bitwise', () => {
  it('exists for the AVX-512 Q4_x and Q8_x kernels (where sharing the activation work pays)', {skip: process.arch !== 'x64'}, () => {
    for (const t of traits) {
      const pays = ['Q4_0', 'Q4_1', 'Q8_0', 'Q8_1'].includes(t.name)
      const want = pays && t.variants.includes('avx512') ? ['avx512'] : []
      assert.deepEqual([...t.vecDot2Variants], want, t.name)
    }
  })

  for (const name of WEIGHT_TYPES) {
    const t = T(name)
    for (const variant of t.vecDot2Variants) {
      it(`${name}: ${variant}`, () => {
        const rng = new SeededRandom(0x2e0000n + BigInt(t.type))
        let k = 0
        for (const n of BLOCK_COUNTS.map((b) => b * 32)) {
          const row = rowBytes(t, n)
          const gap = k % 3 === 0 ? 0 : (k * 5) % 41 // rows back to back, or bx > row
          const a = dotInputs(rng, t, n, k)
          const b = dotInputs(rng, t, n, k + 1)
          const x = new Uint8Array(2 * row + gap)
          x.set(a.x, 0)
          x.set(b.x, row + gap)
          const want = [vecDot(name, n, a.x, a.y, 'scalar'), vecDot(name, n, b.x, a.y, 'scalar')]
          const got = vecDot2(name, n, at(x, (k * 7) % 64), at(a.y, (k * 3) % 64), variant, row + gap)
          for (let r = 0; r < 2; r++)
            if (!same(got[r]!, want[r]!)) assert.fail(`n = ${n} (case ${k}) row ${r}: ${variant} ${got[r]} != scalar ${want[r]}`)
          k++
        }
      })
    }
  }
})

describe('vec_dot_tile (a register tile of weight rows by activation rows): each result equals the scalar vec_dot bitwise', () => {
  // The shapes the engine's prompt path relies on: a tile that vanished would silently fall back to
  // the one-row kernel, and a changed shape changes how forward.c walks the rows.
  const SHAPES: Record<string, string> = {
    Q4_0: '1x8',
    Q8_0: '1x8',
    Q4_K: '1x8',
    Q5_K: '1x8',
    Q6_K: '1x8',
    F32: '2x3',
    F16: '2x3',
    BF16: '2x3',
  }
  it(
    'exists for the AVX-512 Q4_0, Q8_0, Q4_K, Q5_K, Q6_K (1 x 8) and F32, F16, BF16 (2 x 3) kernels only',
    {skip: process.arch !== 'x64'},
    () => {
      for (const t of traits) {
        const want = SHAPES[t.name] && t.variants.includes('avx512') ? [`avx512:${SHAPES[t.name]}`] : []
        assert.deepEqual(
          t.vecDotTiles.map((s) => `${s.variant}:${s.rows}x${s.cols}`),
          want,
          t.name,
        )
      }
    },
  )

  for (const t of traits) {
    for (const tile of t.vecDotTiles) {
      it(`${t.name}: ${tile.variant} ${tile.rows} x ${tile.cols}`, () => {
        const rng = new SeededRandom(0x2e2e0000n + BigInt(t.type))
        // every tail of the kernels' block groups (16 blocks of 32, 8 super-blocks of 256, 64 float lanes), and long rows
        const counts =
          t.blockSize === 256
            ? [...Array.from({length: 18}, (_, i) => i + 1), 43, 86]
            : t.blockSize === 1
              ? TILE_FLOAT_COUNTS
              : BLOCK_COUNTS
        let k = 0
        for (const blocks of counts) {
          const n = blocks * t.blockSize
          const xs = Array.from({length: tile.rows}, (_, r) => dotInputs(rng, t, n, k + r).x)
          const ys = Array.from({length: tile.cols}, (_, c) => dotInputs(rng, t, n, k + c).y)
          const x = concat(xs)
          const y = concat(ys)
          const got = vecDotTile(t.name, n, at(x, (k * 7) % 64), at(y, (k * 3) % 64), tile.variant)
          assert.equal(got.length, tile.rows * tile.cols)
          for (let c = 0; c < tile.cols; c++) {
            for (let r = 0; r < tile.rows; r++) {
              const want = vecDot(t.name, n, xs[r]!, ys[c]!, 'scalar')
              const g = got[tile.rows * c + r]!
              if (!same(g, want)) assert.fail(`n = ${n} (case ${k}) row ${r} x activation ${c}: ${tile.variant} ${g} != scalar ${want}`)
            }
          }
          k++
        }
      })
    }
  }
})

describe('vec_dot_tile_few (the tile on fewer activation rows: decode groups, prompt tails): each result equals the scalar vec_dot bitwise', () => {
  for (const t of traits.filter((x) => ['Q4_0', 'Q8_0', 'F32', 'F16', 'BF16'].includes(x.name))) {
    for (const tile of t.vecDotTiles) {
      it(`${t.name}: ${tile.variant} on 1 to ${tile.cols - 1} activation rows`, () => {
        const rng = new SeededRandom(0x2e2f0000n + BigInt(t.type))
        let k = 0
        for (const blocks of t.blockSize === 1 ? TILE_FLOAT_COUNTS : BLOCK_COUNTS) {
          const n = blocks * t.blockSize
          for (let cols = 1; cols < tile.cols; cols++) {
            const xs = Array.from({length: tile.rows}, (_, r) => dotInputs(rng, t, n, k + r).x)
            const ys = Array.from({length: cols}, (_, c) => dotInputs(rng, t, n, k + c).y)
            const got = vecDotTile(t.name, n, at(concat(xs), (k * 7) % 64), at(concat(ys), (k * 3) % 64), tile.variant, cols)
            assert.equal(got.length, tile.rows * cols)
            for (let c = 0; c < cols; c++)
              for (let r = 0; r < tile.rows; r++) {
                const want = vecDot(t.name, n, xs[r]!, ys[c]!, 'scalar')
                if (!same(got[tile.rows * c + r]!, want))
                  assert.fail(`n = ${n}, ${cols} rows: row ${r} x activation ${c} ${got[tile.rows * c + r]} != scalar ${want}`)
              }
            k++
          }
        }
      })
    }
  }
})

describe('decode kernels on a packed activation (vec_dot_mv, vec_dot2_mv): each result equals the scalar vec_dot bitwise', () => {
  const raw = loadTestAddon()
  it('exist for the AVX-512 Q4_0 kernels', {skip: process.arch !== 'x64' || !T('Q4_0').variants.includes('avx512')}, () => {
    const x = new Uint8Array(2 * 18),
      y = new Uint8Array(34)
    assert.equal(raw.kernelVecDotMv('Q4_0', 'avx512', 32, x, y).length, 3)
    assert.throws(() => raw.kernelVecDotMv('Q8_0', 'avx512', 32, new Uint8Array(68), y), /no packed decode kernels/)
  })
  it('Q4_0: avx512', {skip: process.arch !== 'x64' || !T('Q4_0').variants.includes('avx512')}, () => {
    const t = T('Q4_0')
    const rng = new SeededRandom(0x3e3e0000n)
    let k = 0
    for (const blocks of BLOCK_COUNTS) {
      const n = blocks * 32
      const a = dotInputs(rng, t, n, k)
      const b = dotInputs(rng, t, n, k + 1)
      const got = raw.kernelVecDotMv('Q4_0', 'avx512', n, at(concat([a.x, b.x]), (k * 7) % 64), at(a.y, (k * 3) % 64))
      const want = [vecDot('Q4_0', n, a.x, a.y, 'scalar'), vecDot('Q4_0', n, b.x, a.y, 'scalar'), vecDot('Q4_0', n, a.x, a.y, 'scalar')]
      for (let i = 0; i < 3; i++)
        if (!same(got[i]!, want[i]!)) assert.fail(`n = ${n} (case ${k}) result ${i}: ${got[i]} != scalar ${want[i]}`)
      k++
    }
  })
  it(
    "Q4_0 avx512 on 1 to 4 activations at once (vec_dot_mvn, a decode group's step)",
    {skip: process.arch !== 'x64' || !T('Q4_0').variants.includes('avx512')},
    () => {
      const t = T('Q4_0')
      const rng = new SeededRandom(0x3e3f0000n)
      assert.throws(() => raw.kernelVecDotMvn('Q8_0', 'avx512', 32, new Uint8Array(34), new Uint8Array(34)), /no few-token decode kernel/)
      let k = 0
      for (const blocks of BLOCK_COUNTS)
        for (let nc = 1; nc <= 4; nc++) {
          const n = blocks * 32
          const x = dotInputs(rng, t, n, k).x
          const ys = Array.from({length: nc}, (_, c) => dotInputs(rng, t, n, k + c + 1).y)
          const got = raw.kernelVecDotMvn('Q4_0', 'avx512', n, at(x, (k * 7) % 64), at(concat(ys), (k * 3) % 64))
          assert.equal(got.length, nc)
          for (let c = 0; c < nc; c++) {
            const want = vecDot('Q4_0', n, x, ys[c]!, 'scalar')
            if (!same(got[c]!, want)) assert.fail(`n = ${n}, ${nc} activations: activation ${c} ${got[c]} != scalar ${want}`)
          }
          k++
        }
    },
  )
})

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0))
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}

describe('from_float (activation quantizers): every SIMD variant equals the scalar reference bitwise', () => {
  for (const name of ACTIVATION_TYPES) {
    const t = T(name)
    for (const variant of simd(t.fromFloatVariants)) {
      it(`${name}: ${variant}`, () => {
        const rng = new SeededRandom(0xf00d0000n + BigInt(t.type))
        const counts = t.blockSize === 1 ? FLOAT_COUNTS : BLOCK_COUNTS.map((b) => b * 32)
        let k = 0
        for (const n of counts) {
          // Non-finite inputs too: the variants must agree even on what they make of NaN and inf.
          const src = edgyFloats(rng, n + 16, true)
          const x = src.subarray(k % 16, (k % 16) + n) // every 4-byte alignment of the source
          const want = fromFloat(name, x, 'scalar')
          const got = fromFloat(name, x, variant, (k * 11) % 64)
          const diff = got.findIndex((b, i) => b !== want[i])
          if (diff >= 0 || got.length !== want.length)
            assert.fail(`n = ${n} (case ${k}): byte ${diff} differs: ${variant} ${got[diff]} scalar ${want[diff]}`)
          k++
        }
      })
    }
  }
})

// ---- conversions ---------------------------------------------------------------------------------

describe('F16 and BF16 conversions', () => {
  const rng = new SeededRandom(0xc0ffeen)
  const samples = new Float32Array(1 << 16)
  for (let i = 0; i < samples.length; i++) {
    // Bit patterns spread over every exponent, plus the rounding boundaries of both formats.
    const r = rng.nextU32()
    samples[i] =
      i % 4 === 0
        ? fromBits(r)
        : i % 4 === 1
          ? fromBits((r & 0x8000_0000) | ((r % 0x2000) + 0x33000000 + (rng.nextU32() % 0x15000000)))
          : i % 4 === 2
            ? fromBits((r & ~0x1fff) | 0x1000)
            : fromBits((r & ~0xffff) | 0x8000)
  }

  it('fp32 -> fp16 agrees with src/lib/util/half.ts (ties to even, subnormals, overflow, NaN as F16C)', () => {
    const got = new Uint16Array(quantizeRef('F16', samples).slice().buffer)
    for (let i = 0; i < samples.length; i++)
      if (got[i] !== f32ToF16Bits(samples[i]!))
        assert.fail(
          `${samples[i]} (0x${(new Uint32Array(samples.buffer)[i]! >>> 0).toString(16)}): native 0x${got[i]!.toString(16)}, half.ts 0x${f32ToF16Bits(samples[i]!).toString(16)}`,
        )
  })

  it('fp32 -> bf16 agrees with src/lib/util/half.ts (ggml_compute_fp32_to_bf16)', () => {
    const got = new Uint16Array(quantizeRef('BF16', samples).slice().buffer)
    for (let i = 0; i < samples.length; i++)
      if (got[i] !== f32ToBf16Bits(samples[i]!))
        assert.fail(`${samples[i]}: native 0x${got[i]!.toString(16)}, half.ts 0x${f32ToBf16Bits(samples[i]!).toString(16)}`)
  })

  for (const [name, toF32, isNaN, quiet] of [
    ['F16', f16BitsToF32, (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0, 0x200],
    ['BF16', bf16BitsToF32, (h: number) => (h & 0x7f80) === 0x7f80 && (h & 0x7f) !== 0, 0x40],
  ] as const) {
    it(`${name}: all 65536 bit patterns dequantize exactly and convert back to themselves (NaN made quiet)`, () => {
      const all = new Uint16Array(65536).map((_, i) => i)
      const floats = toFloat(name, new Uint8Array(all.buffer), 65536)
      const back = new Uint16Array(quantizeRef(name, floats).slice().buffer)
      for (let h = 0; h < 65536; h++) {
        if (isNaN(h)) {
          assert.ok(Number.isNaN(floats[h]), `0x${h.toString(16)} is NaN`)
          assert.equal(back[h], h | quiet, `NaN 0x${h.toString(16)} comes back quiet with its payload`)
        } else {
          assert.ok(Object.is(floats[h], toF32(h)), `0x${h.toString(16)}: ${floats[h]} vs ${toF32(h)}`)
          assert.equal(back[h], h, `0x${h.toString(16)} round trip`)
        }
      }
    })
  }
})

// ---- the scalar reference is a dot product -------------------------------------------------------

/** Sum over blocks of |m_x * (s_y - d_y * sum(q_y))|: what storing s as a half costs the _1 types. */
function sRoundingBound(x: Uint8Array, xt: KernelTypeTraits, y: Uint8Array, n: number): number {
  if (xt.name !== 'Q4_1' && xt.name !== 'Q5_1') return 0
  let bound = 0
  for (let b = 0; b < n / 32; b++) {
    const m = f16BitsToF32(x[b * xt.typeSize + 2]! | (x[b * xt.typeSize + 3]! << 8))
    const yb = y.subarray(b * 36, (b + 1) * 36)
    const d = f16BitsToF32(yb[0]! | (yb[1]! << 8))
    const s = f16BitsToF32(yb[2]! | (yb[3]! << 8))
    let sum = 0
    for (let j = 0; j < 32; j++) sum += (yb[4 + j]! << 24) >> 24
    bound += Math.abs(m * (s - d * sum))
  }
  return bound
}

describe('vec_dot scalar reference vs a float64 dot of the dequantized rows', () => {
  for (const name of WEIGHT_TYPES) {
    const t = T(name)
    const act = traits.find((a) => a.type === t.vecDotType)!
    it(`${name} x ${act.name}`, () => {
      const rng = new SeededRandom(0xd07n + BigInt(t.type))
      for (const n of [32, 96, 64 * 32, 4096, 11008]) {
        const w = new Float32Array(n).map(() => rng.normal())
        const a = new Float32Array(n).map(() => rng.normal() * 2)
        const x = name === 'F32' ? new Uint8Array(w.buffer) : quantizeRef(name, w)
        const y = act.name === 'F32' ? new Uint8Array(a.buffer) : fromFloat(act.name, a, 'scalar')
        const xd = toFloat(name, x, n)
        const yd = toFloat(act.name, y, n)
        // For Q4_1/Q5_1 the kernel adds d*q*y and m*s separately, so their sizes count, not their sum's.
        const minOf = (i: number) =>
          name.endsWith('_1') && name !== 'Q8_1'
            ? Math.abs(f16BitsToF32(x[Math.floor(i / 32) * t.typeSize + 2]! | (x[Math.floor(i / 32) * t.typeSize + 3]! << 8)))
            : 0
        let exact = 0
        let magnitude = 0
        for (let i = 0; i < n; i++) {
          exact += xd[i]! * yd[i]!
          magnitude += (Math.abs(xd[i]!) + 2 * minOf(i)) * Math.abs(yd[i]!)
        }
        // Float32 accumulation: each lane is a chain of n/lanes FMAs, then a tree of depth log2(lanes).
        const lanes = t.blockSize === 1 ? 64 : 16
        const chain = Math.ceil(n / t.blockSize / lanes) * (name.endsWith('_1') ? 2 : 1) + Math.log2(lanes) + 1
        const bound = chain * 2 ** -24 * magnitude * 1.01 + sRoundingBound(x, t, y, n)
        const got = vecDot(name, n, x, y, 'scalar')
        assert.ok(Math.abs(got - exact) <= bound, `n = ${n}: scalar ${got}, float64 ${exact}, |diff| ${Math.abs(got - exact)} > ${bound}`)
      }
    })
  }
})

describe('F16 x F16 (attention against an F16 KV cache): every SIMD variant equals the scalar reference bitwise', () => {
  const raw = loadTestAddon()
  for (const variant of simd(T('F16').variants)) {
    it(variant, () => {
      const rng = new SeededRandom(0xf16f16n)
      for (const n of FLOAT_COUNTS) {
        const x = quantizeRef('F16', edgyFloats(rng, n))
        const y = quantizeRef('F16', edgyFloats(rng, n))
        const want = raw.kernelVecDot('F16xF16', 'scalar', n, x, y)
        const got = raw.kernelVecDot('F16xF16', variant, n, at(x, n % 64), at(y, (n * 3) % 64))
        if (!same(got, want)) assert.fail(`n = ${n}: ${variant} ${got} != scalar ${want}`)
      }
    })
  }
})

describe('round_f16 (the attention query for an F16 cache)', () => {
  const raw = loadTestAddon()
  it('scalar: the float of the half nearest x * a, by the TypeScript conversions', () => {
    const rng = new SeededRandom(0xf16f16n)
    const x = edgyFloats(rng, 4096)
    for (const a of [1, 0.37, 1e-3, 70000]) {
      const got = raw.kernelRoundF16('scalar', a, x)
      for (let i = 0; i < x.length; i++) {
        const want = f16BitsToF32(f32ToF16Bits(Math.fround(x[i]! * Math.fround(a))))
        if (!same(got[i]!, want) && !(Number.isNaN(got[i]!) && Number.isNaN(want)))
          assert.fail(`a = ${a}, x = ${x[i]}: ${got[i]} != ${want}`)
      }
    }
  })
  for (const variant of simd(T('F16').variants).filter((v) => v === 'avx2')) {
    it(`${variant} equals scalar bitwise`, () => {
      const rng = new SeededRandom(0xf16f17n)
      for (const n of FLOAT_COUNTS) {
        const x = edgyFloats(rng, n)
        const a = rng.normal()
        const want = raw.kernelRoundF16('scalar', a, x)
        const got = raw.kernelRoundF16(variant, a, x)
        assert.ok(Buffer.from(got.buffer).equals(Buffer.from(want.buffer)), `n = ${n}`)
      }
    })
  }
})

describe('F16 x F32 of a rounded query equals F16 x F16 (what the attention relies on)', () => {
  const raw = loadTestAddon()
  for (const variant of T('F16').variants) {
    it(variant, () => {
      const rng = new SeededRandom(0xf1632n)
      for (const n of [...Array.from({length: 80}, (_, i) => i + 1), 96, 128, 256]) {
        const k = quantizeRef('F16', edgyFloats(rng, n))
        const q16 = quantizeRef('F16', edgyFloats(rng, n))
        const qf = toFloat('F16', q16, n)
        const want = raw.kernelVecDot('F16xF16', variant, n, k, q16)
        const got = raw.kernelVecDot('F16', variant, n, k, new Uint8Array(qf.buffer))
        if (!same(got, want)) assert.fail(`n = ${n}: F16 x F32 ${got} != F16 x F16 ${want}`)
      }
    })
  }
})
