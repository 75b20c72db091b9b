#!/usr/bin/env node
// Runs every test/**/*.test.ts with Node's own test runner (TypeScript through tsx).
// Node 20's --test does not expand globs itself, so the file list is built here.
// Extra arguments are passed to node --test (e.g. --test-name-pattern=inspect).
import {spawnSync} from 'node:child_process'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'

function collect(dir) {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => {
    const p = join(dir, e.name)
    if (e.isDirectory()) return collect(p)
    return e.name.endsWith('.test.ts') ? [p] : []
  })
}

const files = collect('test').sort()
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...process.argv.slice(2), ...files], {stdio: 'inherit'})
process.exit(result.status ?? 1)
