/** A model file's sha256, hashed once per run even though the matrix and the load check both ask (big files take seconds). */
import {statSync} from 'node:fs'

import {sha256File} from '../util/index.js'

const cache = new Map<string, Promise<string>>()

export function fileSha256(path: string): Promise<string> {
  const s = statSync(path)
  const key = `${path}\u0000${s.size}\u0000${s.mtimeMs}` // a file replaced during the run is hashed again
  let p = cache.get(key)
  if (!p) {
    p = sha256File(path)
    cache.set(key, p)
    p.catch(() => cache.delete(key))
  }
  return p
}
