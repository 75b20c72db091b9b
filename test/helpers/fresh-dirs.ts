// A new empty folder per test under one temporary root, removed when the file's tests are done.
import {mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {after} from 'node:test'

export function freshDirs(prefix: string): {readonly root: string; readonly freshDir: () => string} {
  const root = mkdtempSync(join(tmpdir(), prefix))
  after(() => rmSync(root, {recursive: true, force: true}))
  let n = 0
  const freshDir = () => {
    const d = join(root, `d${n++}`)
    mkdirSync(d)
    return d
  }
  return {root, freshDir}
}
