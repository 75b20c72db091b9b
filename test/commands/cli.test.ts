// The CLI as a whole: version, help, usage errors. The anchors are package.json (the version) and the
// source tree (which commands exist), not the CLI's own output. Build first (`npx tsc -p .`).
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {join, relative} from 'node:path'
import {describe, test} from 'node:test'

import {REPO_ROOT, runCli} from '../helpers/shared.js'

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {name: string; version: string; oclif: {bin: string}}
const BIN = pkg.oclif.bin

/** Command ids from src/commands: `inspect.ts` → `inspect`, `model/list.ts` → `model list` (topicSeparator ' '). */
function sourceCommands(dir = join(REPO_ROOT, 'src', 'commands')): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => {
    const p = join(dir, e.name)
    if (e.isDirectory()) return sourceCommands(p)
    if (!/\.tsx?$/.test(e.name) || e.name.endsWith('.d.ts') || /\.test\.tsx?$/.test(e.name)) return []
    const id = relative(join(REPO_ROOT, 'src', 'commands'), p)
      .replace(/\.tsx?$/, '')
      .split(/[\\/]/)
    if (id[id.length - 1] === 'index') id.pop()
    return id.length > 0 ? [id.join(' ')] : []
  })
}

/** The lines of one section of oclif's help (`COMMANDS`, `EXAMPLES`, ...), up to the next heading. */
function section(help: string, heading: string): string[] {
  const lines = help.split('\n')
  const start = lines.findIndex((l) => l.trimEnd() === heading)
  if (start < 0) return []
  const rest = lines.slice(start + 1)
  const end = rest.findIndex((l) => /^[A-Z][A-Z ]+$/.test(l.trimEnd()))
  return end < 0 ? rest : rest.slice(0, end)
}

/** Names listed in a COMMANDS or TOPICS section (`  inspect  Show what ...`). */
function listedNames(help: string, heading: string): string[] {
  return section(help, heading).flatMap((l) => {
    const m = /^ {2}(\S+(?: \S+)*?)(?: {2,}|$)/.exec(l)
    return m ? [m[1]!] : []
  })
}

const COMMANDS = sourceCommands()

describe('runner CLI', () => {
  test('there is at least one command in src/commands', () => {
    assert.ok(COMMANDS.length > 0)
    assert.ok(COMMANDS.includes('inspect'))
  })

  // oclif prints the npm package's name (runner-llm: what to install or upgrade), not the command's.
  test('--version prints <package.json name>/<package.json version>', () => {
    const r = runCli(['--version'])
    assert.equal(r.status, 0, r.stderr)
    const first = r.stdout.split('\n')[0] ?? ''
    assert.ok(first.startsWith(`${pkg.name}/${pkg.version}`), `--version printed ${JSON.stringify(r.stdout)}`)
    assert.match(first, new RegExp(`^${pkg.name}/${pkg.version.replaceAll('.', '\\.')}(?: |$)`))
  })

  test('--help lists every command of src/commands and exits 0', () => {
    const r = runCli(['--help'])
    assert.equal(r.status, 0, r.stderr)
    const listed = new Set([...listedNames(r.stdout, 'COMMANDS'), ...listedNames(r.stdout, 'TOPICS')])
    assert.ok(listed.size > 0, `no COMMANDS section in:\n${r.stdout}`)
    for (const id of COMMANDS) {
      // A nested command (`model list`) appears at the top level as its topic (`model`).
      const top = id.split(' ')[0]!
      assert.ok(listed.has(id) || listed.has(top), `--help does not list ${id}:\n${r.stdout}`)
    }
    // And nothing else: a command without a source file is a stale build output in dist/.
    // help and autocomplete are the plugins' (package.json oclif.plugins)
    const known = new Set([...COMMANDS, ...COMMANDS.map((id) => id.split(' ')[0]!), 'help', 'autocomplete'])
    for (const name of listed) assert.ok(known.has(name), `--help lists ${name}, which has no source in src/commands (stale dist/?)`)
  })

  for (const id of COMMANDS) {
    test(`help ${id} exits 0 and shows examples`, () => {
      const r = runCli(['help', ...id.split(' ')])
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^USAGE$`, 'm'))
      assert.match(r.stdout, new RegExp(`\\$ ${BIN} ${id}\\b`), 'USAGE names the command')
      const examples = section(r.stdout, 'EXAMPLES')
      assert.ok(examples.length > 0, `help ${id} has no EXAMPLES section:\n${r.stdout}`)
      const runs = examples.filter((l) => new RegExp(`^\\s+\\$ ${BIN} `).test(l))
      assert.ok(runs.length >= 1, `help ${id}: no "$ ${BIN} ..." line under EXAMPLES`)
      assert.ok(!/<%|%>/.test(r.stdout), 'an example template was not rendered')
    })
  }

  test('an unknown flag is a usage error (exit 2)', () => {
    const r = runCli(['inspect', 'model.gguf', '--no-such-flag'])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /unknown flag --no-such-flag/)
  })

  test('a missing required argument is a usage error (exit 2)', () => {
    const r = runCli(['inspect'])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /Missing 1 required arg/)
  })

  test('an unknown command exits 2, naming it (the command_not_found hook)', () => {
    const r = runCli(['no-such-command'])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /no-such-command is not a runner command/)
    assert.equal(r.stdout, '')
  })
})
