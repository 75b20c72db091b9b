/**
 * Commands are thin (ARCHITECTURE.md, house rule 2; issue #15): parse flags, call one library
 * function, render. The measurable part of that rule: no file in src/commands/ is over 100 lines.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'node:test'

import {REPO_ROOT} from '../helpers/shared.js'

const COMMANDS = join(REPO_ROOT, 'src', 'commands')
const MAX_LINES = 100

test(`every command file is at most ${MAX_LINES} lines`, () => {
  const files = readdirSync(COMMANDS).filter((f) => /\.tsx?$/.test(f))
  assert.ok(files.length >= 9, `found the commands (${files.join(', ')})`)
  const over = files
    .map((f) => ({f, lines: readFileSync(join(COMMANDS, f), 'utf8').split('\n').length - 1}))
    .filter(({lines}) => lines > MAX_LINES)
  assert.deepEqual(over, [], 'move logic into src/lib/<area>/ (flag tables included) until the command only parses, calls and renders')
})
