import {readFile} from 'node:fs/promises'

import {ExitCode, RunnerError} from '../errors.js'

/** The prompt from --prompt, else --file, else standard input when it is not a terminal. */
export async function readPrompt(prompt: string | undefined, file: string | undefined): Promise<string> {
  if (prompt !== undefined) return prompt
  if (file !== undefined) {
    try {
      return await readFile(file, 'utf8')
    } catch (error) {
      throw new RunnerError('PROMPT_FILE', `cannot read the prompt file ${file}: ${(error as Error).message}`, ExitCode.usage)
    }
  }
  if (process.stdin.isTTY)
    throw new RunnerError('NO_PROMPT', 'no prompt: give --prompt TEXT, --file FILE, or pipe it on standard input', ExitCode.usage)
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  // Standard input closed or empty (e.g. /dev/null under a script) is no prompt, not an empty one;
  // an empty prompt on purpose is `--prompt ""`.
  if (chunks.every((c) => c.length === 0)) {
    throw new RunnerError(
      'NO_PROMPT',
      'no prompt: standard input was empty; give --prompt TEXT, --file FILE, or pipe the prompt in',
      ExitCode.usage,
    )
  }
  return Buffer.concat(chunks).toString('utf8')
}
