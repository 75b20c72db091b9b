/**
 * Public face of the cli area: what the commands (src/commands) share, the base command, the
 * sampling flags, load progress, and the Ctrl-C handling the chat UI and the server use too.
 */
export {type ConstraintFlagValues, constraintFlags, constraintFromFlags} from './constraint-flags.js'
export {type DraftFlagValues, draftFlags, speculationFromFlags} from './draft-flags.js'
export {
  type ContextFlagValues,
  contextFlags,
  contextFromFlags,
  loraFlag,
  loraFromFlags,
  modelArg,
  modelFlag,
  modelFlagOrArg,
  modelInputArg,
  modelFromFlagOrArg,
  noGpuFlag,
  refuseGpuLayers,
  swaFullFlag,
  contextShiftFlags,
} from './engine-flags.js'
export {type RopeFlagValues, ropeFlags, ropeFromFlags} from './rope-flags.js'
export {keepIfStillSigned, type SignatureFlagValues, signatureFlags, signaturePolicyFromFlags} from './signature-flags.js'
export {type Interrupt, listenForInterrupt, withInterrupt} from './interrupt.js'
export {ByteProgress, type ByteProgressOptions, formatEta, loadProgress, type ProgressStream} from './progress.js'
export {RunnerCommand} from './runner-command.js'
export {parseNumberFlag, parseSeed, samplingFlags, samplingFromFlags} from './sampling-flags.js'
export {didYouMean} from './did-you-mean.js'
export {describeEnv, envArguments, envVariable, NOT_FROM_ENV} from './flag-env.js'
export {warnLine} from './warning.js'
