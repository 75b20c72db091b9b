/**
 * Shell completion (issue #22): @oclif/plugin-autocomplete is registered, so `runner autocomplete bash`
 * prints its setup instructions and writes a bash completion script into oclif's cache folder (a
 * temporary HOME and XDG_CACHE_HOME here) that lists every command of src/commands with its flags.
 * The outside facts: the plugin's own setup text and the script bash sources.
 */
import assert from 'node:assert/strict'
import {mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after, test} from 'node:test'

import {REPO_ROOT, runCliAsync} from '../helpers/shared.js'

const home = mkdtempSync(join(tmpdir(), 'runner-autocomplete-'))
after(() => rmSync(home, {recursive: true, force: true}))

test('runner autocomplete bash: setup instructions, and a script listing the commands and their flags', async () => {
  const cache = join(home, 'cache')
  const r = await runCliAsync(['autocomplete', 'bash'], {env: {HOME: home, XDG_CACHE_HOME: cache}})
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /Setup Instructions for RUNNER CLI Autocomplete/)
  assert.match(r.stdout, /printf "\$\(runner autocomplete script bash\)" >> ~\/\.bashrc/)

  const script = readFileSync(join(cache, 'runner', 'autocomplete', 'functions', 'bash', 'runner.bash'), 'utf8')
  const lines = new Map(
    script
      .split('\n')
      .filter((l) => /^[a-z-]+( --|$)/.test(l))
      .map((l) => [l.split(' ')[0]!, l.split(' ').slice(1)]),
  )
  const commands = readdirSync(join(REPO_ROOT, 'src', 'commands')).map((f) => f.replace(/\.tsx?$/, ''))
  for (const c of commands) assert.ok(lines.has(c), `${c} is missing from the bash completion`)
  for (const f of ['--model', '--prompt', '--ctx-size', '--temp', '--top-p', '--json']) assert.ok(lines.get('run')!.includes(f), `run ${f}`)
  assert.ok(lines.get('serve')!.includes('--api-key'))
})
