import {closeSync, fstatSync, openSync, readSync} from 'node:fs'

import {GgufError, GgufErrorCode} from './errors.js'

const WINDOW_BYTES = 1 << 20

/**
 * Positioned reads from a file through a small sliding window, so that a header is parsed without
 * ever reading a many-GB file whole. Every read is checked against the file size first: a field
 * that would run past the end is a GGUF_TRUNCATED refusal naming that field.
 */
export class ByteSource {
  readonly size: number
  private readonly fd: number
  private window = Buffer.alloc(0)
  private windowStart = 0

  constructor(readonly path: string) {
    try {
      this.fd = openSync(path, 'r')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code === 'ENOENT' ? GgufErrorCode.notFound : GgufErrorCode.io
      throw new GgufError(code, 'file', 0, (error as Error).message, path)
    }
    const stat = fstatSync(this.fd)
    if (!stat.isFile()) {
      closeSync(this.fd)
      throw new GgufError(GgufErrorCode.io, 'file', 0, 'not a regular file', path)
    }
    this.size = stat.size
  }

  close(): void {
    closeSync(this.fd)
  }

  /** `length` bytes at `offset`; the returned view is only valid until the next call. */
  bytes(offset: number, length: number, field: string): Buffer {
    if (offset + length > this.size) {
      throw new GgufError(GgufErrorCode.truncated, field, offset, `needs ${length} bytes but the file ends at byte ${this.size}`, this.path)
    }
    const end = this.windowStart + this.window.length
    if (offset < this.windowStart || offset + length > end) this.fill(offset, length)
    const at = offset - this.windowStart
    return this.window.subarray(at, at + length)
  }

  private fill(offset: number, length: number): void {
    const want = Math.min(Math.max(length, WINDOW_BYTES), this.size - offset)
    if (this.window.length < want) this.window = Buffer.allocUnsafe(want)
    let got = 0
    while (got < want) {
      const n = readSync(this.fd, this.window, got, want - got, offset + got)
      if (n === 0) throw new GgufError(GgufErrorCode.truncated, 'file', offset + got, 'file shrank while reading', this.path)
      got += n
    }
    this.window = this.window.subarray(0, want)
    this.windowStart = offset
  }
}
