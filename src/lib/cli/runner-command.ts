import {Command} from '@oclif/core'

import {RunnerError} from '../errors.js'
import {GgufError} from '../gguf/index.js'
import {printableError, printableJson} from '../util/index.js'

/**
 * Base of every command: turns a RunnerError into one line on stderr (message and code) and the
 * exit code of the table in src/lib/errors.ts. With --json the error is also printed on stdout as
 * `{"error": {...}}` so a script that parses stdout sees why it failed. A RunnerError's message is
 * printable by construction; any other error is made printable here before oclif prints it.
 */
export abstract class RunnerCommand extends Command {
  protected override async catch(err: Error & {exitCode?: number}): Promise<unknown> {
    if (!(err instanceof RunnerError)) return super.catch(printableError(err))
    process.stderr.write(`runner: ${err.message} [${err.code}]\n`)
    if (this.argv.includes('--json')) {
      const extra = err instanceof GgufError ? {field: err.field, offset: err.offset, file: err.file} : {}
      process.stdout.write(`${printableJson({error: {code: err.code, message: err.message, ...extra}})}\n`)
    }
    return this.exit(err.exitCode)
  }
}
