import {Command} from '@oclif/core'

import {RunnerError} from '../errors.js'
import {GgufError} from '../gguf/index.js'

/**
 * Base of every command: turns a RunnerError into one line on stderr (message and code) and the
 * exit code of the table in src/lib/errors.ts. With --json the error is also printed on stdout as
 * `{"error": {...}}` so a script that parses stdout sees why it failed.
 */
export abstract class RunnerCommand extends Command {
  protected override async catch(err: Error & {exitCode?: number}): Promise<unknown> {
    if (!(err instanceof RunnerError)) return super.catch(err)
    process.stderr.write(`runner: ${err.message} [${err.code}]\n`)
    if (this.argv.includes('--json')) {
      const extra = err instanceof GgufError ? {field: err.field, offset: err.offset, file: err.file} : {}
      process.stdout.write(`${JSON.stringify({error: {code: err.code, message: err.message, ...extra}})}\n`)
    }
    return this.exit(err.exitCode)
  }
}
