/**
 * The native sampler (runner.h, "sampling") behind a typed wrapper: a sampler over resolved sampling
 * options (src/lib/sampling, which owns the options and knows nothing of the engine) and a
 * vocabulary. The engine's own generate loop samples natively without it; this serves callers that
 * sample from logits they hold (and the tests).
 */
import {ExitCode, RunnerError} from '../errors.js'
import type {SamplingOptions} from '../sampling/index.js'
import {loadAddon, type NativeSampleResult} from './addon.js'
import {engineError} from './errors.js'

/** One sampled token. */
export type SampleResult = NativeSampleResult

function call<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw engineError(error)
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
  const addon = loadAddon()
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
