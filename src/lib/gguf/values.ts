import {PRINTABLE_MAX, quoted} from '../util/index.js'

/**
 * GGUF metadata value types and how they are held in memory.
 *
 * Scalars: integers up to 32 bits and floats are `number`, 64-bit integers are `bigint`, bool is
 * `boolean`, string is `string`. Arrays keep their element type so that a read-then-write round trip
 * is byte-identical: numeric arrays are typed arrays, strings `string[]`, bools `boolean[]`, arrays of
 * arrays `GgufArray[]`.
 */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

export type GgufTypedArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array

export interface GgufArray {
  readonly itemType: GgufValueType
  readonly items: GgufTypedArray | readonly string[] | readonly boolean[] | readonly GgufArray[]
}

export type GgufValue = number | bigint | boolean | string | GgufArray

export interface GgufKv {
  readonly key: string
  readonly type: GgufValueType
  readonly value: GgufValue
}

interface FixedTypeInfo {
  readonly name: string
  readonly size: number
  readonly arrayCtor: {new (length: number): GgufTypedArray} | undefined
}

/** Fixed-size value types: bytes each and the typed array that holds an array of them. */
export const FIXED_VALUE_TYPES: ReadonlyMap<GgufValueType, FixedTypeInfo> = new Map([
  [GgufValueType.UINT8, {name: 'u8', size: 1, arrayCtor: Uint8Array}],
  [GgufValueType.INT8, {name: 'i8', size: 1, arrayCtor: Int8Array}],
  [GgufValueType.UINT16, {name: 'u16', size: 2, arrayCtor: Uint16Array}],
  [GgufValueType.INT16, {name: 'i16', size: 2, arrayCtor: Int16Array}],
  [GgufValueType.UINT32, {name: 'u32', size: 4, arrayCtor: Uint32Array}],
  [GgufValueType.INT32, {name: 'i32', size: 4, arrayCtor: Int32Array}],
  [GgufValueType.FLOAT32, {name: 'f32', size: 4, arrayCtor: Float32Array}],
  [GgufValueType.BOOL, {name: 'bool', size: 1, arrayCtor: undefined}],
  [GgufValueType.UINT64, {name: 'u64', size: 8, arrayCtor: BigUint64Array}],
  [GgufValueType.INT64, {name: 'i64', size: 8, arrayCtor: BigInt64Array}],
  [GgufValueType.FLOAT64, {name: 'f64', size: 8, arrayCtor: Float64Array}],
])

export function valueTypeName(type: GgufValueType): string {
  if (type === GgufValueType.STRING) return 'string'
  if (type === GgufValueType.ARRAY) return 'array'
  return FIXED_VALUE_TYPES.get(type)?.name ?? `type ${type}`
}

/** The fewest bytes one value of this type can take in a file (strings: the 8-byte length; arrays: type + length). */
export function minEncodedSize(type: GgufValueType): number {
  if (type === GgufValueType.STRING) return 8
  if (type === GgufValueType.ARRAY) return 12
  return FIXED_VALUE_TYPES.get(type)?.size ?? 1
}

export function isGgufArray(value: GgufValue): value is GgufArray {
  return typeof value === 'object' && value !== null && 'itemType' in value
}

/** A readable, bounded, printable rendering of a value for `inspect` and error messages. */
export function formatValue(value: GgufValue, maxItems = 8): string {
  if (typeof value === 'string') return quoted(value, PRINTABLE_MAX)
  if (typeof value === 'number') return formatNumber(value)
  if (typeof value !== 'object') return String(value)
  const items = Array.from(value.items as ArrayLike<unknown>).slice(0, maxItems) as GgufValue[]
  const shown = items.map((v) => formatValue(v, maxItems)).join(', ')
  const more = value.items.length > maxItems ? `, … (${value.items.length} items)` : ''
  return `[${shown}${more}]`
}

/** Shortest text that reads back to the same float32 (metadata floats are mostly f32: 1e-5, not 0.0000099999997). */
function formatNumber(v: number): string {
  if (Number.isInteger(v) || !Number.isFinite(v) || Math.fround(v) !== v) return String(v)
  for (let p = 1; p < 9; p++) {
    const s = v.toPrecision(p)
    if (Math.fround(Number(s)) === v) return String(Number(s))
  }
  return String(v)
}

/** JSON-safe form of a value (bigint becomes a number when exact, else a string). */
export function valueToJson(value: GgufValue): unknown {
  if (typeof value === 'bigint') return bigintToJson(value)
  if (typeof value !== 'object') return value
  if (value.itemType === GgufValueType.ARRAY) return (value.items as readonly GgufArray[]).map(valueToJson)
  return Array.from(value.items as ArrayLike<unknown>, (v) => (typeof v === 'bigint' ? bigintToJson(v) : v))
}

function bigintToJson(v: bigint): number | string {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v.toString()
}
