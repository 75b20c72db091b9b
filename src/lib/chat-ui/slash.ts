/**
 * Slash commands of `runner chat`, parsed from an input line without side effects. A line that
 * starts with one `/` is a command; `//text` sends the message `/text`.
 */
export type SlashCommand =
  | {readonly kind: 'help'}
  | {readonly kind: 'reset'}
  | {readonly kind: 'exit'}
  | {readonly kind: 'system'; readonly text: string | undefined}
  | {readonly kind: 'save'; readonly file: string}
  | {readonly kind: 'load'; readonly file: string}
  | {readonly kind: 'params'; readonly args: string}
  | {readonly kind: 'error'; readonly message: string}

export type ParsedInput = {readonly kind: 'message'; readonly text: string} | {readonly kind: 'command'; readonly command: SlashCommand}

/** The commands, their argument and what they do: /help prints this table. */
export const SLASH_COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ['/help', 'this help'],
  ['/reset', 'start over (keeps the system prompt)'],
  ['/system [TEXT]', 'show or set the system prompt (- removes it)'],
  ['/save FILE', 'write the conversation as OpenAI messages JSON'],
  ['/load FILE', 'read a conversation written by /save'],
  ['/params [NAME=VALUE ...]', 'show or set sampling: /params temp=0.7 n=128'],
  ['/exit', 'leave (also Ctrl+D, or Ctrl+C twice)'],
]

/** Keys of the interactive UI, listed by /help. */
export const KEY_HELP: ReadonlyArray<readonly [string, string]> = [
  ['Enter', 'send'],
  ['Shift/Alt+Enter, \\ at end', 'new line'],
  ['Up / Down', 'earlier inputs, or move between lines'],
  ['Esc, Ctrl+C', 'stop the reply being written'],
  ['Ctrl+C twice, Ctrl+D', 'exit'],
]

export function helpText(): string {
  const width = Math.max(...[...SLASH_COMMANDS, ...KEY_HELP].map(([k]) => k.length))
  const rows = (list: ReadonlyArray<readonly [string, string]>) => list.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n')
  return `commands:\n${rows(SLASH_COMMANDS)}\nkeys:\n${rows(KEY_HELP)}\n  a message starting with / is written //`
}

/** Parse one submitted input: a message, or a slash command (unknown or malformed ones as 'error'). */
export function parseInput(input: string): ParsedInput {
  if (!input.startsWith('/')) return {kind: 'message', text: input}
  if (input.startsWith('//')) return {kind: 'message', text: input.slice(1)}
  const m = /^\/(\S*)(?:\s+([\s\S]*))?$/.exec(input)!
  const name = m[1]!.toLowerCase()
  const arg = (m[2] ?? '').trim()
  const command = ((): SlashCommand => {
    const noArg = (kind: 'help' | 'reset' | 'exit'): SlashCommand =>
      arg === '' ? {kind} : {kind: 'error', message: `/${name} takes no argument`}
    const fileArg = (kind: 'save' | 'load'): SlashCommand =>
      arg === '' ? {kind: 'error', message: `/${name} needs a file name: /${name} FILE`} : {kind, file: unquote(arg)}
    switch (name) {
      case 'help':
      case '?':
        return noArg('help')
      case 'reset':
      case 'clear':
        return noArg('reset')
      case 'exit':
      case 'quit':
        return noArg('exit')
      case 'system':
        return {kind: 'system', text: arg === '' ? undefined : arg}
      case 'save':
        return fileArg('save')
      case 'load':
        return fileArg('load')
      case 'params':
        return {kind: 'params', args: arg}
      default:
        return {kind: 'error', message: `unknown command /${name}; /help lists the commands (a message starting with / is written //)`}
    }
  })()
  return {kind: 'command', command}
}

function unquote(s: string): string {
  const m = /^(["'])(.*)\1$/s.exec(s)
  return m ? m[2]! : s
}
