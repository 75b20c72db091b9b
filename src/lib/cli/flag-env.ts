/**
 * Every flag from an environment variable, `RUNNER_<FLAG>` (upper case, dashes to underscores:
 * RUNNER_CTX_SIZE, RUNNER_TEMP), as llama.cpp's LLAMA_ARG_* and ollama's OLLAMA_* (issue #22). The
 * command line wins over the environment. Values become command-line tokens before oclif parses, so a
 * variable is checked exactly as its flag is; a refusal names the variable (namingVariable).
 * - a switch (--json): 1, true, yes, on or 0, false, no, off (any case); anything else is refused;
 * - a repeatable flag (--lora, --cors): comma-separated values; the command line replaces the list;
 * - an empty variable is unset;
 * - NOT_FROM_ENV: the flags no variable sets, and why.
 * oclif's own env reading is never used (parse strips `env`): it would read a switch's "banana" as
 * false and a variable that FOREIGN says is someone else's.
 */
import type {Command} from '@oclif/core'

import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'

/** What this module reads of an oclif flag (any flag has it). */
interface AnyFlag {
  readonly type: 'boolean' | 'option'
  readonly multiple?: boolean
  readonly char?: string
  readonly aliases?: readonly string[]
  readonly allowNo?: boolean
  env?: string
}
type Flags = Readonly<Record<string, AnyFlag>>

/** Flags whose value belongs to one invocation: a variable left set would act on every later command. */
export const NOT_FROM_ENV: Readonly<Record<string, string>> = {
  prompt: "one invocation's text",
  file: "one invocation's input",
  data: "one training run's input",
  val: "one training run's input",
  key: 'one lookup',
  out: 'an output path: every later command would write the same file',
  markdown: 'an output path: every later command would write the same file',
  'save-logits': 'an output path: every later command would write the same file',
  transcript: 'an output path: every later command would write the same file',
  'transcript-prev': "one receipt chain's link",
  checkpoint: 'an output path: every later command would write the same file',
  resume: "one training run's checkpoint",
  force: 'overwriting files is decided per invocation, never by a variable left set',
  help: 'not an option',
  version: 'not an option',
}

/**
 * Variables under our prefix that other software sets: not read where their owner is present.
 * GitHub Actions sets these on every job (docs.github.com, "Variables reference"); RUNNER_TEMP is its
 * temporary folder, not --temp. The others name no flag today and are listed so that a future flag
 * (--debug, --name, --os…) does not start reading them.
 */
const GITHUB_RUNNER_VARIABLES = ['TEMP', 'NAME', 'OS', 'ARCH', 'TOOL_CACHE', 'DEBUG', 'ENVIRONMENT', 'WORKSPACE', 'TRACKING_ID', 'PERFLOG']
/** Such a variable → the variable that says its owner is present. */
const FOREIGN: Readonly<Record<string, string>> = Object.fromEntries(GITHUB_RUNNER_VARIABLES.map((v) => [`RUNNER_${v}`, 'GITHUB_ACTIONS']))

const TRUE = /^(1|true|yes|on)$/i
const FALSE = /^(0|false|no|off)$/i

/** A switch's variable that turns it on. */
export function switchOn(value: string): boolean {
  return TRUE.test(value.trim())
}

/** RUNNER_CTX_SIZE for ctx-size; undefined for the flags in NOT_FROM_ENV. */
export function envVariable(flag: string): string | undefined {
  return Object.hasOwn(NOT_FROM_ENV, flag) ? undefined : `RUNNER_${flag.toUpperCase().replaceAll('-', '_')}`
}

/** Where a flag's value came from when a variable gave it. */
export interface EnvSource {
  readonly flag: string
  readonly variable: string
  readonly value: string
}

/** Was the flag given on the command line (before `--`) by its name, an alias, its --no- form or its letter? */
function onCommandLine(name: string, flag: AnyFlag, argv: readonly string[]): boolean {
  const end = argv.indexOf('--')
  const tokens = end >= 0 ? argv.slice(0, end) : argv
  const longs = [name, ...(flag.aliases ?? []), ...(flag.type === 'boolean' ? [`no-${name}`] : [])].map((n) => `--${n}`)
  return tokens.some(
    (t) =>
      longs.some((l) => t === l || t.startsWith(`${l}=`)) ||
      (flag.char !== undefined && !t.startsWith('--') && t.startsWith(`-${flag.char}`)),
  )
}

/**
 * The command-line tokens the environment gives for the flags not on the command line, and where
 * each came from. A switch's value other than the TRUE/FALSE spellings is refused naming the variable.
 */
export function envArguments(
  flags: Flags,
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): {readonly argv: string[]; readonly sources: EnvSource[]} {
  const out: string[] = []
  const sources: EnvSource[] = []
  for (const [name, flag] of Object.entries(flags)) {
    const variable = flag.env ?? envVariable(name)
    const value = variable === undefined ? undefined : env[variable]
    if (variable === undefined || value === undefined || value === '' || onCommandLine(name, flag, argv)) continue
    const owner = Object.hasOwn(FOREIGN, variable) ? FOREIGN[variable] : undefined
    if (owner !== undefined && env[owner] !== undefined) continue
    sources.push({flag: name, variable, value})
    if (flag.type === 'boolean') {
      if (TRUE.test(value.trim())) out.push(`--${name}`)
      else if (FALSE.test(value.trim())) {
        if (flag.allowNo) out.push(`--no-${name}`)
      } else
        throw new RunnerError(
          'BAD_ENV',
          `${variable}=${quoted(value)}: --${name} is a switch; give 1, true, yes, on or 0, false, no, off`,
          ExitCode.usage,
        )
    } else if (flag.multiple) {
      for (const v of value.split(',')) if (v.trim() !== '') out.push(`--${name}=${v.trim()}`)
    } else out.push(`--${name}=${value}`)
  }
  const end = argv.indexOf('--')
  return {argv: end >= 0 ? [...argv.slice(0, end), ...out, ...argv.slice(end)] : [...argv, ...out], sources}
}

/** The flags with `env` removed: oclif must not read the variables itself (see the file comment). */
export function withoutEnv(flags: Flags): Record<string, AnyFlag> {
  return Object.fromEntries(Object.entries(flags).map(([n, f]) => [n, {...f, env: undefined}]))
}

/**
 * An error about a flag a variable gave, as the same error naming the variable and its value
 * (`RUNNER_TEMP="abc": --temp "abc" is not a number`); undefined when the message names no such flag.
 */
export function namingVariable(error: Error & {code?: unknown}, sources: readonly EnvSource[]): RunnerError | undefined {
  if (sources.some((x) => error.message.startsWith(`${x.variable}=`))) return undefined
  const s = sources.find((x) => new RegExp(`(^|[^\\w-])--${x.flag}(?![\\w-])`).test(error.message))
  if (!s) return undefined
  // oclif's parse errors span lines and end by pointing at --help: one line here.
  const text = error.message
    .replace(/\s*See more help with --help\s*$/, '')
    .replaceAll(/\s*\n\s*/g, ' ')
    .trim()
  const message = `${s.variable}=${quoted(s.value)}: ${text}`
  if (error instanceof RunnerError) return new RunnerError(error.code, message, error.exitCode)
  return new RunnerError('BAD_ENV', message, ExitCode.usage)
}

/**
 * Puts `env` on each flag of these (loaded or cached) commands, for --help to show `env: RUNNER_…`
 * and completion to know; the init hook runs it on every command oclif knows, present and future.
 */
export function describeEnv(commands: ReadonlyArray<Pick<Command.Loadable, 'flags' | 'pluginName'>>, ours: string): void {
  for (const c of commands) {
    // help and autocomplete are the plugins' commands, not RunnerCommands: no variables read for them
    if (c.pluginName !== ours) continue
    for (const [name, flag] of Object.entries(c.flags)) {
      const variable = envVariable(name)
      if (variable !== undefined && (flag as AnyFlag).env === undefined) (flag as AnyFlag).env = variable
    }
  }
}
