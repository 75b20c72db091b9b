import {Flags} from '@oclif/core'

import {ExitCode, RunnerError} from '../errors.js'
import {resolveSamplingOptions, SAMPLING_DEFAULTS, type SamplingNames, type SamplingOptions} from '../sampling/index.js'

const d = SAMPLING_DEFAULTS

/**
 * The sampling flags of every generating command (run, chat), named as llama.cpp names them. Each
 * stays undefined when not given (chat tells a flag given from its default), so its default is
 * written in its description, from SAMPLING_DEFAULTS (llama.cpp's) rather than typed again.
 */
export const samplingFlags = {
  temp: Flags.string({description: `temperature; 0 = greedy (default ${d.temperature})`, helpValue: 'T'}),
  'top-k': Flags.integer({description: `keep the k most likely tokens (0 = off; default ${d.topK})`}),
  'top-p': Flags.string({
    description: `keep the smallest set with this cumulative probability (1 = off; default ${d.topP})`,
    helpValue: 'P',
  }),
  'min-p': Flags.string({
    description: `drop tokens less likely than min-p times the most likely (0 = off; default ${d.minP})`,
    helpValue: 'P',
  }),
  'repeat-penalty': Flags.string({description: `penalize repeats of recent tokens (1 = off; default ${d.repeatPenalty})`, helpValue: 'X'}),
  'repeat-last-n': Flags.integer({description: `how many recent tokens the penalties look at (default ${d.penaltyLastN})`}),
  'presence-penalty': Flags.string({
    description: `subtract from tokens already present (0 = off; default ${d.presencePenalty})`,
    helpValue: 'X',
  }),
  'frequency-penalty': Flags.string({description: `subtract per occurrence (0 = off; default ${d.frequencyPenalty})`, helpValue: 'X'}),
  seed: Flags.string({description: 'random seed (any 64-bit value, 0 included; default -1: random, reported)', helpValue: 'N'}),
}

type SamplingFlagValues = {[K in keyof typeof samplingFlags]?: K extends 'top-k' | 'repeat-last-n' ? number : string}

/** Each sampling option's flag, so a refusal names the flag as typed (`--top-p 2: must be in (0, 1]`). */
export const SAMPLING_FLAG_NAMES: SamplingNames = {
  temperature: '--temp',
  topK: '--top-k',
  topP: '--top-p',
  minP: '--min-p',
  repeatPenalty: '--repeat-penalty',
  penaltyLastN: '--repeat-last-n',
  presencePenalty: '--presence-penalty',
  frequencyPenalty: '--frequency-penalty',
  seed: '--seed',
}

/** Validated sampling options from the parsed flags (every value checked by resolveSamplingOptions). */
export function samplingFromFlags(flags: SamplingFlagValues): SamplingOptions {
  return resolveSamplingOptions(
    {
      temperature: parseNumberFlag(flags.temp, '--temp'),
      topK: flags['top-k'],
      topP: parseNumberFlag(flags['top-p'], '--top-p'),
      minP: parseNumberFlag(flags['min-p'], '--min-p'),
      repeatPenalty: parseNumberFlag(flags['repeat-penalty'], '--repeat-penalty'),
      penaltyLastN: flags['repeat-last-n'],
      presencePenalty: parseNumberFlag(flags['presence-penalty'], '--presence-penalty'),
      frequencyPenalty: parseNumberFlag(flags['frequency-penalty'], '--frequency-penalty'),
      // -1 is llama.cpp's "random seed": the same as leaving it out (the seed drawn is reported).
      seed: flags.seed === undefined || flags.seed.trim() === '-1' ? undefined : parseSeed(flags.seed),
    },
    SAMPLING_FLAG_NAMES,
  )
}

export function parseNumberFlag(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined
  const n = Number(v)
  if (v.trim() === '' || !Number.isFinite(n))
    throw new RunnerError('BAD_FLAG', `${flag} ${JSON.stringify(v)} is not a number`, ExitCode.usage)
  return n
}

/** A 64-bit seed from its decimal (or 0x hex) text, exactly: never through a double. */
export function parseSeed(v: string, flag = '--seed'): bigint {
  try {
    const n = BigInt(v)
    if (n < 0n || n >= 1n << 64n) throw new RangeError()
    return n
  } catch {
    throw new RunnerError('BAD_FLAG', `${flag} ${JSON.stringify(v)} must be an integer from 0 to 2^64-1`, ExitCode.usage)
  }
}
