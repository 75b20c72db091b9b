/** Public face of `runner chat`'s UI: runChat, the Ink app, the conversation it drives, and the line mode. */
export {ChatApp, type ChatAppProps, type RenderStats} from './app.js'
export {chatFlags} from './chat-flags.js'
export {type ChatOptions, runChat} from './run-chat.js'
export {runInteractive} from './interactive.js'
export {runSlashCommand, type CommandOutcome} from './commands.js'
export {
  ChatContextFullError,
  ChatConversation,
  type ChatTurn,
  type ConversationOptions,
  type SavedConversation,
  type TurnPlan,
  type TurnResult,
} from './conversation.js'
export {applyAction, type EditorAction, type EditorState, emptyEditor, keyActions, type KeyLike} from './editor.js'
export {cutMarker} from './cut-marker.js'
export {escapeLine, unescapeLine} from './escape.js'
export {answerJson, type LineModeOptions, runLineMode} from './line-mode.js'
export {applyParams, type ChatParams, formatParams} from './params.js'
export {helpText, parseInput, type ParsedInput, type SlashCommand} from './slash.js'
export {formatStatus, liveContextUsed, type StatusInput} from './status.js'
export {displayText, ReplyWrapper, wrapText} from './transcript.js'
