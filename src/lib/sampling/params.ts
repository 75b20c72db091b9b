/**
 * Sampling options: the TypeScript side of native/src/sample/sample.h. One owner for the defaults
 * and the accepted ranges; the native sampler checks the same ranges again (defence in depth).
 *
 * Defaults are llama.cpp's `common_params_sampling` (common/common.h, ggml-org/llama.cpp, read at
 * commit 001d906a): temp 0.80, top_k 40, top_p 0.95, min_p 0.05, penalty_last_n 64,
 * penalty_repeat 1.00, penalty_freq 0.00, penalty_present 0.00, n_probs 0. The seed is drawn at
 * random when not given and is always part of the resolved options, so a run can be repeated.
 */
import {randomBytes} from 'node:crypto'

import {ExitCode, RunnerError} from '../errors.js'
import {preview, quoted} from '../util/index.js'

/** native/src/sample/sample.h RUNNER_MAX_TOP_LOGPROBS. */
export const MAX_TOP_LOGPROBS = 20
/** native/src/sample/sample.h RUNNER_MAX_PENALTY_LAST_N. */
export const MAX_PENALTY_LAST_N = 1 << 24
const FLOAT32_MAX = 3.4028234663852886e38
const UINT64_MAX = (1n << 64n) - 1n

/** Resolved options: every field present and checked. */
export interface SamplingOptions {
  /** Divides the logits after truncation; 0 picks the most likely token (greedy). */
  readonly temperature: number
  /** Keep the k most likely tokens; 0: off. */
  readonly topK: number
  /** Keep the smallest most-likely prefix whose probability reaches topP; 1: off. */
  readonly topP: number
  /** Keep tokens whose probability is at least minP times the top one's; 0: off. */
  readonly minP: number
  /** llama.cpp's repetition penalty: positive logits divided by it, others multiplied; 1: off. */
  readonly repeatPenalty: number
  /** Subtracted once from the logit of every token in the window; 0: off. */
  readonly presencePenalty: number
  /** Subtracted count times from the logit of every token in the window; 0: off. */
  readonly frequencyPenalty: number
  /** How many of the most recent tokens (prompt included) the penalties look at; 0: off. */
  readonly penaltyLastN: number
  /** Seed of the generator (SplitMix64 → xoshiro256**, docs/sampling.md); any 64-bit value. */
  readonly seed: bigint
  /** Report the chosen token's log-probability. */
  readonly logprobs: boolean
  /** Also report this many most likely tokens with their log-probabilities (needs logprobs). */
  readonly topLogprobs: number
  /** Added to a token's logit before everything else; -Infinity bans the token. */
  readonly logitBias: ReadonlyMap<number, number>
}

/** What a caller may pass: any subset; the seed may be a number, the bias a Map, pairs or a record. */
export interface SamplingInput {
  temperature?: number
  topK?: number
  topP?: number
  minP?: number
  repeatPenalty?: number
  presencePenalty?: number
  frequencyPenalty?: number
  penaltyLastN?: number
  seed?: bigint | number
  logprobs?: boolean
  topLogprobs?: number
  logitBias?: ReadonlyMap<number, number> | ReadonlyArray<readonly [number, number]> | Readonly<Record<string, number>>
}

export const SAMPLING_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.95,
  minP: 0.05,
  repeatPenalty: 1.0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  penaltyLastN: 64,
  logprobs: false,
  topLogprobs: 0,
} as const

const KNOWN_KEYS: ReadonlySet<string> = new Set<keyof SamplingInput>([
  'temperature',
  'topK',
  'topP',
  'minP',
  'repeatPenalty',
  'presencePenalty',
  'frequencyPenalty',
  'penaltyLastN',
  'seed',
  'logprobs',
  'topLogprobs',
  'logitBias',
])

/**
 * What a caller calls each option, for refusals: the CLI passes its flags ({temperature: '--temp'}),
 * and a refusal reads `--temp -1: must be …`; an option without a name here is named as the library
 * names it (`Sampling option temperature = -1 must be …`, which the HTTP routes map to their fields).
 */
export type SamplingNames = Readonly<Partial<Record<keyof SamplingInput, string>>>

/** A refused option, with its parts, so a caller's naming table can name it again. */
class SamplingOptionError extends RunnerError {
  constructor(
    /** As the library names it: `topP`, `logitBias[5]`. */
    readonly option: string,
    readonly shown: string,
    readonly rule: string,
  ) {
    super('SAMPLING_BAD_OPTION', `Sampling option ${option} = ${shown} ${rule}.`, ExitCode.usage)
  }

  /** The same refusal by the caller's name for the option (`--top-p 2: must be …`), if it has one. */
  named(names: SamplingNames): RunnerError {
    const key = this.option.split(/[ []/)[0] as keyof SamplingInput
    const given = Object.hasOwn(names, key) ? names[key] : undefined
    if (given === undefined) return this
    const detail = this.option === key ? '' : ` (${this.option})`
    return new RunnerError('SAMPLING_BAD_OPTION', `${given}${detail} ${this.shown}: ${this.rule}.`, ExitCode.usage)
  }
}

function refuse(name: string, value: unknown, rule: string): never {
  throw new SamplingOptionError(name, preview(value), rule)
}

/** A finite number within float32 range (the native sampler stores floats). */
function float(name: string, value: unknown, ok: (x: number) => boolean, rule: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > FLOAT32_MAX || !ok(value)) {
    refuse(name, value, rule)
  }
  return value
}

function integer(name: string, value: unknown, min: number, max: number, rule: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) refuse(name, value, rule)
  return value
}

function resolveSeed(value: unknown): bigint {
  if (value === undefined) return randomBytes(8).readBigUInt64LE(0)
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) {
      refuse('seed', value, 'must be an integer in [0, 2^53) as a number, or a bigint in [0, 2^64)')
    }
    return BigInt(value)
  }
  if (typeof value !== 'bigint' || value < 0n || value > UINT64_MAX) refuse('seed', value, 'must be a bigint in [0, 2^64)')
  return value
}

function resolveLogitBias(value: unknown): ReadonlyMap<number, number> {
  if (value === undefined) return new Map()
  let entries: Array<[unknown, unknown]>
  if (value instanceof Map) {
    entries = [...(value as Map<unknown, unknown>).entries()]
  } else if (Array.isArray(value)) {
    entries = value.map((pair: unknown, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) refuse(`logitBias[${i}]`, pair, 'must be a [token, bias] pair')
      return [pair[0], pair[1]] as [unknown, unknown]
    })
  } else if (typeof value === 'object' && value !== null) {
    // OpenAI's JSON form: {"50256": -100}. Keys must be canonical decimal token ids.
    entries = Object.entries(value).map(([key, bias]) => {
      if (!/^(0|[1-9][0-9]*)$/.test(key)) refuse(`logitBias key`, key, 'must be a decimal token id')
      return [Number(key), bias] as [unknown, unknown]
    })
  } else {
    refuse('logitBias', value, 'must be a Map<token, bias>, an array of [token, bias] pairs or an object {token: bias}')
  }

  const out = new Map<number, number>()
  for (const [token, bias] of entries) {
    const id = integer('logitBias token', token, 0, 2 ** 31 - 1, 'must be a token id (an integer >= 0)')
    if (out.has(id)) refuse('logitBias token', id, 'is listed more than once')
    if (bias !== -Infinity) {
      float(`logitBias[${id}]`, bias, () => true, 'must be a finite number, or -Infinity to ban the token')
    }
    out.set(id, bias as number)
  }
  return out
}

/**
 * Fill in defaults and check every field. Throws RunnerError SAMPLING_BAD_OPTION (exit code usage)
 * naming the option (by `naming`, else by its field name) and its value; unknown keys are refused by name, never ignored. A field that
 * is undefined or null takes its default.
 */
export function resolveSamplingOptions(input: SamplingInput = {}, naming: SamplingNames = {}): SamplingOptions {
  try {
    return resolve(input)
  } catch (error) {
    throw error instanceof SamplingOptionError ? error.named(naming) : error
  }
}

function resolve(input: SamplingInput): SamplingOptions {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RunnerError('SAMPLING_BAD_OPTION', `Sampling options must be an object, got ${preview(input)}.`, ExitCode.usage)
  }
  for (const key of Object.keys(input)) {
    if (!KNOWN_KEYS.has(key)) {
      throw new RunnerError(
        'SAMPLING_BAD_OPTION',
        `Unknown sampling option ${quoted(key)}; known: ${[...KNOWN_KEYS].join(', ')}.`,
        ExitCode.usage,
      )
    }
  }
  const d = SAMPLING_DEFAULTS
  // undefined and null both mean "not given" (JSON bodies send null for an unset field).
  const get = <K extends keyof SamplingInput>(key: K): SamplingInput[K] | undefined => input[key] ?? undefined

  const temperature = float('temperature', get('temperature') ?? d.temperature, (x) => x >= 0, 'must be a finite number >= 0 (0: greedy)')
  const topK = integer('topK', get('topK') ?? d.topK, 0, 2 ** 31 - 1, 'must be an integer >= 0 (0: off)')
  const topP = float('topP', get('topP') ?? d.topP, (x) => x > 0 && x <= 1, 'must be in (0, 1] (1: off)')
  const minP = float('minP', get('minP') ?? d.minP, (x) => x >= 0 && x <= 1, 'must be in [0, 1] (0: off)')
  const repeatPenalty = float(
    'repeatPenalty',
    get('repeatPenalty') ?? d.repeatPenalty,
    (x) => x > 0,
    'must be a finite number > 0 (1: off)',
  )
  const presencePenalty = float(
    'presencePenalty',
    get('presencePenalty') ?? d.presencePenalty,
    () => true,
    'must be a finite number (0: off)',
  )
  const frequencyPenalty = float(
    'frequencyPenalty',
    get('frequencyPenalty') ?? d.frequencyPenalty,
    () => true,
    'must be a finite number (0: off)',
  )
  const penaltyLastN = integer(
    'penaltyLastN',
    get('penaltyLastN') ?? d.penaltyLastN,
    0,
    MAX_PENALTY_LAST_N,
    `must be an integer in [0, ${MAX_PENALTY_LAST_N}] (0: off; llama.cpp's -1 "whole context" is not supported: give the context length)`,
  )
  const logprobs = get('logprobs') ?? d.logprobs
  if (typeof logprobs !== 'boolean') refuse('logprobs', logprobs, 'must be a boolean')
  const topLogprobs = integer(
    'topLogprobs',
    get('topLogprobs') ?? d.topLogprobs,
    0,
    MAX_TOP_LOGPROBS,
    `must be an integer in [0, ${MAX_TOP_LOGPROBS}]`,
  )
  if (topLogprobs > 0 && !logprobs) refuse('topLogprobs', topLogprobs, 'needs logprobs: true')

  return {
    temperature,
    topK,
    topP,
    minP,
    repeatPenalty,
    presencePenalty,
    frequencyPenalty,
    penaltyLastN,
    seed: resolveSeed(get('seed')),
    logprobs,
    topLogprobs,
    logitBias: resolveLogitBias(get('logitBias')),
  }
}
