/** Public face of sampling: the options (defaults, validation, resolution). The native sampler that
 * uses them is the engine's (src/lib/engine: createNativeSampler). */
export {MAX_PENALTY_LAST_N, MAX_TOP_LOGPROBS, SAMPLING_DEFAULTS, resolveSamplingOptions} from './params.js'
export type {SamplingInput, SamplingNames, SamplingOptions} from './params.js'
