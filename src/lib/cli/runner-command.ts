import {Command, type Interfaces} from '@oclif/core'

import {RunnerError} from '../errors.js'
import {GgufError} from '../gguf/index.js'
import {printable, printableError, printableJson} from '../util/index.js'
import {didYouMean} from './did-you-mean.js'
import {modelFromFlagOrArg} from './engine-flags.js'
import {envArguments, type EnvSource, namingVariable, switchOn, withoutEnv} from './flag-env.js'

/** oclif's FlagOutput and ArgOutput (parse's type parameters), which its index does not export. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type FlagOutput = {[name: string]: any}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ArgOutput = {[name: string]: any}

/** oclif's parse errors that we answer with one line and a hint instead of the whole help text. */
interface ParseError extends Error {
  readonly flags?: readonly string[]
  readonly args?: readonly string[]
}

function parseErrorOf(err: Error, name: 'NonExistentFlagsError' | 'UnexpectedArgsError'): ParseError | undefined {
  return err.constructor?.name === name ? (err as ParseError) : undefined
}

/**
 * Base of every command: turns a RunnerError into one line on stderr (message and code) and the
 * exit code of the table in src/lib/errors.ts. With --json the error is also printed on stdout as
 * `{"error": {...}}` so a script that parses stdout sees why it failed. A RunnerError's message is
 * printable by construction; any other error is made printable here before oclif prints it. A flag
 * the command does not have, or an argument it does not take, is one line with the nearest flags or
 * what the argument was probably meant to be (exit 2), not oclif's help dump. Every flag may come from
 * its RUNNER_<FLAG> variable (flag-env.ts); an error about such a flag names the variable.
 */
export abstract class RunnerCommand extends Command {
  /** What a stray positional argument most likely was, for the UnexpectedArgsError hint (run: the prompt). */
  protected static strayArgumentHint: string | undefined

  /** The flags the environment gave in the last parse (for errors to name their variables). */
  private envSources: readonly EnvSource[] = []

  /**
   * The model of run, chat, tokenize and bench: -m or the argument (engine-flags.ts). A -m that came
   * from RUNNER_MODEL gives way to a model argument: the command line wins over the environment.
   */
  protected async modelFromFlagOrArg(
    flag: string | undefined,
    arg: string | undefined,
    command: string,
    promptFlag?: string,
  ): Promise<string> {
    const fromEnv = this.envSources.find((s) => s.flag === 'model')
    if (fromEnv && arg !== undefined) return modelFromFlagOrArg(undefined, arg, command, promptFlag)
    return modelFromFlagOrArg(flag, arg, command, promptFlag, fromEnv ? fromEnv.variable : '-m')
  }

  protected override async parse<F extends FlagOutput, B extends FlagOutput, A extends ArgOutput>(
    options?: Interfaces.Input<F, B, A>,
    argv: string[] = this.argv,
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const input = options ?? (this.constructor as unknown as Interfaces.Input<F, B, A>)
    const flags = {...input.baseFlags, ...input.flags}
    const env = envArguments(flags, argv)
    this.envSources = env.sources
    // oclif spreads the options (own properties only): a class's inherited statics are named here.
    const {args, strict, enableJsonFlag} = input as Interfaces.Input<F, B, A> & {enableJsonFlag?: boolean}
    const stripped = {...input, args, strict, enableJsonFlag, flags: withoutEnv(flags), baseFlags: {}} as Interfaces.Input<F, B, A>
    try {
      return await super.parse(stripped, env.argv)
    } catch (error) {
      throw (error instanceof Error && namingVariable(error, env.sources)) || error
    }
  }

  protected override async catch(err: Error & {exitCode?: number}): Promise<unknown> {
    const named = err instanceof RunnerError ? namingVariable(err, this.envSources) : undefined
    if (named) return this.catch(named)
    const flagError = parseErrorOf(err, 'NonExistentFlagsError')
    if (flagError) return this.usageError(flagError.flags?.map((f) => this.unknownFlag(f)).join(' ') ?? err.message)
    const argError = parseErrorOf(err, 'UnexpectedArgsError')
    if (argError) {
      const hint = (this.constructor as typeof RunnerCommand).strayArgumentHint
      const args = (argError.args ?? []).map((a) => JSON.stringify(printable(String(a), {max: 60}))).join(', ')
      return this.usageError(`unexpected argument ${args}${hint ? `: ${hint}` : ''}.`)
    }
    if (!(err instanceof RunnerError)) return super.catch(printableError(err))
    // A flag's parse function (the model name's resolution) throws through oclif, which wraps the message.
    const message = err.message.replace(/^Parsing --[\w-]+ \n\t([\s\S]*)\nSee more help with --help$/, '$1')
    process.stderr.write(`runner: ${message} [${err.code}]\n`)
    if (this.argv.includes('--json') || this.envSources.some((s) => s.flag === 'json' && switchOn(s.value))) {
      const extra = err instanceof GgufError ? {field: err.field, offset: err.offset, file: err.file} : {}
      process.stdout.write(`${printableJson({error: {code: err.code, message, ...extra}})}\n`)
    }
    return this.exit(err.exitCode)
  }

  private unknownFlag(flag: string): string {
    const flags = (this.constructor as typeof Command).flags ?? {}
    const names = Object.entries(flags).flatMap(([name, f]) => [
      `--${name}`,
      ...(f.char ? [`-${f.char}`] : []),
      ...(f.aliases ?? []).map((a) => `--${a}`),
    ])
    const bare = flag.split('=')[0]!
    const near = didYouMean(
      bare.replace(/^-+/, ''),
      names.map((n) => n.replace(/^-+/, '')),
    ).map((n) => names.find((x) => x.replace(/^-+/, '') === n)!)
    return `unknown flag ${printable(bare)}${near.length > 0 ? `; did you mean ${near.join(' or ')}?` : ''}`
  }

  private usageError(message: string): never {
    process.stderr.write(
      `runner ${this.id ?? ''}: ${message} \`runner ${this.id ?? ''} --help\` lists the flags.\n`.replace('runner : ', 'runner: '),
    )
    return this.exit(2)
  }
}
