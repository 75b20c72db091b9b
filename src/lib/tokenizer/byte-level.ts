/**
 * GPT-2's byte-level alphabet (bytes_to_unicode): every byte is shown as one printable character, so
 * a byte-level BPE vocabulary is a set of ordinary strings. Printable Latin-1 bytes (0x21-0x7E,
 * 0xA1-0xAC, 0xAE-0xFF) stand for themselves; the other 68 bytes take U+0100 upwards in byte order
 * (space is U+0120 'Ġ', newline U+010A 'Ċ').
 */
function buildAlphabet(): {byteToChar: string[]; charToByte: Map<string, number>} {
  const byteToChar: string[] = new Array<string>(256)
  const selfMapped = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  let next = 0
  for (let b = 0; b < 256; b++) {
    byteToChar[b] = String.fromCharCode(selfMapped(b) ? b : 256 + next++)
  }
  const charToByte = new Map<string, number>()
  byteToChar.forEach((c, b) => charToByte.set(c, b))
  return {byteToChar, charToByte}
}

const {byteToChar: BYTE_TO_CHAR, charToByte: CHAR_TO_BYTE} = buildAlphabet()

/** UTF-8 bytes → their byte-level spelling (one UTF-16 unit per byte: all are in the BMP). */
export function byteLevelEncode(bytes: Uint8Array): string {
  let s = ''
  for (const b of bytes) s += BYTE_TO_CHAR[b]!
  return s
}

/** One character of the byte-level alphabet → its byte, or undefined for any other character. */
export function byteLevelCharToByte(ch: string): number | undefined {
  return CHAR_TO_BYTE.get(ch)
}

/** The byte-level character of one byte. */
export function byteLevelChar(byte: number): string {
  return BYTE_TO_CHAR[byte & 0xff]!
}
