export {
  FILE_TYPE,
  parseTypePlan,
  planQuantization,
  QUANTIZE_MIXES,
  QUANTIZE_TYPES,
  type QuantizeOptions,
  type TensorDecision,
  type TypePlanRule,
} from './plan.js'
export {quantizeModel, type QuantizeSummary} from './quantize.js'
export {
  parseRemovals,
  planRemovals,
  type RemovalPlan,
  type RemovalSummary,
  removeSublayers,
  type SublayerRemoval,
} from './remove-sublayer.js'
export {formatQuantizeSummary, quantizeFile, type QuantizeFileOptions, type QuantizeFileResult, quantizeJson} from './quantize-file.js'
export {QUANTIZE_EXAMPLES} from './examples.js'
