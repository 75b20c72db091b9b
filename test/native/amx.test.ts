/**
 * AMX-INT8 tiles for prompt matmuls (native/src/quant/amx*.c, docs/kernels.md "AMX"). What is checked:
 *  - the driver (repack, one TDPBSSD per block, the canonical epilogue) on the EMULATED tile
 *    instructions gives, for 16 Q8_0 or Q4_0 rows x 16 tokens, bitwise the scalar vec_dot and the
 *    variant this CPU picks, for every tail of the 16 block lanes, rows not a multiple of 512 values,
 *    extreme quants (-128, 127, nibbles 0 and 15), scales of every sign and size, activation rows
 *    packed or strided and unaligned; and never issues an instruction the hardware would fault on;
 *  - the same on the HARDWARE tiles where this process may use them (skipped with a reason elsewhere);
 *  - the self-check passes on the correct emulation and refuses two wrong ones (one wrong only at
 *    extreme inputs), so a wrong kernel cannot turn AMX on;
 *  - the engine's decision per process (RUNNER_AMX unset, off, emulate; a cap below AVX-512), and
 *    that a model's prompt logits are bitwise the same with AMX emulated and off, with the AMX path
 *    really taken (its tile count);
 *  - `runner run` names the AMX state in its stats, and RUNNER_AMX's unknown values are refused.
 * On a CPU without AMX only the intrinsics shim (amx_hw_amx.c) goes unexercised.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {describe, it, test} from 'node:test'

import {cpuFeatures} from '../../src/lib/engine/addon.js'
import {AMX_STATES} from '../../src/lib/engine/cpu-level.js'
import {type KernelTypeTraits, kernelTraits, quantizeRef, rowBytes} from '../../src/lib/engine/kernels.js'
import {amxIsas, amxSelfCheck, amxTile, fromFloat, vecDot} from '../../src/lib/engine/test-addon.js'
import {f32ToF16Bits} from '../../src/lib/util/half.js'
import {SeededRandom} from '../../src/lib/util/random.js'
import {hasShared, NO_SHARED_REASON, REPO_ROOT, runCliAsync, sharedPath} from '../helpers/shared.js'

const ISAS = amxIsas()
const EMULATED = ISAS.includes('emulated')
  ? false
  : 'the AMX driver needs AVX-512 F/BW/VL, which this CPU lacks (or this is not an x86-64 build)'
const features = cpuFeatures()
const HAS_AMX = features.amx && features.amx_int8
const HARDWARE = ISAS.includes('hardware')
  ? false
  : HAS_AMX
    ? 'this CPU has AMX-INT8, but this process may not use it (not built, or the OS refused the tile state): see amxStatus()'
    : 'this CPU has no AMX-INT8 (no amx_tile / amx_int8 in /proc/cpuinfo): the hardware tiles cannot be run here'

const T = (name: string): KernelTypeTraits => kernelTraits(name)!
const Q8_0 = T('Q8_0')

// ---- data --------------------------------------------------------------------------------------

/** Finite half bits: ordinary scales of both signs, zeros, subnormals, and scales up to 65504. */
function randomHalf(rng: SeededRandom): number {
  const r = rng.nextU32() % 8
  if (r === 0) return [0, 0x8000][rng.nextU32() % 2]!
  if (r === 1) return rng.nextU32() & 0x83ff // subnormal
  if (r === 2) return 0x7800 | (rng.nextU32() & 0x83ff) // 2^15 .. 65504, either sign
  if (r === 3) {
    const h = rng.nextU32() & 0xffff
    return (h & 0x7c00) === 0x7c00 ? h & 0xbfff : h // any finite half
  }
  return f32ToF16Bits((rng.uniform() - 0.5) * 0.1)
}

/**
 * One row of n values of `type` (Q8_0 or Q4_0): quantizer output for even k, random bytes with
 * finite scales for odd k; `extreme` 0 or 1 makes every quant the type's lowest or highest value.
 */
function row(rng: SeededRandom, type: KernelTypeTraits, n: number, k: number, extreme?: 0 | 1, activation = false): Uint8Array {
  if (extreme === undefined && k % 2 === 0) {
    const x = Float32Array.from({length: n}, () => (rng.uniform() < 0.05 ? rng.normal() * 40 : rng.normal()))
    return activation ? fromFloat('Q8_0', x, 'scalar') : quantizeRef(type.name, x)
  }
  const out = new Uint8Array(rowBytes(type, n))
  for (let b = 0; b < n / 32; b++) {
    const blk = out.subarray(b * type.typeSize, (b + 1) * type.typeSize)
    const h = randomHalf(rng)
    blk[0] = h & 0xff
    blk[1] = h >> 8
    const q8 = type.name === 'Q8_0'
    for (let j = 2; j < blk.length; j++) {
      blk[j] = extreme === undefined ? rng.nextU32() & 0xff : extreme === 0 ? (q8 ? 0x80 : 0x00) : q8 ? 0x7f : 0xff
    }
  }
  return out
}

/** 16 weight rows and 16 activation rows; rows 0 and 1 (tokens 0 and 1) at the extremes. */
function inputs(rng: SeededRandom, type: KernelTypeTraits, n: number, k: number) {
  const ext = (i: number): 0 | 1 | undefined => (i === 0 ? 0 : i === 1 ? 1 : undefined)
  const xs = Array.from({length: 16}, (_, r) => row(rng, type, n, k + r, ext(r)))
  const ys = Array.from({length: 16}, (_, c) => row(rng, Q8_0, n, k + c, ext(c), true))
  return {xs, ys}
}

const concat = (rows: Uint8Array[]) => {
  const out = new Uint8Array(rows.reduce((s, r) => s + r.length, 0))
  let o = 0
  for (const r of rows) {
    out.set(r, o)
    o += r.length
  }
  return out
}

/** Activation rows `by` bytes apart (the scratch's row stride), the gaps filled with junk, `offset` bytes into a buffer. */
function strided(rows: Uint8Array[], by: number, offset: number): Uint8Array {
  const len = (rows.length - 1) * by + rows[0]!.length
  const buf = new Uint8Array(len + offset).fill(0xa5)
  rows.forEach((r, i) => buf.set(r, offset + i * by))
  return buf.subarray(offset)
}

const at = (bytes: Uint8Array, offset: number) => strided([bytes], bytes.length, offset)
const same = (a: number, b: number) => Object.is(a, b)

// Every tail of the 16 block lanes, lanes wrapping once and more, rows not a multiple of 512 values.
const BLOCK_COUNTS = [...Array.from({length: 18}, (_, i) => i + 1), 20, 31, 33, 100, 129]

function checkTiles(isa: string, type: KernelTypeTraits, seed: bigint): void {
  const rng = new SeededRandom(seed)
  const picked = type.pickedVecDot!
  let k = 0
  for (const blocks of BLOCK_COUNTS) {
    const n = blocks * 32
    const {xs, ys} = inputs(rng, type, n, k)
    const yRow = ys[0]!.length
    // back to back, or strided like the scratch (64-byte multiples) and unaligned
    const by = k % 3 === 0 ? yRow : k % 3 === 1 ? Math.ceil(yRow / 64) * 64 + 64 : yRow + 1 + (k % 63)
    const got = amxTile(type.name, isa, n, at(concat(xs), (k * 7) % 64), strided(ys, by, (k * 3) % 64), by)
    assert.equal(got.faults, 0, `n = ${n}: the driver issued instructions the hardware faults on`)
    assert.equal(got.values.length, 256)
    for (let c = 0; c < 16; c++) {
      for (let r = 0; r < 16; r++) {
        const g = got.values[16 * c + r]!
        const ref = vecDot(type.name, n, xs[r]!, ys[c]!, 'scalar')
        if (!same(g, ref)) assert.fail(`${type.name} n = ${n} (case ${k}, by ${by}) row ${r} x token ${c}: ${isa} ${g} != scalar ${ref}`)
        const fast = vecDot(type.name, n, xs[r]!, ys[c]!, picked)
        if (!same(g, fast)) assert.fail(`${type.name} n = ${n} row ${r} x token ${c}: ${isa} ${g} != ${picked} ${fast}`)
      }
    }
    k++
  }
}

// ---- the driver --------------------------------------------------------------------------------

describe('the AMX driver: 16 rows x 16 tokens, each result bitwise vec_dot', () => {
  for (const name of ['Q8_0', 'Q4_0']) {
    it(`${name} on the emulated tiles`, {skip: EMULATED}, () => checkTiles('emulated', T(name), 0xa3a30000n + BigInt(T(name).type)))
    it(`${name} on the hardware tiles`, {skip: HARDWARE}, () => checkTiles('hardware', T(name), 0xa3a40000n + BigInt(T(name).type)))
  }

  it('refuses types without an AMX tile and ISAs this process cannot run, by name', {skip: EMULATED}, () => {
    const x = new Uint8Array(16 * rowBytes('Q5_0', 32))
    const y = new Uint8Array(16 * rowBytes('Q8_0', 32))
    assert.throws(() => amxTile('Q5_0', 'emulated', 32, x, y), /no AMX tile/)
    assert.throws(() => amxTile('Q8_0', 'tiles-of-wood', 32, new Uint8Array(16 * 34), y), /isa 'tiles-of-wood' cannot run/)
  })
})

// ---- the self-check ----------------------------------------------------------------------------

describe('the self-check (run once per process before AMX is used)', () => {
  it('passes on the correct emulation', {skip: EMULATED}, () => assert.equal(amxSelfCheck('emulated'), true))

  it('fails on an emulation that reads A as unsigned bytes (TDPBUSD instead of TDPBSSD)', {skip: EMULATED}, () => {
    assert.equal(amxSelfCheck('emulated-unsigned'), false)
  })

  it('fails on an emulation wrong only at extreme inputs (pairs saturated to int16)', {skip: EMULATED}, () => {
    // The premise: that ISA agrees with vec_dot on ordinary data, so only the check's extremes catch it.
    const rng = new SeededRandom(77n)
    const n = 256
    const xs = Array.from({length: 16}, () =>
      quantizeRef(
        'Q8_0',
        Float32Array.from({length: n}, () => rng.normal()),
      ),
    )
    const ys = Array.from({length: 16}, () =>
      fromFloat(
        'Q8_0',
        Float32Array.from({length: n}, () => rng.normal()),
        'scalar',
      ),
    )
    const got = amxTile('Q8_0', 'emulated-saturating', n, concat(xs), concat(ys)).values
    for (let c = 0; c < 16; c++) for (let r = 0; r < 16; r++) assert.ok(same(got[16 * c + r]!, vecDot('Q8_0', n, xs[r]!, ys[c]!, 'scalar')))
    assert.equal(amxSelfCheck('emulated-saturating'), false)
  })

  it('passes on the hardware tiles', {skip: HARDWARE}, () => assert.equal(amxSelfCheck('hardware'), true))
})

// ---- the engine's decision and the end-to-end contract -----------------------------------------

interface Digest {
  digest: string
  state: string
  tiles: number
}

/** The logits digest of a 100-token prompt (6 AMX token tiles and 4 tokens left over) in a process of its own. */
function digest(file: string, env: NodeJS.ProcessEnv): Digest {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'test/helpers/amx-digest.ts', file, '128', 'f16', '100', '3'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: {...process.env, RUNNER_AMX: '', RUNNER_CPU_MAX: '', ...env},
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Digest
}

describe('the engine uses AMX only where it may, and it changes no logit', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const file = sharedPath('fixtures', 'stories260K-q8_0.gguf')

  test('the state per process: RUNNER_AMX unset, off, emulate, and under RUNNER_CPU_MAX=avx2', () => {
    const auto = digest(file, {})
    assert.ok((AMX_STATES as readonly string[]).includes(auto.state), auto.state)
    if (!HAS_AMX) assert.equal(auto.state, 'absent')
    // On an AMX machine a failed self-check is a bug to report (AMX stays off, the logits stay right).
    else assert.notEqual(auto.state, 'selfcheck-failed', 'the self-check failed on the hardware tiles')
    assert.equal(auto.tiles > 0, auto.state === 'active')
    assert.equal(digest(file, {RUNNER_AMX: 'off'}).state, HAS_AMX ? 'off' : 'absent')
    assert.equal(digest(file, {RUNNER_AMX: 'emulate', RUNNER_CPU_MAX: 'avx2'}).state, 'absent', 'the emulation runs on the AVX-512 driver')
    assert.equal(digest(file, {RUNNER_AMX: 'off', RUNNER_CPU_MAX: 'avx2'}).state, 'absent')
  })

  for (const name of ['stories260K-q8_0', 'stories260K-q4_0', 'llama-q8_0', 'llama-q4_0']) {
    test(`${name}: prompt logits bitwise equal with AMX emulated, off and (where present) active`, {skip: EMULATED}, () => {
      const path = sharedPath('fixtures', `${name}.gguf`)
      const off = digest(path, {RUNNER_AMX: 'off'})
      assert.equal(off.tiles, 0)
      const emulated = digest(path, {RUNNER_AMX: 'emulate'})
      assert.equal(emulated.state, 'emulated')
      assert.ok(emulated.tiles > 0, 'the prompt matmuls went through the AMX driver')
      assert.equal(emulated.digest, off.digest, 'AMX (emulated) changed the logits')
      const auto = digest(path, {})
      if (auto.state === 'active') {
        assert.ok(auto.tiles > 0)
        assert.equal(auto.digest, off.digest, 'AMX (hardware) changed the logits')
      }
    })
  }
})

describe('runner run names the AMX state', {skip: hasShared() ? false : NO_SHARED_REASON}, () => {
  const args = ['run', '-m', sharedPath('fixtures', 'stories260K-q4_0.gguf'), '-p', 'Once upon a time, there was a little girl', '-n', '2']

  test('in its stats line, and refuses an unknown RUNNER_AMX by name', {skip: EMULATED}, async () => {
    const emulated = await runCliAsync([...args, '--temp', '0'], {env: {RUNNER_AMX: 'emulate'}})
    assert.equal(emulated.status, 0, emulated.stderr)
    assert.match(emulated.stderr, / · kernels avx512 \(dots [\w-]+, attention avx512, AMX emulated \(RUNNER_AMX=emulate, tests only\)\)/)
    const json = await runCliAsync([...args, '--temp', '0', '--json'], {env: {RUNNER_AMX: 'emulate'}})
    assert.equal(JSON.parse(json.stdout).kernels.amxState, 'emulated')
    const off = await runCliAsync([...args, '--temp', '0'], {env: {RUNNER_AMX: 'off'}})
    assert.equal(emulated.stdout, off.stdout, 'the same greedy text')
    const bad = await runCliAsync(args, {env: {RUNNER_AMX: 'yes-please'}})
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /RUNNER_AMX="?yes-please"? must be one of auto, off, emulate/)
  })
})
