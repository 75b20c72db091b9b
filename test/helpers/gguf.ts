// Test helpers over GGUF files.
import {closeSync, openSync, readSync} from 'node:fs'

import type {GgufTensorInfo} from '../../src/lib/gguf/index.js'

/** The stored bytes of one tensor, read from its file. */
export function tensorBytes(t: GgufTensorInfo): Buffer {
  const fd = openSync(t.file, 'r')
  try {
    const b = Buffer.alloc(t.byteSize)
    readSync(fd, b, 0, b.length, t.offset)
    return b
  } finally {
    closeSync(fd)
  }
}
