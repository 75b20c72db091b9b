/**
 * The structured-output flags `run` and `chat` share: a JSON schema (a file, or the JSON itself),
 * a GBNF grammar file (llama.cpp's --grammar-file language), or JSON mode (any JSON object). At
 * most one; each is compiled before the model loads, so a refused schema costs no load.
 */
import {Flags} from '@oclif/core'

import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'
import {compileConstraint, type Constraint} from '../grammar/index.js'

const ONE_OF = ['json-schema', 'grammar', 'json-object']
const others = (name: string) => ONE_OF.filter((n) => n !== name)

export const constraintFlags = {
  'json-schema': Flags.string({
    description: 'constrain the output to documents valid under a JSON Schema: a file, or the schema itself ({...})',
    helpValue: 'FILE|JSON',
    exclusive: others('json-schema'),
  }),
  grammar: Flags.string({
    description: "constrain the output to a GBNF grammar file (llama.cpp's grammar language; the start rule is root)",
    helpValue: 'FILE',
    exclusive: others('grammar'),
  }),
  'json-object': Flags.boolean({
    description: "constrain the output to one JSON object (any keys and values), as OpenAI's response_format json_object",
    exclusive: others('json-object'),
  }),
}

export interface ConstraintFlagValues {
  readonly 'json-schema'?: string
  readonly grammar?: string
  readonly 'json-object'?: boolean
}

async function readSource(flag: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw new RunnerError(
      'FILE_UNREADABLE',
      `--${flag} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      ExitCode.usage,
    )
  }
}

/** The constraint the flags ask for, compiled (GRAMMAR_REFUSED, exit 2, naming keyword and pointer or line and column). */
export async function constraintFromFlags(flags: ConstraintFlagValues): Promise<Constraint | undefined> {
  const schema = flags['json-schema']
  if (schema !== undefined) {
    // A value that starts like JSON is the schema itself; anything else names a file.
    const inline = /^\s*[{[]|^\s*(true|false)\s*$/.test(schema)
    return compileConstraint({kind: 'json-schema', text: inline ? schema : await readSource('json-schema', schema)})
  }
  if (flags.grammar !== undefined) return compileConstraint({kind: 'gbnf', text: await readSource('grammar', flags.grammar)})
  if (flags['json-object']) return compileConstraint({kind: 'json-object'})
  return undefined
}
