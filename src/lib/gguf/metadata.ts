import {GgufError, GgufErrorCode} from './errors.js'
import {type GgufArray, type GgufKv, GgufValueType, isGgufArray, valueTypeName} from './values.js'

const INTEGER_TYPES = new Set([
  GgufValueType.UINT8,
  GgufValueType.INT8,
  GgufValueType.UINT16,
  GgufValueType.INT16,
  GgufValueType.UINT32,
  GgufValueType.INT32,
  GgufValueType.UINT64,
  GgufValueType.INT64,
])
const FLOAT_TYPES = new Set([GgufValueType.FLOAT32, GgufValueType.FLOAT64])

export interface IntRange {
  min?: number
  max?: number
}

/**
 * Typed, checked access to a model's metadata. Every getter names the key (and its byte offset in the
 * file) when it refuses: missing, wrong type, negative where a count is expected, out of range, or
 * not finite. Integer getters accept any integer width, as writers differ (u32 vs i32 vs u64), but
 * never a float or a string.
 */
export class GgufMetadata {
  constructor(
    private readonly kvs: ReadonlyMap<string, GgufKv>,
    private readonly offsets: ReadonlyMap<string, number> = new Map(),
    private readonly file?: string,
  ) {}

  has(key: string): boolean {
    return this.kvs.has(key)
  }

  private fail(code: string, key: string, detail: string): never {
    throw new GgufError(code, key, this.offsets.get(key) ?? 0, detail, this.file)
  }

  private need(key: string): GgufKv {
    const kv = this.kvs.get(key)
    if (!kv) this.fail(GgufErrorCode.metaMissing, key, 'required metadata key is missing')
    return kv
  }

  /** A non-negative integer within [min, max] (defaults: 0 and 2^53 - 1). */
  uint(key: string, range: IntRange = {}): number {
    return this.integer(key, {min: 0, ...range})
  }

  uintOr(key: string, fallback: number, range: IntRange = {}): number {
    return this.has(key) ? this.uint(key, range) : fallback
  }

  integer(key: string, {min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER}: IntRange = {}): number {
    const kv = this.need(key)
    if (!INTEGER_TYPES.has(kv.type)) this.fail(GgufErrorCode.metaType, key, `expected an integer, found ${valueTypeName(kv.type)}`)
    const v = kv.value as number | bigint
    if (v < min || v > max) this.fail(GgufErrorCode.metaRange, key, `${v} is outside [${min}, ${max}]`)
    return Number(v)
  }

  /** A finite float (f32 or f64; integers are accepted as exact values) within [min, max]. */
  float(key: string, {min = -Infinity, max = Infinity}: {min?: number; max?: number} = {}): number {
    const kv = this.need(key)
    if (!FLOAT_TYPES.has(kv.type) && !INTEGER_TYPES.has(kv.type)) {
      this.fail(GgufErrorCode.metaType, key, `expected a number, found ${valueTypeName(kv.type)}`)
    }
    const v = Number(kv.value)
    if (!Number.isFinite(v)) this.fail(GgufErrorCode.metaRange, key, `${v} is not finite`)
    if (v < min || v > max) this.fail(GgufErrorCode.metaRange, key, `${v} is outside [${min}, ${max}]`)
    return v
  }

  floatOr(key: string, fallback: number, range: {min?: number; max?: number} = {}): number {
    return this.has(key) ? this.float(key, range) : fallback
  }

  string(key: string): string {
    const kv = this.need(key)
    if (kv.type !== GgufValueType.STRING) this.fail(GgufErrorCode.metaType, key, `expected a string, found ${valueTypeName(kv.type)}`)
    return kv.value as string
  }

  stringOr<T>(key: string, fallback: T): string | T {
    return this.has(key) ? this.string(key) : fallback
  }

  bool(key: string): boolean {
    const kv = this.need(key)
    if (kv.type !== GgufValueType.BOOL) this.fail(GgufErrorCode.metaType, key, `expected a bool, found ${valueTypeName(kv.type)}`)
    return kv.value as boolean
  }

  boolOr(key: string, fallback: boolean): boolean {
    return this.has(key) ? this.bool(key) : fallback
  }

  /** An array whose items are of `itemType`, with an optional exact length. */
  array(key: string, itemType: GgufValueType, length?: number): GgufArray {
    const kv = this.need(key)
    if (!isGgufArray(kv.value)) this.fail(GgufErrorCode.metaType, key, `expected an array, found ${valueTypeName(kv.type)}`)
    if (kv.value.itemType !== itemType) {
      this.fail(
        GgufErrorCode.metaType,
        key,
        `expected an array of ${valueTypeName(itemType)}, found an array of ${valueTypeName(kv.value.itemType)}`,
      )
    }
    if (length !== undefined && kv.value.items.length !== length) {
      this.fail(GgufErrorCode.metaRange, key, `has ${kv.value.items.length} items, expected ${length}`)
    }
    return kv.value
  }

  stringArray(key: string, length?: number): readonly string[] {
    return this.array(key, GgufValueType.STRING, length).items as readonly string[]
  }
}
