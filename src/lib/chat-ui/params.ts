/**
 * `/params`: show the sampling values of the chat, or set some of them by the names of the command
 * line flags (`temp`, `top-k`, ..., `seed`, and `n` for the reply length). Every value is checked by
 * resolveSamplingOptions, as the flags are; a refused value changes nothing.
 */
import {ExitCode, RunnerError} from '../errors.js'
import {resolveSamplingOptions, type SamplingInput, type SamplingNames, type SamplingOptions} from '../sampling/index.js'

export interface ChatParams {
  readonly sampling: SamplingOptions
  /** Most tokens of one reply; -1: until the end of the reply or a full context. */
  readonly maxTokens: number
}

type Field = Exclude<keyof SamplingInput, 'logprobs' | 'topLogprobs' | 'logitBias'>

/** Parameter name (as the flag, without dashes) → sampling field. */
const NAMES: Readonly<Record<string, Field>> = {
  temp: 'temperature',
  temperature: 'temperature',
  'top-k': 'topK',
  'top-p': 'topP',
  'min-p': 'minP',
  'repeat-penalty': 'repeatPenalty',
  'repeat-last-n': 'penaltyLastN',
  'presence-penalty': 'presencePenalty',
  'frequency-penalty': 'frequencyPenalty',
  seed: 'seed',
}

/** Each field by the name /params shows it, for refusals (`top-p 2: must be in (0, 1]`): the first name of NAMES. */
const REFUSAL_NAMES: SamplingNames = Object.fromEntries(
  Object.entries(NAMES)
    .reverse()
    .map(([name, field]) => [field, name]),
)

const SHOWN: ReadonlyArray<readonly [string, (p: ChatParams) => string]> = [
  ['temp', (p) => String(p.sampling.temperature)],
  ['top-k', (p) => String(p.sampling.topK)],
  ['top-p', (p) => String(p.sampling.topP)],
  ['min-p', (p) => String(p.sampling.minP)],
  ['repeat-penalty', (p) => String(p.sampling.repeatPenalty)],
  ['repeat-last-n', (p) => String(p.sampling.penaltyLastN)],
  ['presence-penalty', (p) => String(p.sampling.presencePenalty)],
  ['frequency-penalty', (p) => String(p.sampling.frequencyPenalty)],
  ['seed', (p) => p.sampling.seed.toString()],
  ['n', (p) => String(p.maxTokens)],
]

export function formatParams(p: ChatParams): string {
  return SHOWN.map(([name, get]) => `${name}=${get(p)}`).join(' ')
}

function bad(message: string): RunnerError {
  return new RunnerError('CHAT_BAD_PARAM', message, ExitCode.usage)
}

/** `NAME=VALUE` or `NAME VALUE` pairs (leading dashes allowed) applied to `current`; throws on any refusal. */
export function applyParams(current: ChatParams, args: string): ChatParams {
  const words = args.trim() === '' ? [] : args.trim().split(/\s+/)
  const pairs: Array<[string, string]> = []
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!.replace(/^--?/, '')
    const eq = w.indexOf('=')
    if (eq > 0) pairs.push([w.slice(0, eq), w.slice(eq + 1)])
    else if (i + 1 < words.length) pairs.push([w, words[++i]!])
    else throw bad(`/params ${w} needs a value: /params ${w}=VALUE`)
  }
  const s = current.sampling
  const input: SamplingInput = {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    repeatPenalty: s.repeatPenalty,
    penaltyLastN: s.penaltyLastN,
    presencePenalty: s.presencePenalty,
    frequencyPenalty: s.frequencyPenalty,
    seed: s.seed,
    logprobs: s.logprobs,
    topLogprobs: s.topLogprobs,
    logitBias: s.logitBias,
  }
  let maxTokens = current.maxTokens
  for (const [name, value] of pairs) {
    const key = name.toLowerCase()
    if (key === 'n' || key === 'n-predict') {
      const n = Number(value)
      if (value.trim() === '' || !Number.isInteger(n) || n < -1) throw bad(`n ${JSON.stringify(value)} must be an integer, -1 or more`)
      maxTokens = n
      continue
    }
    const field = NAMES[key]
    if (!field) throw bad(`/params has no ${JSON.stringify(name)}; known: ${SHOWN.map(([n]) => n).join(', ')}`)
    if (field === 'seed') {
      let seed: bigint
      try {
        if (value.trim() === '') throw new RangeError('empty')
        seed = BigInt(value)
        if (seed < 0n || seed >= 1n << 64n) throw new RangeError('out of range')
      } catch {
        throw bad(`seed ${JSON.stringify(value)} must be an integer from 0 to 2^64-1`)
      }
      input.seed = seed
      continue
    }
    const n = Number(value)
    if (value.trim() === '' || !Number.isFinite(n)) throw bad(`${name} ${JSON.stringify(value)} is not a number`)
    ;(input as Record<string, unknown>)[field] = n
  }
  return {sampling: resolveSamplingOptions(input, REFUSAL_NAMES), maxTokens}
}
