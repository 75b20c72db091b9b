/** Public face of sampling: options (defaults, validation) and the native sampler. */
export {MAX_PENALTY_LAST_N, MAX_TOP_LOGPROBS, SAMPLING_DEFAULTS, resolveSamplingOptions} from './params.js'
export type {SamplingInput, SamplingOptions} from './params.js'
export {createNativeSampler} from './native.js'
export type {NativeSampler, NativeSamplerExtras, SampleResult} from './native.js'
