#!/usr/bin/env node
// The project gates itself: the shipped roster (compat/roster.yaml) against the committed baseline
// (compat/baseline.json), through the built CLI. Without ../shared (the roster's models) it says so
// and skips; otherwise its exit code is compat-matrix's (docs/compat-matrix.md, "Exit codes").
// The report and ledger of the run go to compat/last-report.json and compat/last-ledger.md (ignored).
import {spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {dirname, join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const shared = resolve(root, '..', 'shared')
if (!existsSync(join(shared, 'models', 'stories260K.gguf'))) {
  console.log(`compat gate skipped: the roster's models are not at ${shared}`)
  process.exit(0)
}
const args = [
  join(root, 'bin', 'run.js'),
  'compat-matrix',
  '--roster',
  join(root, 'compat', 'roster.yaml'),
  '--baseline',
  join(root, 'compat', 'baseline.json'),
  '--out',
  join(root, 'compat', 'last-report.json'),
  '--markdown',
  join(root, 'compat', 'last-ledger.md'),
  ...process.argv.slice(2),
]
const r = spawnSync(process.execPath, args, {stdio: 'inherit'})
process.exit(r.status ?? 1)
