import {createHash} from 'node:crypto'
import {readdir, readFile} from 'node:fs/promises'
import {cpus} from 'node:os'
import {dirname, join, relative, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

import {ADDON_ABI_VERSION, addonPath, cpuFeatures, findPackageRoot, effectiveCpuLevel} from '../engine/index.js'
import {sha256File} from '../util/index.js'
import type {ReceiptBody} from './format.js'

/** The source root this module was loaded from: dist/src when compiled, src under tsx. */
const CODE_ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))))
const CODE_FILE = /\.(js|mjs|ts|tsx)$/

async function codeFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, {withFileTypes: true})
  const nested = await Promise.all(
    entries.map(async (e) => {
      const p = join(dir, e.name)
      if (e.isDirectory()) return codeFiles(p)
      return CODE_FILE.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : []
    }),
  )
  return nested.flat()
}

/**
 * sha256 of the running JavaScript: over the sorted lines "<path>\0<sha256 of file>\n" of every
 * code file under the source root, so any changed, added or removed file changes it.
 */
export async function packageSha256(root = CODE_ROOT): Promise<string> {
  const files = (await codeFiles(root))
    .map((p) => ({rel: relative(root, p).split(sep).join('/'), p}))
    .sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))
  const hash = createHash('sha256')
  for (const f of files)
    hash.update(
      `${f.rel}\0${createHash('sha256')
        .update(await readFile(f.p))
        .digest('hex')}\n`,
    )
  return hash.digest('hex')
}

async function runnerVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(join(findPackageRoot(), 'package.json'), 'utf8')) as {version?: unknown}
  return String(pkg.version ?? 'unknown')
}

/** The build that produced a receipt: addon binary, JavaScript, kernel level and machine. */
export async function engineIdentity(): Promise<ReceiptBody['engine']> {
  const [runner, addonSha256, pkgSha256] = await Promise.all([runnerVersion(), sha256File(addonPath()), packageSha256()])
  return {
    runner,
    abi: ADDON_ABI_VERSION,
    addonSha256,
    packageSha256: pkgSha256,
    cpuLevel: effectiveCpuLevel(cpuFeatures()),
    cpu: cpus()[0]?.model ?? 'unknown',
    platform: `${process.platform}-${process.arch}`,
  }
}
