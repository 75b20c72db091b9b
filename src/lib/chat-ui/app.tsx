/**
 * The Ink UI of `runner chat`: the conversation above, the input below, a status line under it.
 *
 * Rendering budget: finished turns and the finished rows of the reply being written go into
 * <Static>, which Ink writes once; only the row being written, the input and the status line are
 * redrawn. Tokens are collected as they arrive and shown at most once per `frameMs` (one state
 * update per frame), so a fast model does not cost one frame per token (docs/chat.md has the
 * measurement).
 */
import {Box, Static, Text, useApp, useStdout} from 'ink'
import {useCallback, useRef} from 'react'

import type {ChatMessage, ChatTemplateSource} from '../chat/index.js'
import {runSlashCommand} from './commands.js'
import type {ChatConversation} from './conversation.js'
import {paint} from './color.js'
import {InputView} from './input-view.js'
import {parseInput} from './slash.js'
import {formatStatus, liveContextUsed} from './status.js'
import {displayText, type ItemKind, type TranscriptItem, wrapText} from './transcript.js'
import {useBracketedPaste, useChatInput} from './use-chat-input.js'
import {useChatTurn} from './use-chat-turn.js'
import {useResizeRedraw} from './use-resize-redraw.js'

/** Counters the command can write out (RUNNER_CHAT_STATS) to measure frames per token. */
export interface RenderStats {
  /** Ink frames rendered (its onRender callback). */
  frames: number
  /** Frames rendered while a reply was being generated. */
  streamFrames: number
  /** Tokens generated. */
  tokens: number
  generating: boolean
  /** Times the screen was cleared and written again after a resize (use-resize-redraw.ts). */
  redraws: number
}

export interface ChatAppProps {
  readonly conversation: ChatConversation
  readonly modelName: string
  readonly templateOrigin: ChatTemplateSource
  readonly nCtx: number
  readonly stats: RenderStats
  /** Called once, with the exit code, when the user leaves. */
  readonly onExit: (code: number) => void
  /** Least time between two frames while streaming (ms). */
  readonly frameMs?: number
  /** Style the screen (false under NO_COLOR: no SGR escape at all; chatColor decides). */
  readonly color?: boolean
}

const TEMPLATE_NOTE: Readonly<Record<ChatTemplateSource, string>> = {
  'fallback-chatml': 'no chat template in the model: ChatML fallback',
  override: 'template from --chat-template',
  model: "the model's chat template",
}

export function ChatApp(props: ChatAppProps): React.JSX.Element {
  const {conversation, stats} = props
  const color = props.color ?? true
  const {exit} = useApp()
  const {stdout} = useStdout()
  const columnsRef = useRef(stdout.columns || 80)
  const exiting = useRef(false)
  const replyColumns = useCallback(() => columnsRef.current - INDENT.assistant - 1, [])
  const {transcript, item, append, runTurn, stopReply, busy, redraw} = useChatTurn({
    conversation,
    stats,
    frameMs: props.frameMs ?? 30,
    replyColumns,
    initial: (make) => [
      make('banner', `runner chat · ${props.modelName} · ${TEMPLATE_NOTE[props.templateOrigin]} · /help lists commands`),
      ...(conversation.system === undefined ? [] : [make('system', conversation.system)]),
    ],
  })

  const leave = useCallback(
    (code: number) => {
      if (exiting.current) return
      exiting.current = true
      stopReply()
      props.onExit(code)
      exit()
    },
    [exit, props, stopReply],
  )

  const submit = useCallback(
    async (text: string) => {
      const parsed = parseInput(text)
      if (parsed.kind === 'message') {
        await runTurn(parsed.text)
        return
      }
      // A command runs alone: no message (and no other command) starts until it is done.
      busy.current = true
      const outcome = await runSlashCommand(conversation, parsed.command).finally(() => {
        busy.current = false
      })
      if (outcome.exit) {
        leave(0)
        return
      }
      const items: TranscriptItem[] = [item(outcome.ok ? 'notice' : 'error', outcome.text)]
      if (outcome.loaded) items.push(...outcome.loaded.map((m: ChatMessage) => item(m.role === 'tool' ? 'notice' : m.role, m.content)))
      append(...items)
    },
    [append, busy, conversation, item, leave, runTurn],
  )
  const {editor, hint} = useChatInput({busy, exiting, stopReply, leave, submit})
  useBracketedPaste(stdout)
  useResizeRedraw(
    stdout,
    useCallback(
      (columns: number) => {
        stats.redraws++
        redraw(columns - INDENT.assistant - 1)
      },
      [redraw, stats],
    ),
  )

  const columns = stdout.columns || 80
  columnsRef.current = columns
  const status = formatStatus({
    modelName: props.modelName,
    templateOrigin: props.templateOrigin,
    nCtx: props.nCtx,
    // The conversation's count changes only when a turn ends: while a reply is written, count it here.
    contextUsed: transcript.live !== undefined ? liveContextUsed(transcript.prompt, transcript.generated) : conversation.contextUsed,
    last: conversation.last,
    ...(transcript.live !== undefined ? {generating: transcript.generated, generatingCached: transcript.cached} : {}),
  })

  return (
    <>
      <Static key={transcript.epoch} items={[...transcript.items]}>
        {(it) => <Item key={it.id} item={it} columns={columns} color={color} />}
      </Static>
      {transcript.live !== undefined ? (
        <Box paddingLeft={2}>
          <Text>{transcript.live || ' '}</Text>
        </Box>
      ) : null}
      <Box marginTop={1} flexDirection="column">
        <InputView
          editor={editor}
          busy={transcript.live !== undefined}
          color={color}
          columns={columns}
          top={transcript.live !== undefined ? 2 : 1}
        />
        {hint === undefined ? null : (
          <Text {...paint(color, {color: 'yellow'})} wrap="truncate-end">
            {hint}
          </Text>
        )}
        <Text {...paint(color, {dimColor: true})} wrap="truncate-end">
          {status}
        </Text>
      </Box>
    </>
  )
}

/** Columns each kind of item takes before its text (its prefix or indentation). */
const INDENT: Record<ItemKind, number> = {banner: 0, user: 2, assistant: 2, system: 8, notice: 2, error: 2}

function Item({item: raw, columns, color}: {item: TranscriptItem; columns: number; color: boolean}): React.JSX.Element {
  // Wrapped here, one column short of the edge, so Ink writes the rows as they are.
  const item = {...raw, text: wrapText(displayText(raw.text), columns - INDENT[raw.kind] - 1).join('\n')}
  switch (item.kind) {
    case 'banner':
      return <Text {...paint(color, {dimColor: true})}>{item.text}</Text>
    case 'user':
      return (
        <Box marginTop={1}>
          <Text {...paint(color, {color: 'cyan', bold: true})}>{'› '}</Text>
          <Text>{item.text}</Text>
        </Box>
      )
    case 'assistant':
      return (
        <Box paddingLeft={2}>
          <Text>{item.text}</Text>
        </Box>
      )
    case 'system':
      return (
        <Box marginTop={1}>
          <Text {...paint(color, {color: 'magenta'})}>{'system: '}</Text>
          <Text>{item.text}</Text>
        </Box>
      )
    case 'notice':
      return (
        <Box>
          <Text {...paint(color, {color: 'yellow'})}>{'· '}</Text>
          <Text {...paint(color, {color: 'yellow'})}>{item.text}</Text>
        </Box>
      )
    case 'error':
      return (
        <Box>
          <Text {...paint(color, {color: 'red'})}>{'✗ '}</Text>
          <Text {...paint(color, {color: 'red'})}>{item.text}</Text>
        </Box>
      )
  }
}
