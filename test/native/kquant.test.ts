/**
 * The K-quant family (native/src/quant/kquant.h) against llama.cpp itself and against its own scalar
 * references:
 *  - byte identity of our weight quantizers (quantizeRef) with ggml_quantize_chunk (no imatrix), and
 *    of our Q8_K activation quantizer with ggml's quantize_row_q8_K_ref (what ggml-cpu runs on x86),
 *    on many rows of several distributions (normal, zeros, constants, outliers, tiny, huge, ties);
 *  - our dequantizers equal ggml's dequantize_row_* bit for bit, on quantizer output and on random
 *    block bytes;
 *  - the scalar dot equals a float64 dot of ggml's dequantized rows within its float32 error bound;
 *  - every SIMD variant equals the scalar reference bitwise, for every super-block count 1..40 and
 *    more, at every byte offset of both operands, on quantizer output and on random bytes.
 * ggml runs through test/native/ggml-ref/ggml_quantize_ref.c, compiled here with `cc` against
 * node-llama-cpp's libggml-base.so; those tests skip (saying why) when either is missing.
 */
import assert from 'node:assert/strict'
import {execFileSync, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {after, describe, it} from 'node:test'
import {fileURLToPath} from 'node:url'

import {type KernelTypeTraits, quantizeRef, rowBytes, toFloat, typeTraits} from '../../src/lib/engine/kernels.js'
import {fromFloat, vecDot} from '../../src/lib/engine/test-addon.js'
import {f32ToF16Bits} from '../../src/lib/util/half.js'
import {SeededRandom} from '../../src/lib/util/random.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')
const GGML_LIB_DIR = join(root, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64')

/** The K-quant weight types the engine implements, with ggml's dequantizer symbol. */
export const K_TYPES: readonly {name: string; dequant: string}[] = [
  {name: 'Q2_K', dequant: 'dequantize_row_q2_K'},
  {name: 'Q3_K', dequant: 'dequantize_row_q3_K'},
  {name: 'Q4_K', dequant: 'dequantize_row_q4_K'},
  {name: 'Q5_K', dequant: 'dequantize_row_q5_K'},
  {name: 'Q6_K', dequant: 'dequantize_row_q6_K'},
]

const traits = typeTraits()
const T = (name: string): KernelTypeTraits => {
  const t = traits.find((x) => x.name === name)
  assert.ok(t, `the engine implements ${name}`)
  return t
}

// ---- the ggml harness ----------------------------------------------------------------------------

function buildHarness(): {exe?: string; why?: string; dir?: string} {
  if (process.platform !== 'linux' || process.arch !== 'x64') return {why: 'node-llama-cpp ships libggml-base.so for linux-x64 only here'}
  if (!existsSync(join(GGML_LIB_DIR, 'libggml-base.so'))) return {why: `no libggml-base.so in ${GGML_LIB_DIR}`}
  const cc = spawnSync('cc', ['--version'])
  if (cc.error || cc.status !== 0) return {why: 'no C compiler (cc) on PATH'}
  const dir = mkdtempSync(join(tmpdir(), 'runner-ggml-ref-'))
  const exe = join(dir, 'ggml_quantize_ref')
  execFileSync('cc', [
    '-O2',
    '-o',
    exe,
    join(here, 'ggml-ref', 'ggml_quantize_ref.c'),
    `-L${GGML_LIB_DIR}`,
    '-lggml-base',
    '-ldl',
    `-Wl,-rpath,${GGML_LIB_DIR}`,
  ])
  return {exe, dir}
}

const harness = buildHarness()
if (harness.why) console.log(`# ggml reference tests skipped: ${harness.why}`)
after(() => {
  if (harness.dir) rmSync(harness.dir, {recursive: true, force: true})
})

function ggml(args: string[], input: Uint8Array): Uint8Array {
  const r = spawnSync(harness.exe!, args, {input, maxBuffer: 1 << 28})
  if (r.status !== 0) throw new Error(`ggml harness ${args.join(' ')}: ${r.stderr?.toString()}`)
  return new Uint8Array(r.stdout.buffer, r.stdout.byteOffset, r.stdout.byteLength)
}

const ggmlQuantize = (type: KernelTypeTraits, x: Float32Array, nPerRow: number) =>
  ggml(['chunk', String(type.type), String(nPerRow), String(x.length / nPerRow)], new Uint8Array(x.buffer, x.byteOffset, x.byteLength))
const ggmlRow = (symbol: string, x: Float32Array, outBytes: number) =>
  ggml(['row', symbol, String(outBytes), String(x.length)], new Uint8Array(x.buffer, x.byteOffset, x.byteLength))
function ggmlDequant(symbol: string, bytes: Uint8Array, n: number): Float32Array {
  const out = ggml(['deq', symbol, String(bytes.length), String(n)], bytes)
  return new Float32Array(out.slice().buffer)
}

// ---- data ----------------------------------------------------------------------------------------

const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)
const fromBits = (b: number) => {
  u32[0] = b >>> 0
  return f32[0]!
}

/** Rows of n floats, one distribution per 256 values (a super-block), the edge cases included. */
function kRows(rng: SeededRandom, n: number): Float32Array {
  const out = new Float32Array(n)
  for (let b = 0; b < n; b += 256) {
    const style = rng.nextU32() % 13
    const scale = [1, 0.02, 1e-3, 30, 1e-6, 1e4][rng.nextU32() % 6]!
    const constant = (rng.uniform() - 0.5) * 4
    for (let i = b; i < Math.min(n, b + 256); i++) {
      let v: number
      switch (style) {
        case 0:
          v = 0
          break // all zero
        case 1:
          v = constant
          break // constant row
        case 2:
          v = (i - b) % 16 === 0 ? constant : 0
          break // sparse
        case 3:
          v = rng.uniform() < 0.97 ? rng.normal() * 0.01 : rng.normal() * 5
          break // outliers
        case 4:
          v = Math.abs(rng.normal()) * scale
          break // all positive
        case 5:
          v = -Math.abs(rng.normal()) * scale
          break // all negative
        case 6:
          v = Math.round(rng.normal() * 8) / 2
          break // ties after scaling
        case 7:
          v = fromBits(rng.nextU32() & 0x807fffff)
          break // subnormals
        case 8:
          v = i - b < 16 ? 0 : rng.normal()
          break // a zero sub-block
        case 9:
          v = rng.uniform() * 2 - 1
          break
        default:
          v = rng.normal() * scale
      }
      out[i] = v
    }
  }
  return out
}

function randomHalf(rng: SeededRandom): number {
  const r = rng.nextU32() % 16
  if (r === 0) return 0
  if (r === 1) return 0x8000
  if (r === 2) return rng.nextU32() & 0x83ff
  return f32ToF16Bits((rng.uniform() - 0.5) * 0.1)
}

/** Byte offsets of the halves (d, dmin) in a block of each type, and of Q8_K's float d. */
const HALVES: Record<string, number[]> = {Q2_K: [80, 82], Q3_K: [108], Q4_K: [0, 2], Q5_K: [0, 2], Q6_K: [208]}

/** Random bytes of a K type whose halves are finite (every quant and scale byte random). */
function randomBlocks(rng: SeededRandom, t: KernelTypeTraits, n: number): Uint8Array {
  const out = new Uint8Array(rowBytes(t, n))
  for (let i = 0; i < out.length; i++) out[i] = rng.nextU32() & 0xff
  for (let b = 0; b < n / 256; b++) {
    const base = b * t.typeSize
    if (t.name === 'Q8_K') {
      new DataView(out.buffer, out.byteOffset + base, 4).setFloat32(0, rng.normal() * 1e-2, true)
      continue
    }
    for (const o of HALVES[t.name]!) {
      const h = randomHalf(rng)
      out[base + o] = h & 0xff
      out[base + o + 1] = h >> 8
    }
  }
  return out
}

function at(bytes: Uint8Array, offset: number): Uint8Array {
  const buf = new Uint8Array(bytes.length + offset)
  buf.set(bytes, offset)
  return buf.subarray(offset)
}

const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length)
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i
  return -1
}

// ---- against ggml --------------------------------------------------------------------------------

describe('K-quant quantizers and dequantizers: byte identity with ggml (libggml-base)', {skip: harness.why}, () => {
  for (const {name, dequant} of K_TYPES) {
    it(`${name}: quantizeRef == ggml_quantize_chunk and toFloat == ${dequant}`, () => {
      const t = T(name)
      const rng = new SeededRandom(0x6b0000n + BigInt(t.type))
      for (const [nPerRow, rows] of [
        [256, 64],
        [1024, 16],
        [4096, 8],
        [256 * 11, 4],
      ] as const) {
        const x = kRows(rng, nPerRow * rows)
        const ours = quantizeRef(name, x)
        const theirs = ggmlQuantize(t, x, nPerRow)
        const d = firstDiff(ours, theirs)
        if (d >= 0) {
          const blk = Math.floor(d / t.typeSize)
          assert.fail(
            `${name} n_per_row ${nPerRow}: byte ${d} (block ${blk}, offset ${d % t.typeSize}) ours ${ours[d]} ggml ${theirs[d]}; block input ${Array.from(x.subarray(blk * 256, blk * 256 + 8)).join(', ')} ...`,
          )
        }
        const back = toFloat(name, ours, x.length)
        const ref = ggmlDequant(dequant, theirs, x.length)
        for (let i = 0; i < x.length; i++)
          if (!same(back[i]!, ref[i]!)) assert.fail(`${name} dequantize value ${i}: ours ${back[i]} ggml ${ref[i]}`)
      }
      // Random block bytes (every scale and quant pattern) dequantize the same too.
      const raw = randomBlocks(rng, t, 256 * 64)
      const back = toFloat(name, raw, 256 * 64)
      const ref = ggmlDequant(dequant, raw, 256 * 64)
      for (let i = 0; i < back.length; i++)
        if (!same(back[i]!, ref[i]!)) assert.fail(`${name} dequantize of random bytes, value ${i}: ours ${back[i]} ggml ${ref[i]}`)
    })
  }

  it('Q8_K: the activation quantizer == quantize_row_q8_K_ref, and toFloat == dequantize_row_q8_K', () => {
    const t = T('Q8_K')
    const rng = new SeededRandom(0x6b8n)
    const x = kRows(rng, 256 * 200)
    const ours = fromFloat('Q8_K', x, 'scalar')
    assert.ok(Buffer.from(quantizeRef('Q8_K', x)).equals(Buffer.from(ours)), 'from_float and from_float_ref are the same function')
    const theirs = ggmlRow('quantize_row_q8_K_ref', x, rowBytes(t, x.length))
    const d = firstDiff(ours, theirs)
    if (d >= 0) assert.fail(`Q8_K byte ${d} (block ${Math.floor(d / 292)}, offset ${d % 292}): ours ${ours[d]} ggml ${theirs[d]}`)
    const back = toFloat('Q8_K', ours, x.length)
    const ref = ggmlDequant('dequantize_row_q8_K', ours, x.length)
    for (let i = 0; i < x.length; i++) if (!same(back[i]!, ref[i]!)) assert.fail(`Q8_K dequantize ${i}: ${back[i]} vs ${ref[i]}`)
  })

  for (const {name, dequant} of K_TYPES) {
    it(`${name} x Q8_K: the scalar dot is a float64 dot of ggml's dequantized rows within its float32 bound`, () => {
      const rng = new SeededRandom(0xd0d0n + BigInt(T(name).type))
      for (const n of [256, 512, 2048, 4096, 11008 - (11008 % 256), 256 * 43]) {
        const w = new Float32Array(n).map(() => rng.normal())
        const a = new Float32Array(n).map(() => rng.normal() * 2)
        const x = quantizeRef(name, w)
        const y = fromFloat('Q8_K', a, 'scalar')
        const xd = ggmlDequant(dequant, x, n)
        const yd = ggmlDequant('dequantize_row_q8_K', y, n)
        let exact = 0
        let magnitude = 0
        for (let i = 0; i < n; i++) {
          exact += xd[i]! * yd[i]!
          magnitude += Math.abs(xd[i]!) * Math.abs(yd[i]!)
        }
        // The kernel rounds d_y*d_x and d_y*dmin_x once each, (float)isum where it passes 2^24, one
        // or two FMAs per super-block on 8 lanes, then a 3-level tree; ggml's dequantizer rounds each
        // value (d*sc, then *q, then - dmin*m) in float too. A few float32 ulps of the magnitude
        // (which for the min types includes the cancelled dmin*m*y terms) bound all of it.
        const blocks = n / 256
        let mins = 0
        if (name === 'Q4_K' || name === 'Q5_K' || name === 'Q2_K') {
          for (let i = 0; i < n; i++) mins += Math.abs(yd[i]!) * (Math.abs(xd[i]!) + 1) // generous: |d*sc*q| + |dmin*m| <= |x| + range
        }
        const chain = Math.ceil(blocks / 8) * 2 + 3 + 8
        const bound = chain * 2 ** -24 * (magnitude + mins) * 1.01
        const got = vecDot(name, n, x, y, 'scalar')
        assert.ok(
          Math.abs(got - exact) <= bound,
          `n = ${n}: scalar ${got}, float64 of ggml's dequantized rows ${exact}, |diff| ${Math.abs(got - exact)} > ${bound}`,
        )
      }
    })
  }
})

// ---- IQ4_NL and MXFP4 (32-value blocks against Q8_0) ---------------------------------------------

/** The 4-bit table types, with ggml's dequantizer; their quantizer is what ggml_quantize_chunk runs. */
export const NL_TYPES: readonly {name: string; dequant: string}[] = [
  {name: 'IQ4_NL', dequant: 'dequantize_row_iq4_nl'},
  {name: 'MXFP4', dequant: 'dequantize_row_mxfp4'},
]

/** Random bytes of IQ4_NL (finite half d) or MXFP4 (any exponent byte but the extremes). */
function randomNlBlocks(rng: SeededRandom, t: KernelTypeTraits, n: number): Uint8Array {
  const out = new Uint8Array(rowBytes(t, n))
  for (let i = 0; i < out.length; i++) out[i] = rng.nextU32() & 0xff
  for (let b = 0; b < n / 32; b++) {
    const base = b * t.typeSize
    if (t.name === 'MXFP4') {
      out[base] = 100 + (rng.nextU32() % 40) // 2^-28 .. 2^11: products stay normal
    } else {
      const h = randomHalf(rng)
      out[base] = h & 0xff
      out[base + 1] = h >> 8
    }
  }
  return out
}

describe('IQ4_NL and MXFP4: byte identity with ggml (libggml-base)', {skip: harness.why}, () => {
  for (const {name, dequant} of NL_TYPES) {
    it(`${name}: quantizeRef == ggml_quantize_chunk and toFloat == ${dequant}`, () => {
      const t = T(name)
      const rng = new SeededRandom(0x4e4cn + BigInt(t.type))
      for (const [nPerRow, rows] of [
        [32, 256],
        [256, 64],
        [4096, 4],
        [96, 20],
      ] as const) {
        const x = kRows(rng, nPerRow * rows)
        const ours = quantizeRef(name, x)
        const theirs = ggmlQuantize(t, x, nPerRow)
        const d = firstDiff(ours, theirs)
        if (d >= 0) {
          const blk = Math.floor(d / t.typeSize)
          assert.fail(
            `${name} n_per_row ${nPerRow}: byte ${d} (block ${blk}) ours ${ours[d]} ggml ${theirs[d]}; block input ${Array.from(x.subarray(blk * 32, blk * 32 + 6)).join(', ')} ...`,
          )
        }
        const back = toFloat(name, ours, x.length)
        const ref = ggmlDequant(dequant, theirs, x.length)
        for (let i = 0; i < x.length; i++)
          if (!same(back[i]!, ref[i]!)) assert.fail(`${name} dequantize value ${i}: ours ${back[i]} ggml ${ref[i]}`)
      }
      const raw = randomNlBlocks(rng, t, 32 * 256)
      const back = toFloat(name, raw, 32 * 256)
      const ref = ggmlDequant(dequant, raw, 32 * 256)
      for (let i = 0; i < back.length; i++)
        if (!same(back[i]!, ref[i]!)) assert.fail(`${name} dequantize of random bytes, value ${i}: ours ${back[i]} ggml ${ref[i]}`)
    })

    it(`${name} x Q8_0: the scalar dot is a float64 dot of ggml's dequantized rows within its float32 bound`, () => {
      const rng = new SeededRandom(0xd1d1n + BigInt(T(name).type))
      for (const n of [32, 96, 2048, 4096, 11008]) {
        const w = new Float32Array(n).map(() => rng.normal())
        const a = new Float32Array(n).map(() => rng.normal() * 2)
        const x = quantizeRef(name, w)
        const y = fromFloat('Q8_0', a, 'scalar')
        const xd = ggmlDequant(dequant, x, n)
        const yd = ggmlDequant('dequantize_row_q8_0', y, n)
        let exact = 0
        let magnitude = 0
        for (let i = 0; i < n; i++) {
          exact += xd[i]! * yd[i]!
          magnitude += Math.abs(xd[i]!) * Math.abs(yd[i]!)
        }
        const chain = Math.ceil(n / 32 / 16) + 4 + 1
        const bound = chain * 2 ** -24 * magnitude * 1.01
        const got = vecDot(name, n, x, y, 'scalar')
        assert.ok(Math.abs(got - exact) <= bound, `n = ${n}: scalar ${got}, float64 ${exact}, |diff| ${Math.abs(got - exact)} > ${bound}`)
      }
    })
  }
})

// ---- SIMD == scalar ------------------------------------------------------------------------------

const SUPER_COUNTS = [...Array.from({length: 40}, (_, i) => i + 1), 43, 64, 86]

describe('K-quant vec_dot: every SIMD variant equals the scalar reference bitwise', () => {
  for (const name of [...K_TYPES.map((k) => k.name)]) {
    const t = T(name)
    for (const variant of t.variants.filter((v) => v !== 'scalar')) {
      it(`${name} x Q8_K: ${variant}`, () => {
        const rng = new SeededRandom(0x51d0n + BigInt(t.type))
        let k = 0
        for (const blocks of SUPER_COUNTS) {
          const n = blocks * 256
          for (const kind of ['quantized', 'random'] as const) {
            const x = kind === 'quantized' ? quantizeRef(name, kRows(rng, n)) : randomBlocks(rng, t, n)
            const y = kind === 'quantized' ? fromFloat('Q8_K', kRows(rng, n), 'scalar') : randomBlocks(rng, T('Q8_K'), n)
            const want = vecDot(name, n, x, y, 'scalar')
            const xo = at(x, (k * 7) % 64)
            const yo = at(y, (k * 13 + 5) % 64)
            const got = vecDot(name, n, xo, yo, variant)
            if (!same(got, want))
              assert.fail(
                `${blocks} super-blocks (${kind}, offsets ${xo.byteOffset}/${yo.byteOffset}): ${variant} ${got} != scalar ${want}`,
              )
            k++
          }
        }
        const n = 3 * 256
        const x = randomBlocks(rng, t, n)
        const y = randomBlocks(rng, T('Q8_K'), n)
        const want = vecDot(name, n, x, y, 'scalar')
        for (let o = 0; o < 64; o++) {
          const got = vecDot(name, n, at(x, o), at(y, 63 - o), variant)
          if (!same(got, want)) assert.fail(`offset ${o}: ${variant} ${got} != scalar ${want}`)
        }
      })
    }
  }
})

describe('IQ4_NL / MXFP4 vec_dot: every SIMD variant equals the scalar reference bitwise', () => {
  const BLOCKS = [...Array.from({length: 40}, (_, i) => i + 1), 128, 344]
  for (const {name} of NL_TYPES) {
    const t = T(name)
    for (const variant of t.variants.filter((v) => v !== 'scalar')) {
      it(`${name} x Q8_0: ${variant}`, () => {
        const rng = new SeededRandom(0x51d1n + BigInt(t.type))
        let k = 0
        for (const blocks of BLOCKS) {
          const n = blocks * 32
          for (const kind of ['quantized', 'random'] as const) {
            const x = kind === 'quantized' ? quantizeRef(name, kRows(rng, n)) : randomNlBlocks(rng, t, n)
            let y: Uint8Array
            if (kind === 'quantized') {
              y = fromFloat('Q8_0', kRows(rng, n), 'scalar')
            } else {
              y = new Uint8Array(rowBytes('Q8_0', n))
              for (let i = 0; i < y.length; i++) y[i] = rng.nextU32() & 0xff
              for (let b = 0; b < blocks; b++) {
                const h = randomHalf(rng)
                y[b * 34] = h & 0xff
                y[b * 34 + 1] = h >> 8
              }
            }
            const want = vecDot(name, n, x, y, 'scalar')
            const xo = at(x, (k * 7) % 64)
            const yo = at(y, (k * 13 + 5) % 64)
            const got = vecDot(name, n, xo, yo, variant)
            if (!same(got, want))
              assert.fail(`${blocks} blocks (${kind}, offsets ${xo.byteOffset}/${yo.byteOffset}): ${variant} ${got} != scalar ${want}`)
            k++
          }
        }
      })
    }
  }
})
