/**
 * The native tree's shape (docs/architecture.md): no two engine files use each other's symbols, so
 * every file can be read (and replaced) knowing only the files below it (checked on the built static
 * library with nm from binutils: a member that uses a symbol another member defines depends on it;
 * the graph must have no cycle). The product addon sees the engine through runner.h only, and ships
 * no test hook (those are native/addon-test's).
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join} from 'node:path'
import {test} from 'node:test'

import {ADDON_FUNCTIONS, addonPath, findPackageRoot} from '../../src/lib/engine/addon.js'

const LIB = join(findPackageRoot(), 'native', 'build', 'librunner_engine.a')
const nm = spawnSync('nm', ['-A', LIB], {encoding: 'utf8', maxBuffer: 64 << 20})
const skip = !existsSync(LIB) ? `${LIB} is not built` : nm.error || nm.status !== 0 ? 'nm (binutils) is not available' : false

test('no two files of the engine depend on each other (no cycle among its object files)', {skip}, () => {
  const defines = new Map<string, string>()
  const uses = new Map<string, Set<string>>()
  for (const line of nm.stdout.split('\n')) {
    // "lib.a:member.o:0000000000000000 T symbol" or "lib.a:member.o:                 U symbol"
    const m = /^[^:]+:([^:]+\.o):\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+)$/.exec(line)
    if (!m) continue
    const [, member, kind, symbol] = m as unknown as [string, string, string, string]
    if (!uses.has(member)) uses.set(member, new Set())
    if (kind === 'U') uses.get(member)!.add(symbol)
    else if (/[TDBRCVW]/.test(kind)) defines.set(symbol, member)
  }
  assert.ok(uses.size > 30, `nm listed the engine's members (${uses.size})`)
  const deps = new Map(
    [...uses].map(([member, symbols]) => [
      member,
      new Set([...symbols].flatMap((s) => (defines.has(s) && defines.get(s) !== member ? [defines.get(s)!] : []))),
    ]),
  )
  // Depth-first search; a back edge is a cycle, reported as the path that closes it.
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (m: string): void => {
    state.set(m, 'open')
    path.push(m)
    for (const d of deps.get(m) ?? []) {
      if (state.get(d) === 'open') assert.fail(`dependency cycle: ${[...path.slice(path.indexOf(d)), d].join(' -> ')}`)
      if (!state.has(d)) visit(d)
    }
    path.pop()
    state.set(m, 'done')
  }
  for (const m of deps.keys()) if (!state.has(m)) visit(m)
})

test('the product addon includes only runner.h of the engine (plus its own headers, napi and the standard library)', () => {
  const dir = join(findPackageRoot(), 'native', 'addon')
  const own = new Set(readdirSync(dir).filter((f) => f.endsWith('.h')))
  const offending: string[] = []
  for (const file of readdirSync(dir).filter((f) => /\.(cc|h)$/.test(f))) {
    for (const [, target] of readFileSync(join(dir, file), 'utf8').matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      if (target !== 'runner.h' && !own.has(target!)) offending.push(`${file}: #include "${target}"`)
    }
  }
  assert.deepEqual(offending, [])
})

test('the product addon exports exactly the NativeAddon interface: no test hook or benchmark', () => {
  const exported = Object.keys(createRequire(import.meta.url)(addonPath())).sort()
  assert.deepEqual(exported, [...ADDON_FUNCTIONS].sort())
  assert.ok(!exported.some((name) => name.startsWith('kernel') || name.startsWith('samplerTest')))
})
