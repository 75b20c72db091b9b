/**
 * UTF-8 plumbing. llama.cpp tokenizes and detokenizes bytes; JS strings are UTF-16. Text goes in as
 * UTF-8 (a lone surrogate, which has no UTF-8 form, becomes U+FFFD exactly as TextEncoder writes it),
 * and pieces come out as bytes, because one token may hold part of a character (byte tokens).
 */
const encoder = new TextEncoder()
// ignoreBOM: a leading U+FEFF is text (llama.cpp keeps it); by default TextDecoder would drop it.
const decoder = new TextDecoder('utf-8', {ignoreBOM: true})

export function utf8Encode(text: string): Uint8Array {
  return encoder.encode(text)
}

/** Bytes → string; an invalid or incomplete sequence becomes U+FFFD (WHATWG maximal-subpart rule). */
export function utf8Decode(bytes: Uint8Array): string {
  return decoder.decode(bytes)
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** The string TextEncoder would encode: every lone surrogate replaced by U+FFFD. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD')
}

/** A growable byte buffer for concatenating token pieces. */
export class ByteBuffer {
  private buf: Uint8Array
  private len = 0

  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity)
  }

  get length(): number {
    return this.len
  }

  push(bytes: Uint8Array, skip = 0): void {
    const n = bytes.length - skip
    if (n <= 0) return
    this.reserve(n)
    this.buf.set(skip === 0 ? bytes : bytes.subarray(skip), this.len)
    this.len += n
  }

  /** The bytes so far (a view; copy it before pushing more if you keep it). */
  view(): Uint8Array {
    return this.buf.subarray(0, this.len)
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return
    let cap = this.buf.length * 2
    while (cap < this.len + n) cap *= 2
    const next = new Uint8Array(cap)
    next.set(this.buf.subarray(0, this.len))
    this.buf = next
  }
}
