/**
 * The native tree's shape (docs/architecture.md): no two engine files use each other's symbols, so
 * every file can be read (and replaced) knowing only the files below it. Checked on the built static
 * library with nm (binutils): a member that uses a symbol defined by another member depends on it;
 * the dependency graph must have no cycle.
 */
import assert from 'node:assert/strict'
import {spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'node:test'

import {findPackageRoot} from '../../src/lib/engine/addon.js'

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
  const deps = new Map([...uses].map(([member, symbols]) => [member, new Set([...symbols].flatMap((s) => (defines.has(s) && defines.get(s) !== member ? [defines.get(s)!] : [])))]))
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
