/**
 * What --chat-template VALUE means (chat and serve alike): a built-in template's name (llama.cpp's
 * names, ./builtin-templates.ts), else a file holding a Jinja template. A name wins over a file of
 * the same name in the current folder: the meaning of `--chat-template gemma` must not depend on
 * where the command runs; such a file is given as `./gemma`. A value that is neither is refused
 * listing the names.
 */
import {readFileSync} from 'node:fs'

import {ExitCode, RunnerError} from '../errors.js'
import {quoted} from '../util/index.js'
import {BUILTIN_TEMPLATE_NAMES, BUILTIN_TEMPLATES} from './builtin-templates.js'

/**
 * The override ChatTemplate.forModel takes: "chatml" as itself (its documented fallback), a built-in
 * name as its source, a file as its text; undefined when no value was given. `flag` names the value in
 * refusals (library callers: their own option name).
 */
export function chatTemplateOverride(value: string | undefined, flag = '--chat-template'): string | undefined {
  if (value === undefined || value === 'chatml') return value
  const builtin = Object.hasOwn(BUILTIN_TEMPLATES, value) ? BUILTIN_TEMPLATES[value] : undefined
  if (builtin !== undefined) return builtin
  try {
    return readFileSync(value, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT')
      throw new RunnerError(
        'CHAT_TEMPLATE_UNKNOWN',
        `${flag} ${quoted(value)}: no such file, and not a built-in template (${BUILTIN_TEMPLATE_NAMES.join(', ')})`,
        ExitCode.usage,
      )
    throw new RunnerError(
      'CHAT_TEMPLATE_FILE',
      `${flag} ${quoted(value)}: cannot read it (${code ?? (error as Error).message})`,
      ExitCode.usage,
    )
  }
}
