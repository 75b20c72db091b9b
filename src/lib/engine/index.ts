/**
 * Public face of the engine area: what every other area uses. Only ./addon.ts loads the native
 * addon (./test-addon.ts the test one); the rest of this folder wraps it.
 */
export {
  ADDON_ABI_VERSION,
  addonPath,
  amxStatus,
  CPU_FEATURE_NAMES,
  cpuFeatures,
  findPackageRoot,
  KERNEL_VARIANTS,
  loadAddon,
} from './addon.js'
export type {CpuFeatureName, CpuFeatures, KernelTile, KernelVariant, NativeAddon} from './addon.js'
export {
  AMX_ENV,
  AMX_MODES,
  AMX_STATES,
  amxMode,
  type AmxMode,
  type AmxState,
  type AmxStatus,
  CPU_CAP_ENV,
  CPU_LEVELS,
  cpuCap,
  type CpuLevel,
  describeKernels,
  effectiveCpuLevel,
  type KernelSet,
  kernelSet,
} from './cpu-level.js'
export {engineError} from './errors.js'
export {
  kernelTraits,
  kernelTypeId,
  type KernelTypeRef,
  type KernelTypeTraits,
  loraMergeRows,
  quantizeRef,
  rowBytes,
  toFloat,
  typeTraits,
} from './kernels.js'
export {
  contextSize,
  type ContextSizeOptions,
  DEFAULT_CONTEXT_CAP,
  defaultContextSize,
  MAX_BATCH_SIZE,
  MAX_CONTEXT_SIZE,
} from './context-size.js'
export {
  type AdapterSummary,
  adapterSummary,
  type AttachedAdapter,
  type LoadOptions,
  Model,
  nativeConfig,
  nativeLoraPair,
  nativeTensor,
  verifySignatureBeforeLoad,
} from './model.js'
// Everything context.ts and session.ts export (the generation loop's owner reshapes them).
export * from './context.js'
export * from './decode-group.js'
export * from './draft.js'
export {defaultKvFigures, describeKv, type KvCacheShape, type KvCacheSize, kvCacheSize} from './kv-size.js'
export * from './session.js'
export {type OptimizerStep, TRAIN_VECTORS, type TrainTarget, Trainer, type TrainerOptions, type TrainVector} from './trainer.js'
export {GrammarMatcher, type MaskResult, maskAllows, NativeGrammar, tokenBytes} from './grammar.js'
export {createNativeSampler, type NativeSampler, type NativeSamplerExtras, type SampleResult} from './sampler.js'
