/**
 * The flags of `runner bench`, named as llama-bench names them, and their values read into
 * BenchParams. Every list flag takes comma lists and may be repeated (`-p 512,1024 -p 2048`), as
 * llama-bench's; llama-bench's ranges (`first-last+step`) are not read. Each value is checked here,
 * and a refusal names the flag as the user typed it (`-t` or `--threads`). llama-bench's -pg is
 * written --pg: oclif has no multi-letter short flags (`-pg` would read as `-p g`).
 */
import {Flags} from '@oclif/core'

import {modelFlagOrArg, noGpuFlag, type SignatureFlagValues, signatureFlags, signaturePolicyFromFlags} from '../cli/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {SignaturePolicy} from '../signing/index.js'
import {defaultThreads, printable} from '../util/index.js'
import type {BenchParams, KvType} from './tests.js'
import {OUTPUT_FORMATS, type OutputFormat} from './writers.js'

// multipleNonGreedy: one value per flag, so `-t 1,2 model.gguf` leaves the model to the argument
// (oclif's greedy default would read it as another thread count).
const list = (char: 'p' | 'n' | 'd' | 'b' | 't' | undefined, description: string, helpValue: string) =>
  Flags.string({...(char ? {char} : {}), description, multiple: true, multipleNonGreedy: true, helpValue})

export const benchFlags = {
  ...modelFlagOrArg,
  'n-prompt': list('p', 'prompt lengths to time (pp tests); 0: none (default 512)', 'N[,N...]'),
  'n-gen': list('n', 'generated lengths to time (tg tests); 0: none (default 128)', 'N[,N...]'),
  pg: Flags.string({
    description: "llama-bench's -pg: a prompt then a generation, timed together",
    multiple: true,
    multipleNonGreedy: true,
    helpValue: 'PP,TG',
  }),
  'n-depth': list('d', 'tokens already in the cache before each test, not timed (default 0)', 'N[,N...]'),
  'batch-size': list('b', 'tokens per forward step while reading a prompt (default 512)', 'N[,N...]'),
  threads: list('t', 'threads (default: physical cores, at most 32)', 'N[,N...]'),
  'kv-type': list(undefined, 'KV cache type, keys and values: f16 or f32 (default f16)', 'TYPE[,TYPE...]'),
  repetitions: Flags.string({char: 'r', description: 'timed runs of each test (default 5)', helpValue: 'N'}),
  output: Flags.string({char: 'o', description: 'output format on stdout: md, csv, json or jsonl (default md)', helpValue: 'FORMAT'}),
  json: Flags.boolean({description: 'the same as -o json (as the other commands spell it)'}),
  progress: Flags.boolean({description: 'print each phase of each test on stderr (warm-up, depth, runs), as llama-bench --progress'}),
  'no-warmup': Flags.boolean({description: 'skip the warm-up run before each test'}),
  ...noGpuFlag,
  ...signatureFlags,
}

export interface BenchFlagValues extends SignatureFlagValues {
  readonly 'n-prompt'?: string[]
  readonly 'n-gen'?: string[]
  readonly pg?: string[]
  readonly 'n-depth'?: string[]
  readonly 'batch-size'?: string[]
  readonly threads?: string[]
  readonly 'kv-type'?: string[]
  readonly repetitions?: string
  readonly output?: string
  readonly json: boolean
  readonly progress: boolean
  readonly 'no-warmup': boolean
}

/** The flag as the user typed it: `-t` or `--threads` (both, or neither, e.g. from the environment: `-t/--threads`). */
export function typedFlag(argv: readonly string[], name: string, char?: string): string {
  const long = `--${name}`
  const short = char ? `-${char}` : undefined
  const usedLong = argv.some((a) => a === long || a.startsWith(`${long}=`))
  const usedShort = short !== undefined && argv.some((a) => a.startsWith(short) && !a.startsWith('--'))
  if (usedShort && !usedLong) return short
  if (usedLong && !usedShort) return long
  return short ? `${short}/${long}` : long
}

const bad = (flag: string, value: string, why: string) =>
  new RunnerError('BENCH_BAD_VALUE', `${flag} ${JSON.stringify(printable(value, {max: 60}))}: ${why}`, ExitCode.usage)

/** An integer from `min` up, written in decimal digits only (no 1e3, 0x10, 1.0 or spaces inside). */
function integer(flag: string, item: string, min: number, max = 1 << 24): number {
  const v = item.trim()
  const n = /^\d+$/.test(v) ? Number(v) : NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    // `-pg 512,128` reaches -p as the value "g512,128".
    const hint = flag === '-p' && item.startsWith('g') ? "; llama-bench's -pg is written --pg here" : ''
    throw bad(flag, item, `must be an integer from ${min} to ${max}${hint}`)
  }
  return n
}

/** The items of a repeatable comma-list flag, each read by `item`; an empty item is refused. */
function items<T>(flag: string, values: readonly string[] | undefined, item: (v: string) => T, def: readonly T[]): T[] {
  if (values === undefined || values.length === 0) return [...def]
  return values.flatMap((value) =>
    value.split(',').map((v) => {
      if (v.trim() === '') throw bad(flag, value, 'has an empty item (write the values as N,N,...)')
      return item(v)
    }),
  )
}

const KV_TYPES: readonly KvType[] = ['f16', 'f32']

export interface BenchCliOptions {
  readonly params: BenchParams
  readonly output: OutputFormat
  readonly progress: boolean
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
}

export function benchOptionsFromFlags(flags: BenchFlagValues, argv: readonly string[]): BenchCliOptions {
  const f = (name: keyof typeof benchFlags) => typedFlag(argv, name, benchFlags[name].char)
  const pg = f('pg')
  const params: BenchParams = {
    nPrompt: items(f('n-prompt'), flags['n-prompt'], (v) => integer(f('n-prompt'), v, 0), [512]),
    nGen: items(f('n-gen'), flags['n-gen'], (v) => integer(f('n-gen'), v, 0), [128]),
    pg: (flags.pg ?? []).map((value) => {
      const parts = value.split(',')
      if (parts.length !== 2) throw bad(pg, value, 'must be two lengths, the prompt and the generation: PP,TG')
      return [integer(pg, parts[0]!, 1), integer(pg, parts[1]!, 1)] as const
    }),
    nDepth: items(f('n-depth'), flags['n-depth'], (v) => integer(f('n-depth'), v, 0), [0]),
    nBatch: items(f('batch-size'), flags['batch-size'], (v) => integer(f('batch-size'), v, 1, 65536), [512]),
    threads: items(f('threads'), flags.threads, (v) => integer(f('threads'), v, 1, 256), [defaultThreads()]),
    kvType: items(
      f('kv-type'),
      flags['kv-type'],
      (v) => {
        if (!KV_TYPES.includes(v.trim() as KvType)) throw bad(f('kv-type'), v, `must be ${KV_TYPES.join(' or ')}`)
        return v.trim() as KvType
      },
      ['f16'],
    ),
    repetitions: flags.repetitions === undefined ? 5 : integer(f('repetitions'), flags.repetitions, 1, 1_000_000),
    warmup: !flags['no-warmup'],
  }
  const output = flags.output ?? 'md'
  if (!(OUTPUT_FORMATS as readonly string[]).includes(output)) throw bad(f('output'), output, `must be one of ${OUTPUT_FORMATS.join(', ')}`)
  if (flags.json && flags.output !== undefined && output !== 'json')
    throw new RunnerError('BENCH_BAD_VALUE', `--json is -o json, so ${f('output')} ${output} has no place beside it`, ExitCode.usage)
  return {
    params,
    output: flags.json ? 'json' : (output as OutputFormat),
    progress: flags.progress,
    signature: signaturePolicyFromFlags(flags),
  }
}
