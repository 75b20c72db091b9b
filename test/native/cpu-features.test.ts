// Run-time CPU feature detection through the addon. Outside facts checked:
//  - Linux's /proc/cpuinfo "flags" line (x86), which lists a feature only when the CPU has it
//    and the kernel enabled its register state: the same rule the engine applies, so equality.
//  - AArch64 mandates Advanced SIMD (Arm ARM), and Linux lists it as "asimd".
//  - package.json's version, which CMake compiles into the engine.
import assert from 'node:assert/strict'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, describe, it} from 'node:test'

import {
  ADDON_ABI_VERSION,
  CPU_FEATURE_NAMES,
  addonPath,
  cpuFeatures,
  findPackageRoot,
  loadAddon,
  loadAddonFrom,
} from '../../src/lib/engine/addon.js'
import {ExitCode, RunnerError} from '../../src/lib/errors.js'

// Our key -> the flag name Linux prints in /proc/cpuinfo (arch/x86/include/asm/cpufeatures.h).
const LINUX_X86_FLAG: Record<string, string> = {
  sse4_2: 'sse4_2',
  avx2: 'avx2',
  fma: 'fma',
  f16c: 'f16c',
  avx512f: 'avx512f',
  avx512bw: 'avx512bw',
  avx512vl: 'avx512vl',
  avx512_vnni: 'avx512_vnni',
  avx_vnni: 'avx_vnni',
  amx: 'amx_tile',
  amx_int8: 'amx_int8',
  amx_bf16: 'amx_bf16',
}

/** Words of the first line of /proc/cpuinfo that starts with `field` (e.g. "flags"). */
function cpuinfoWords(field: string): Set<string> {
  const text = readFileSync('/proc/cpuinfo', 'utf8')
  const line = text.split('\n').find((l) => l.split(':')[0]?.trim() === field)
  assert.ok(line, `/proc/cpuinfo has a "${field}" line`)
  return new Set((line.split(':')[1] ?? '').trim().split(/\s+/))
}

describe('native addon: cpuFeatures()', () => {
  it('loads and reports the build it came from (package.json version, ABI)', () => {
    const addon = loadAddon()
    const pkg = JSON.parse(readFileSync(join(findPackageRoot(), 'package.json'), 'utf8')) as {version: string}
    assert.equal(addon.version(), pkg.version)
    assert.equal(addon.abiVersion(), ADDON_ABI_VERSION)
    assert.equal(loadAddon(), addon, 'loadAddon() caches the module')
  })

  it('returns exactly the documented keys, each a boolean', () => {
    const features = cpuFeatures()
    assert.deepEqual(Object.keys(features), [...CPU_FEATURE_NAMES])
    for (const [name, value] of Object.entries(features)) {
      assert.equal(typeof value, 'boolean', `${name} is a boolean`)
    }
  })

  it(
    'agrees with the kernel: /proc/cpuinfo flags on Linux x86',
    {
      skip: process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'ia32'),
    },
    () => {
      const flags = cpuinfoWords('flags')
      const features = cpuFeatures()
      const mismatches = Object.entries(LINUX_X86_FLAG)
        .filter(([key, flag]) => features[key as keyof typeof features] !== flags.has(flag))
        .map(
          ([key, flag]) => `${key}: engine ${String(features[key as keyof typeof features])}, /proc/cpuinfo "${flag}" ${flags.has(flag)}`,
        )
      assert.deepEqual(mismatches, [])
      assert.equal(features.neon, false)
    },
  )

  it('reports NEON on aarch64 (mandatory there; Linux calls it "asimd")', {skip: process.arch !== 'arm64'}, () => {
    const features = cpuFeatures()
    assert.equal(features.neon, true)
    if (process.platform === 'linux') assert.ok(cpuinfoWords('Features').has('asimd'))
    for (const name of CPU_FEATURE_NAMES) if (name !== 'neon') assert.equal(features[name], false, name)
  })
})

describe('native addon: loader failures', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'runner-addon-test-'))
  after(() => rmSync(scratch, {recursive: true, force: true}))

  function assertRunnerError(fn: () => unknown, code: string, ...mentions: string[]): void {
    assert.throws(fn, (error: unknown) => {
      assert.ok(error instanceof RunnerError, `got ${String(error)}`)
      assert.equal(error.code, code)
      assert.equal(error.exitCode, ExitCode.backendUnavailable)
      for (const text of mentions) assert.ok(error.message.includes(text), `message mentions ${text}: ${error.message}`)
      return true
    })
  }

  it('a missing .node is ADDON_NOT_BUILT, naming the path and how to build, in the package folder', () => {
    const missing = join(scratch, 'nothing-here', 'runner_native.node')
    // --prefix: after npm install -g the folder to build in is <prefix>/lib/node_modules/runner-llm, not the user's.
    const build = `npm run build:native --prefix ${findPackageRoot()}`
    assertRunnerError(() => loadAddonFrom(missing), 'ADDON_NOT_BUILT', missing, build, 'cmake', 'Cannot find module')
  })

  it('a .node that is not a shared library is ADDON_NOT_BUILT with the loader error', () => {
    const corrupt = join(scratch, 'corrupt.node')
    writeFileSync(corrupt, 'not an ELF file')
    assertRunnerError(() => loadAddonFrom(corrupt), 'ADDON_NOT_BUILT', corrupt, 'npm run build:native', 'cmake')
  })

  it('a module from other sources (wrong ABI) is ADDON_STALE', () => {
    const stale = join(scratch, 'stale.cjs')
    writeFileSync(stale, `module.exports = {abiVersion: () => ${ADDON_ABI_VERSION + 1000}, version: () => '0', cpuFeatures: () => ({})}`)
    assertRunnerError(() => loadAddonFrom(stale), 'ADDON_STALE', stale, 'npm run build:native')
  })

  it('the default path is <package root>/native/build/Release/runner_native.node', () => {
    assert.equal(addonPath(), join(findPackageRoot(), 'native', 'build', 'Release', 'runner_native.node'))
  })
})
