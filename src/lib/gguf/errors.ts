import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'

/**
 * Every refusal of a GGUF file. `code` is stable (tests and scripts match on it), `offset` is the byte
 * offset in the file of the field that was wrong, `field` names it (`tensor_count`, `kv[3].key`,
 * `tensor 'blk.0.attn_q.weight'.ne[1]`). The field holds names from the file, so it is kept printable
 * (util/printable.ts) in the message and in `field` alike: both are printed, the latter in --json.
 */
export class GgufError extends RunnerError {
  readonly offset: number
  readonly field: string
  readonly file: string | undefined

  /** `exit`: invalidModel for a broken file; unsupported for a valid file asking for what runner does not do. */
  constructor(code: string, field: string, offset: number, detail: string, file?: string, exit: ExitCodeValue = ExitCode.invalidModel) {
    const shown = printable(field)
    super(code, `${file ? `${printable(file, {max: 1000})}: ` : ''}${shown} at byte ${offset}: ${detail}`, exit)
    this.name = 'GgufError'
    this.field = shown
    this.offset = offset
    this.file = file
  }
}

/** The stable codes, one place so that docs and tests can list them. */
export const GgufErrorCode = {
  notFound: 'GGUF_NOT_FOUND',
  io: 'GGUF_IO',
  badMagic: 'GGUF_BAD_MAGIC',
  bigEndian: 'GGUF_BIG_ENDIAN',
  unsupportedVersion: 'GGUF_UNSUPPORTED_VERSION',
  truncated: 'GGUF_TRUNCATED',
  tensorCount: 'GGUF_TENSOR_COUNT',
  kvCount: 'GGUF_KV_COUNT',
  stringLength: 'GGUF_STRING_LENGTH',
  badUtf8: 'GGUF_BAD_UTF8',
  badValueType: 'GGUF_BAD_VALUE_TYPE',
  arrayLength: 'GGUF_ARRAY_LENGTH',
  arrayDepth: 'GGUF_ARRAY_DEPTH',
  badBool: 'GGUF_BAD_BOOL',
  duplicateKey: 'GGUF_DUPLICATE_KEY',
  badAlignment: 'GGUF_BAD_ALIGNMENT',
  badNDims: 'GGUF_BAD_N_DIMS',
  badDim: 'GGUF_BAD_DIM',
  shapeOverflow: 'GGUF_SHAPE_OVERFLOW',
  unknownType: 'GGUF_UNKNOWN_TYPE',
  removedType: 'GGUF_REMOVED_TYPE',
  blockMultiple: 'GGUF_BLOCK_MULTIPLE',
  misalignedTensor: 'GGUF_MISALIGNED_TENSOR',
  tensorOutOfFile: 'GGUF_TENSOR_OUT_OF_FILE',
  tensorOverlap: 'GGUF_TENSOR_OVERLAP',
  duplicateTensor: 'GGUF_DUPLICATE_TENSOR',
  tensorName: 'GGUF_TENSOR_NAME',
  badKey: 'GGUF_BAD_KEY',
  shardMissing: 'GGUF_SHARD_MISSING',
  shardMismatch: 'GGUF_SHARD_MISMATCH',
  metaMissing: 'GGUF_META_MISSING',
  metaType: 'GGUF_META_TYPE',
  metaRange: 'GGUF_META_RANGE',
  writeOverwritesInput: 'GGUF_WRITE_OVERWRITES_INPUT',
  writeBadTensor: 'GGUF_WRITE_BAD_TENSOR',
  writeBadValue: 'GGUF_WRITE_BAD_VALUE',
} as const
