export {GgufError, GgufErrorCode} from './errors.js'
export {GgufMetadata, type IntRange} from './metadata.js'
export {alignUp, GGUF_DEFAULT_ALIGNMENT, GGUF_LIMITS, GGUF_MAX_DIMS, type GgufFile, type GgufTensorInfo, readGgufFile} from './reader.js'
export {renderMetadata, renderSummary, renderTensors, renderValue} from './render.js'
export {type GgufModelFiles, readGgufModel, shardPaths} from './shards.js'
export {dominantType, modelToJson, type ModelSummary, summarizeModel} from './summary.js'
export {GGML_TYPES, GgmlType, type GgmlTypeInfo, ggmlTypeById, ggmlTypeByName, LIVE_GGML_TYPES, tensorByteSize} from './types.js'
export {formatValue, type GgufArray, type GgufKv, type GgufValue, GgufValueType, isGgufArray, valueToJson, valueTypeName} from './values.js'
export {
  type GgufWriteInput,
  type GgufWriteOptions,
  type GgufWriteResult,
  type GgufWriteTensor,
  type TensorData,
  writeGguf,
} from './writer.js'
