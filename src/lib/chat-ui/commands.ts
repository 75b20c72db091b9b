/**
 * What each slash command does to a conversation, shared by the Ink UI and the line-by-line mode.
 * Returns what to tell the user; never writes to the terminal itself.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import type {ChatMessage} from '../chat/index.js'
import {RunnerError} from '../errors.js'
import type {ChatConversation} from './conversation.js'
import {applyParams, formatParams} from './params.js'
import {helpText, type SlashCommand} from './slash.js'

export interface CommandOutcome {
  readonly ok: boolean
  readonly text: string
  readonly exit?: boolean
  /** The conversation now holds these messages (after /load): the UI shows them. */
  readonly loaded?: readonly ChatMessage[]
  /** The conversation was cleared (/reset). */
  readonly reset?: boolean
}

export async function runSlashCommand(conversation: ChatConversation, command: SlashCommand): Promise<CommandOutcome> {
  try {
    switch (command.kind) {
      case 'help':
        return {ok: true, text: helpText()}
      case 'exit':
        return {ok: true, text: '', exit: true}
      case 'reset':
        conversation.reset()
        return {ok: true, text: `conversation reset${conversation.system === undefined ? '' : ' (the system prompt stays)'}`, reset: true}
      case 'system':
        if (command.text === undefined)
          return {ok: true, text: conversation.system === undefined ? 'no system prompt' : `system: ${conversation.system}`}
        conversation.setSystem(command.text === '-' ? undefined : command.text)
        return {ok: true, text: conversation.system === undefined ? 'system prompt removed' : `system prompt set: ${conversation.system}`}
      case 'save': {
        const n = await conversation.saveFile(expandHome(command.file))
        return {ok: true, text: `saved ${n} message${n === 1 ? '' : 's'} to ${command.file}`}
      }
      case 'load': {
        const n = await conversation.loadFile(expandHome(command.file))
        return {ok: true, text: `loaded ${n} message${n === 1 ? '' : 's'} from ${command.file}`, loaded: conversation.messages()}
      }
      case 'params':
        if (command.args.trim() !== '') conversation.params = applyParams(conversation.params, command.args)
        return {ok: true, text: formatParams(conversation.params)}
      case 'error':
        return {ok: false, text: command.message}
    }
  } catch (error) {
    if (error instanceof RunnerError) return {ok: false, text: `${error.message} [${error.code}]`}
    throw error
  }
}

/** `~/x` is the home folder's x, as a shell would read it. */
export function expandHome(file: string): string {
  return file === '~' || file.startsWith('~/') ? join(homedir(), file.slice(1)) : file
}
