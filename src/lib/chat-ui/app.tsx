/**
 * The Ink UI of `runner chat`: the conversation above, the input below, a status line under it.
 *
 * Rendering budget: finished turns and the finished rows of the reply being written go into
 * <Static>, which Ink writes once; only the row being written, the input and the status line are
 * redrawn. Tokens are collected as they arrive and shown at most once per `frameMs` (one state
 * update per frame), so a fast model does not cost one frame per token (docs/chat.md has the
 * measurement).
 */
import {Box, Static, Text, useApp, useInput, useStdout} from 'ink'
import {useCallback, useEffect, useRef, useState} from 'react'

import type {ChatMessage, ChatTemplateSource} from '../chat/index.js'
import {RunnerError} from '../errors.js'
import {runSlashCommand} from './commands.js'
import type {ChatConversation} from './conversation.js'
import {applyAction, type EditorAction, type EditorState, emptyEditor, keyActions} from './editor.js'
import {parseInput} from './slash.js'
import {formatStatus} from './status.js'
import {displayText, type ItemKind, ReplyWrapper, type TranscriptItem, wrapText} from './transcript.js'

type Key = Parameters<Parameters<typeof useInput>[0]>[1]

/** Counters the command can write out (RUNNER_CHAT_STATS) to measure frames per token. */
export interface RenderStats {
  /** Ink frames rendered (its onRender callback). */
  frames: number
  /** Frames rendered while a reply was being generated. */
  streamFrames: number
  /** Tokens generated. */
  tokens: number
  generating: boolean
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
}

interface Transcript {
  readonly items: readonly TranscriptItem[]
  /** The line of the reply being written (undefined when idle). */
  readonly live: string | undefined
  readonly generated: number
  readonly cached: number
}

export function ChatApp(props: ChatAppProps): React.JSX.Element {
  const {conversation, stats} = props
  const frameMs = props.frameMs ?? 30
  const {exit} = useApp()
  const {stdout} = useStdout()
  const nextId = useRef(0)
  const banner = (): TranscriptItem[] => {
    const items: TranscriptItem[] = [
      {
        id: nextId.current++,
        kind: 'banner',
        text: `runner chat · ${props.modelName} · ${props.templateOrigin === 'fallback-chatml' ? 'no chat template in the model: ChatML fallback' : props.templateOrigin === 'override' ? 'template from --chat-template' : "the model's chat template"} · /help lists commands`,
      },
    ]
    if (conversation.system !== undefined) items.push({id: nextId.current++, kind: 'system', text: conversation.system})
    return items
  }
  const [transcript, setTranscript] = useState<Transcript>(() => ({items: banner(), live: undefined, generated: 0, cached: 0}))
  const [editor, setEditor] = useState<EditorState>(() => emptyEditor())
  const [hint, setHint] = useState<string | undefined>(undefined)
  const editorRef = useRef(editor)
  const busy = useRef(false)
  const abortRef = useRef<AbortController | undefined>(undefined)
  const exitArmed = useRef(false)
  const exiting = useRef(false)
  const columnsRef = useRef(stdout.columns || 80)

  const item = (kind: ItemKind, text: string): TranscriptItem => ({id: nextId.current++, kind, text})
  const append = useCallback((...items: TranscriptItem[]) => setTranscript((t) => ({...t, items: [...t.items, ...items]})), [])

  const leave = useCallback(
    (code: number) => {
      if (exiting.current) return
      exiting.current = true
      abortRef.current?.abort()
      props.onExit(code)
      exit()
    },
    [exit, props],
  )

  const runTurn = useCallback(
    async (text: string) => {
      const abort = new AbortController()
      let turn
      try {
        turn = conversation.send(text, abort.signal)
      } catch (error) {
        // Refused (it does not fit, or the template cannot render it): nothing changed, nothing sent.
        append(item('error', `${error instanceof RunnerError ? error.message : String(error)} (not sent; Up recalls it)`))
        return
      }
      busy.current = true
      abortRef.current = abort
      stats.generating = true
      const head = [item('user', text)]
      if (turn.plan.dropped > 0) head.push(item('notice', `dropped the ${turn.plan.dropped} oldest messages to fit the context (--context-shift)`))
      setTranscript((t) => ({items: [...t.items, ...head], live: '', generated: 0, cached: turn.cachedTokens}))
      const wrapper = new ReplyWrapper(columnsRef.current - INDENT.assistant - 1)
      let buffer = ''
      let generated = 0
      let dirty = false
      // One state update per frame: finished rows to <Static>, the row being written to the live area.
      const flush = (final: boolean) => {
        const {rows, live} = wrapper.push(buffer)
        buffer = ''
        if (final) rows.push(...wrapper.end())
        const chunk = rows.length > 0 ? item('assistant', rows.join('\n')) : undefined
        setTranscript((t) => ({
          items: chunk ? [...t.items, chunk] : t.items,
          live: final ? undefined : live,
          generated,
          cached: t.cached,
        }))
      }
      const timer = setInterval(() => {
        if (!dirty) return
        dirty = false
        flush(false)
      }, frameMs)
      let failure: unknown
      try {
        for await (const t of turn.stream) {
          buffer += t.text
          if (t.token >= 0) {
            generated++
            stats.tokens++
          }
          dirty = true
        }
      } catch (error) {
        failure = error
      } finally {
        clearInterval(timer)
      }
      const result = failure === undefined ? await turn.result.catch((error: unknown) => ((failure = error), undefined)) : undefined
      flush(true)
      stats.generating = false
      busy.current = false
      abortRef.current = undefined
      const notes: TranscriptItem[] = []
      if (failure !== undefined) notes.push(item('error', failure instanceof RunnerError ? failure.message : String(failure)))
      else if (result && !result.kept) notes.push(item('notice', 'stopped before the first token; nothing was added to the conversation'))
      else if (result?.finishReason === 'aborted') notes.push(item('notice', `stopped after ${result.tokens.length} tokens (kept in the conversation)`))
      else if (result && result.reply.trim() === '') notes.push(item('notice', `empty reply (${result.finishReason === 'eos' ? 'the model ended it at once' : result.finishReason})`))
      else if (result?.finishReason === 'context') {
        notes.push(item('error', 'the reply stopped because the context is full: /reset starts over (or restart with --context-shift or a larger -c)'))
      }
      if (notes.length > 0) append(...notes)
    },
    [append, conversation, frameMs, stats],
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
      if (outcome.loaded) items.push(...outcome.loaded.map((m: ChatMessage) => item(m.role, m.content)))
      append(...items)
    },
    [append, conversation, leave, runTurn],
  )

  const onAction = useCallback(
    (action: EditorAction) => {
      if (action.type === 'interrupt') {
        if (abortRef.current) {
          abortRef.current.abort()
          return
        }
        if (exitArmed.current) {
          leave(130)
          return
        }
        exitArmed.current = true
        setHint('Ctrl+C again exits (so does Ctrl+D or /exit)')
        return
      }
      exitArmed.current = false
      setHint(undefined)
      if (action.type === 'eof') {
        leave(0)
        return
      }
      if (action.type === 'escape') {
        abortRef.current?.abort()
        return
      }
      const current = editorRef.current
      if (busy.current && action.type === 'submit' && !current.pasting && !current.text.endsWith('\\')) {
        setHint('a reply is being written: Esc stops it; your text stays here')
        return
      }
      const {state, submitted} = applyAction(current, action)
      editorRef.current = state
      setEditor(state)
      if (submitted !== undefined) void submit(submitted)
    },
    [leave, submit],
  )
  const onInput = useCallback(
    (input: string, key: Key) => {
      if (exiting.current) return
      for (const action of keyActions(input, key)) onAction(action)
    },
    [onAction],
  )
  useInput(onInput)

  // Bracketed paste: a pasted newline is a new line of the message, not Enter. xterm's
  // modifyOtherKeys (level 1) makes xterm, and tmux with extended-keys on, report Shift+Enter
  // (CSI 27;2;13~) instead of a plain CR; terminals without it ignore the request.
  useEffect(() => {
    if (!stdout.isTTY) return
    stdout.write('\u001B[?2004h\u001B[>4;1m')
    return () => {
      stdout.write('\u001B[?2004l\u001B[>4;0m')
    }
  }, [stdout])

  const columns = stdout.columns || 80
  columnsRef.current = columns
  const status = formatStatus({
    modelName: props.modelName,
    templateOrigin: props.templateOrigin,
    nCtx: props.nCtx,
    contextUsed: conversation.contextUsed,
    last: conversation.last,
    ...(transcript.live !== undefined ? {generating: transcript.generated, generatingCached: transcript.cached} : {}),
  })

  return (
    <>
      <Static items={[...transcript.items]}>{(it) => <Item key={it.id} item={it} columns={columns} />}</Static>
      {transcript.live !== undefined ? (
        <Box paddingLeft={2}>
          <Text>{transcript.live || ' '}</Text>
        </Box>
      ) : null}
      <Box marginTop={1} flexDirection="column">
        <InputView editor={editor} busy={transcript.live !== undefined} />
        {hint === undefined ? null : (
          <Text color="yellow" wrap="truncate-end">
            {hint}
          </Text>
        )}
        <Text dimColor wrap="truncate-end">
          {status}
        </Text>
      </Box>
    </>
  )
}

/** Columns each kind of item takes before its text (its prefix or indentation). */
const INDENT: Record<ItemKind, number> = {banner: 0, user: 2, assistant: 2, system: 8, notice: 2, error: 2}

function Item({item: raw, columns}: {item: TranscriptItem; columns: number}): React.JSX.Element {
  // Wrapped here, one column short of the edge, so Ink writes the rows as they are.
  const item = {...raw, text: wrapText(displayText(raw.text), columns - INDENT[raw.kind] - 1).join('\n')}
  switch (item.kind) {
    case 'banner':
      return <Text dimColor>{item.text}</Text>
    case 'user':
      return (
        <Box marginTop={1}>
          <Text color="cyan" bold>
            {'› '}
          </Text>
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
          <Text color="magenta">{'system: '}</Text>
          <Text>{item.text}</Text>
        </Box>
      )
    case 'notice':
      return (
        <Box>
          <Text color="yellow">{'· '}</Text>
          <Text color="yellow">{item.text}</Text>
        </Box>
      )
    case 'error':
      return (
        <Box>
          <Text color="red">{'✗ '}</Text>
          <Text color="red">{item.text}</Text>
        </Box>
      )
  }
}

/** The input: "› " before the first line, the cursor as an inverse cell. */
function InputView({editor, busy}: {editor: EditorState; busy: boolean}): React.JSX.Element {
  const lines = editor.text.split('\n')
  let offset = 0
  return (
    <Box flexDirection="column">
      {lines.map((line, i) => {
        const start = offset
        offset += line.length + 1
        const at = editor.cursor - start
        const hasCursor = at >= 0 && at <= line.length
        return (
          <Box key={i}>
            <Text color={busy ? 'gray' : 'cyan'} bold>
              {i === 0 ? '› ' : '  '}
            </Text>
            {hasCursor ? (
              <Text>
                {line.slice(0, at)}
                <Text inverse>{at < line.length ? String.fromCodePoint(line.codePointAt(at)!) : ' '}</Text>
                {at < line.length ? line.slice(at + String.fromCodePoint(line.codePointAt(at)!).length) : ''}
              </Text>
            ) : (
              <Text>{line}</Text>
            )}
          </Box>
        )
      })}
    </Box>
  )
}
