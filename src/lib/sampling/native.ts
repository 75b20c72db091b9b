/**
 * The native sampler (native/src/sample/sample.c) behind a typed wrapper. The addon functions are
 * registered by native/addon/sampler_binding.cc; this file is their one TypeScript description.
 */
import {loadAddon, type NativeSamplingParams} from '../engine/addon.js'
import {ExitCode, type ExitCodeValue, RunnerError} from '../errors.js'
import type {SamplingOptions} from './params.js'

/** Opaque handle (a Node-API External) owned by the addon. */
export type SamplerHandle = {readonly __brand: 'SamplerHandle'}

/** The parameter object samplerCreate reads: one description, shared with generate. */
export type NativeSamplerParams = NativeSamplingParams

/** One sampled token. */
export interface SampleResult {
  /** The token, or -1 when every logit was banned or not finite. */
  readonly token: number
  /** log-softmax of the token over the whole vocabulary after bias and penalties; null unless logprobs. */
  readonly logprob: number | null
  /** The most likely tokens and their log-probabilities, best first (ties: lower id first). */
  readonly top: ReadonlyArray<readonly [number, number]>
}

/** What sampler_binding.cc adds to the addon. */
export interface SamplerAddon {
  samplerCreate(params: NativeSamplerParams, nVocab: number): SamplerHandle
  samplerFree(handle: SamplerHandle): void
  samplerAccept(handle: SamplerHandle, token: number): void
  samplerSample(handle: SamplerHandle, logits: Float32Array): SampleResult
  /** Test hooks: the generator's parts, to check them against the documented algorithm. */
  samplerTestSplitMix64(seed: bigint, n: number): BigUint64Array
  samplerTestXoshiro256ss(state: readonly [bigint, bigint, bigint, bigint], n: number): BigUint64Array
  samplerTestGenerator(seed: bigint, n: number): BigUint64Array
}

/** The addon's sampler functions; throws ADDON_STALE if the build predates them. */
export function samplerAddon(): SamplerAddon {
  const addon = loadAddon() as unknown as Partial<Record<keyof SamplerAddon, unknown>>
  if (typeof addon.samplerCreate !== 'function' || typeof addon.samplerSample !== 'function') {
    throw new RunnerError(
      'ADDON_STALE',
      'The native engine addon has no sampler (samplerCreate): it was built from older sources. Rebuild it with `npm run build:native`.',
      ExitCode.backendUnavailable,
    )
  }
  return addon as unknown as SamplerAddon
}

const EXIT_BY_CODE: Readonly<Record<string, ExitCodeValue>> = {
  SAMPLER_BAD_PARAM: ExitCode.usage,
  SAMPLER_BAD_ARGUMENT: ExitCode.failure,
  SAMPLER_FREED: ExitCode.failure,
  SAMPLER_INTERNAL: ExitCode.failure,
}

/** An error thrown by the addon as a RunnerError with its code and message. */
function samplerError(error: unknown): unknown {
  const code = (error as {code?: unknown})?.code
  if (typeof code === 'string' && code in EXIT_BY_CODE) {
    return new RunnerError(code, (error as Error).message, EXIT_BY_CODE[code], {cause: error})
  }
  return error
}

function call<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw samplerError(error)
  }
}

export interface NativeSampler {
  readonly nVocab: number
  /** The seed in use (resolved options always carry one). */
  readonly seed: bigint
  /** Record a token in the penalty window: every prompt token, then every generated one. */
  accept(token: number): void
  /** Choose the next token from logits (length nVocab); does not accept it. */
  sample(logits: Float32Array): SampleResult
  /** Free the native sampler now; later accept/sample calls are refused (SAMPLER_FREED). Idempotent. */
  dispose(): void
}

export interface NativeSamplerExtras {
  /** Tokens the penalties never touch: the model's end-of-generation tokens. */
  exemptTokens?: readonly number[]
}

/** The sampler for resolved options (resolveSamplingOptions) over a vocabulary of nVocab tokens. */
export function createNativeSampler(opts: SamplingOptions, nVocab: number, extras: NativeSamplerExtras = {}): NativeSampler {
  if (!Number.isInteger(nVocab) || nVocab < 1 || nVocab > 2 ** 31 - 1) {
    throw new RunnerError('SAMPLING_BAD_OPTION', `nVocab = ${nVocab} must be an integer in [1, 2^31).`, ExitCode.usage)
  }
  for (const token of opts.logitBias.keys()) {
    if (token >= nVocab) {
      throw new RunnerError(
        'SAMPLING_BAD_OPTION',
        `Sampling option logitBias names token ${token}, but the vocabulary has ${nVocab} tokens (ids 0..${nVocab - 1}).`,
        ExitCode.usage,
      )
    }
  }
  const addon = samplerAddon()
  const handle = call(() =>
    addon.samplerCreate(
      {
        temperature: opts.temperature,
        topK: opts.topK,
        topP: opts.topP,
        minP: opts.minP,
        repeatPenalty: opts.repeatPenalty,
        presencePenalty: opts.presencePenalty,
        frequencyPenalty: opts.frequencyPenalty,
        penaltyLastN: opts.penaltyLastN,
        seed: opts.seed,
        logprobs: opts.logprobs,
        nTopLogprobs: opts.topLogprobs,
        logitBias: opts.logitBias,
        exemptTokens: extras.exemptTokens ?? [],
      },
      nVocab,
    ),
  )
  let disposed = false
  return {
    nVocab,
    seed: opts.seed,
    accept: (token) => call(() => addon.samplerAccept(handle, token)),
    sample: (logits) => call(() => addon.samplerSample(handle, logits)),
    dispose() {
      if (disposed) return
      disposed = true
      call(() => addon.samplerFree(handle))
    },
  }
}
