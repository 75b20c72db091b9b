/**
 * The ggml tensor type table: the one owner of every type id, name, block size and block byte size.
 * Reader, writer, quantizer and engine admission all look types up here; the native side's copy is
 * checked against this one by a test.
 *
 * Ids are ggml's `enum ggml_type`. Ids 4, 5, 31-33 and 36-38 were used by types ggml has since removed;
 * they are kept here so that a file using one is refused by name instead of as "unknown".
 */
export interface GgmlTypeInfo {
  /** ggml's type id, as stored in a GGUF tensor info. */
  readonly id: number
  /** ggml's name for the type (`ggml_type_name`), upper case as users see it in llama.cpp. */
  readonly name: string
  /** Number of weights one block holds. */
  readonly blockSize: number
  /** Bytes one block takes on disk. */
  readonly bytesPerBlock: number
  /** True for ids ggml no longer defines (ggml reports their sizes as 0); a tensor of this type is refused. */
  readonly removed?: boolean
}

const table: readonly GgmlTypeInfo[] = [
  {id: 0, name: 'F32', blockSize: 1, bytesPerBlock: 4},
  {id: 1, name: 'F16', blockSize: 1, bytesPerBlock: 2},
  {id: 2, name: 'Q4_0', blockSize: 32, bytesPerBlock: 18}, // f16 d + 16 bytes of nibbles
  {id: 3, name: 'Q4_1', blockSize: 32, bytesPerBlock: 20}, // f16 d, f16 m + 16 bytes of nibbles
  {id: 4, name: 'Q4_2', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 5, name: 'Q4_3', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 6, name: 'Q5_0', blockSize: 32, bytesPerBlock: 22}, // f16 d + 4 bytes high bits + 16 bytes nibbles
  {id: 7, name: 'Q5_1', blockSize: 32, bytesPerBlock: 24}, // f16 d, f16 m + 4 + 16
  {id: 8, name: 'Q8_0', blockSize: 32, bytesPerBlock: 34}, // f16 d + 32 int8
  {id: 9, name: 'Q8_1', blockSize: 32, bytesPerBlock: 36}, // f16 d, f16 s + 32 int8
  {id: 10, name: 'Q2_K', blockSize: 256, bytesPerBlock: 84}, // 16 scales + 64 qs + f16 d + f16 dmin
  {id: 11, name: 'Q3_K', blockSize: 256, bytesPerBlock: 110}, // 32 hmask + 64 qs + 12 scales + f16 d
  {id: 12, name: 'Q4_K', blockSize: 256, bytesPerBlock: 144}, // f16 d, dmin + 12 scales + 128 qs
  {id: 13, name: 'Q5_K', blockSize: 256, bytesPerBlock: 176}, // f16 d, dmin + 12 scales + 32 qh + 128 qs
  {id: 14, name: 'Q6_K', blockSize: 256, bytesPerBlock: 210}, // 128 ql + 64 qh + 16 scales + f16 d
  {id: 15, name: 'Q8_K', blockSize: 256, bytesPerBlock: 292}, // f32 d + 256 int8 + 16 int16 bsums
  {id: 16, name: 'IQ2_XXS', blockSize: 256, bytesPerBlock: 66},
  {id: 17, name: 'IQ2_XS', blockSize: 256, bytesPerBlock: 74},
  {id: 18, name: 'IQ3_XXS', blockSize: 256, bytesPerBlock: 98},
  {id: 19, name: 'IQ1_S', blockSize: 256, bytesPerBlock: 50},
  {id: 20, name: 'IQ4_NL', blockSize: 32, bytesPerBlock: 18},
  {id: 21, name: 'IQ3_S', blockSize: 256, bytesPerBlock: 110},
  {id: 22, name: 'IQ2_S', blockSize: 256, bytesPerBlock: 82},
  {id: 23, name: 'IQ4_XS', blockSize: 256, bytesPerBlock: 136},
  {id: 24, name: 'I8', blockSize: 1, bytesPerBlock: 1},
  {id: 25, name: 'I16', blockSize: 1, bytesPerBlock: 2},
  {id: 26, name: 'I32', blockSize: 1, bytesPerBlock: 4},
  {id: 27, name: 'I64', blockSize: 1, bytesPerBlock: 8},
  {id: 28, name: 'F64', blockSize: 1, bytesPerBlock: 8},
  {id: 29, name: 'IQ1_M', blockSize: 256, bytesPerBlock: 56},
  {id: 30, name: 'BF16', blockSize: 1, bytesPerBlock: 2},
  {id: 31, name: 'Q4_0_4_4', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 32, name: 'Q4_0_4_8', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 33, name: 'Q4_0_8_8', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 34, name: 'TQ1_0', blockSize: 256, bytesPerBlock: 54}, // 48 base-3 qs + 4 qh + f16 d
  {id: 35, name: 'TQ2_0', blockSize: 256, bytesPerBlock: 66}, // 64 qs + f16 d
  {id: 36, name: 'IQ4_NL_4_4', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 37, name: 'IQ4_NL_4_8', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 38, name: 'IQ4_NL_8_8', blockSize: 0, bytesPerBlock: 0, removed: true},
  {id: 39, name: 'MXFP4', blockSize: 32, bytesPerBlock: 17}, // e8m0 scale + 16 bytes of e2m1 nibbles
  {id: 40, name: 'NVFP4', blockSize: 64, bytesPerBlock: 36}, // 4 ue4m3 sub-block scales + 32 bytes of e2m1 nibbles
  {id: 41, name: 'Q1_0', blockSize: 128, bytesPerBlock: 18}, // f16 d + 16 bytes of sign bits
  {id: 42, name: 'Q2_0', blockSize: 64, bytesPerBlock: 18}, // f16 d + 16 bytes of 2-bit values
]

export const GGML_TYPES: ReadonlyMap<number, GgmlTypeInfo> = new Map(table.map((t) => [t.id, t]))
const byName: ReadonlyMap<string, GgmlTypeInfo> = new Map(table.map((t) => [t.name, t]))

/** Every type ggml currently defines, in id order (removed ids left out). */
export const LIVE_GGML_TYPES: readonly GgmlTypeInfo[] = table.filter((t) => !t.removed)

export function ggmlTypeById(id: number): GgmlTypeInfo | undefined {
  return GGML_TYPES.get(id)
}

/** Case-insensitive lookup by ggml name (`q4_0`, `Q4_0`). Removed types are not returned. */
export function ggmlTypeByName(name: string): GgmlTypeInfo | undefined {
  const t = byName.get(name.toUpperCase())
  return t && !t.removed ? t : undefined
}

/** Shorthands for the types code names directly. */
export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ4_NL: 20,
  BF16: 30,
  MXFP4: 39,
} as const

/**
 * Bytes a tensor of `nElements` weights takes, or an error string when the element count does not
 * fill whole blocks. BigInt so that hostile shapes cannot overflow.
 */
export function tensorByteSize(type: GgmlTypeInfo, ne0: bigint, nElements: bigint): bigint | string {
  const block = BigInt(type.blockSize)
  if (ne0 % block !== 0n) return `ne0 ${ne0} is not a multiple of ${type.name}'s block size ${type.blockSize}`
  return (nElements / block) * BigInt(type.bytesPerBlock)
}
