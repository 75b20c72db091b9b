import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'

/** What a command calls the text it reads and the flags that give it, for its messages. */
export interface TextInputNames {
  /** "prompt", "corpus". */
  readonly noun: string
  /** The command's own flags, as its help spells them: "--prompt TEXT, --file FILE". */
  readonly flags: string
}

const PROMPT: TextInputNames = {noun: 'prompt', flags: '--prompt TEXT, --file FILE'}

/**
 * The prompt from --prompt, else --file, else standard input when it is not a terminal. `names`
 * words the refusals for a command whose text is not a prompt (score's corpus has --file only).
 */
export async function readPrompt(prompt: string | undefined, file: string | undefined, names: TextInputNames = PROMPT): Promise<string> {
  if (prompt !== undefined) return prompt
  if (file !== undefined) {
    try {
      return await readFile(file, 'utf8')
    } catch (error) {
      throw new RunnerError('PROMPT_FILE', `cannot read the ${names.noun} file ${file}: ${(error as Error).message}`, ExitCode.usage)
    }
  }
  if (process.stdin.isTTY)
    throw new RunnerError('NO_PROMPT', `no ${names.noun}: give ${names.flags}, or pipe it on standard input`, ExitCode.usage)
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  // Standard input closed or empty (e.g. /dev/null under a script) is no prompt, not an empty one;
  // an empty prompt on purpose is `--prompt ""`.
  if (chunks.every((c) => c.length === 0)) {
    throw new RunnerError(
      'NO_PROMPT',
      `no ${names.noun}: standard input was empty; give ${names.flags}, or pipe the ${names.noun} in`,
      ExitCode.usage,
    )
  }
  return Buffer.concat(chunks).toString('utf8')
}
