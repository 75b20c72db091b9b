#!/usr/bin/env node
// node-llama-cpp (a devDependency, the test oracle) lists prebuilt binaries for every platform as
// optional dependencies. The registry these machines reach does not serve the macOS, Windows and
// riscv64 ones, so `npm install` leaves them out of package-lock.json, and then `npm ci` refuses
// the lock file as out of sync ("Missing: @node-llama-cpp/win-x64@ from lock file"). Entries that
// name their os/cpu let npm ci see them, skip them on this platform, and install the rest.
// Run this after any `npm install` that rewrites package-lock.json.
import {readFileSync, writeFileSync} from 'node:fs'

const VERSION = '3.22.1'
const PLATFORMS = {
  'linux-riscv64': [['linux'], ['riscv64']],
  'mac-arm64-metal': [['darwin'], ['arm64', 'x64']],
  'mac-x64': [['darwin'], ['x64']],
  'win-arm64': [['win32'], ['arm64', 'x64']],
  'win-x64': [['win32'], ['x64']],
  'win-x64-cuda': [['win32'], ['x64']],
  'win-x64-cuda-ext': [['win32'], ['x64']],
  'win-x64-vulkan': [['win32'], ['x64']],
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'))
let added = 0
for (const [name, [os, cpu]] of Object.entries(PLATFORMS)) {
  const key = `node_modules/@node-llama-cpp/${name}`
  if (lock.packages[key]) continue
  lock.packages[key] = {version: VERSION, cpu, dev: true, license: 'MIT', optional: true, os, engines: {node: '>=20.0.0'}}
  added++
}
const sorted = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)),
)
writeFileSync('package-lock.json', `${JSON.stringify({...lock, packages: sorted}, null, 2)}\n`)
console.log(`package-lock.json: added ${added} platform entries`)
