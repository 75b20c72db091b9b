/**
 * The turn logic of the chat screen, as a React hook: the transcript (finished items for <Static>,
 * the row being written), sending a message, streaming its reply at most one state update per frame,
 * the notes after a turn, and stopping a reply. ChatApp only renders what this holds.
 */
import {useCallback, useRef, useState} from 'react'

import {RunnerError} from '../errors.js'
import type {RenderStats} from './app.js'
import type {ChatConversation} from './conversation.js'
import {cutMarker} from './cut-marker.js'
import {type ItemKind, ReplyWrapper, type TranscriptItem} from './transcript.js'

export interface Transcript {
  readonly items: readonly TranscriptItem[]
  /** The line of the reply being written (undefined when idle). */
  readonly live: string | undefined
  readonly generated: number
  readonly cached: number
  /** Prompt tokens of the reply being generated (the status line's context use counts them). */
  readonly prompt: number
  /** Bumped when the whole transcript is written again (after a resize): <Static>'s key. */
  readonly epoch: number
}

export interface ChatTurnOptions {
  readonly conversation: ChatConversation
  readonly stats: RenderStats
  /** Least time between two frames while streaming (ms). */
  readonly frameMs: number
  /** Columns a reply row may take (read when a turn starts). */
  readonly replyColumns: () => number
  /** The items the transcript starts with (made once, with the hook's item ids). */
  readonly initial: (item: (kind: ItemKind, text: string) => TranscriptItem) => TranscriptItem[]
}

export interface ChatTurnState {
  readonly transcript: Transcript
  readonly item: (kind: ItemKind, text: string) => TranscriptItem
  readonly append: (...items: TranscriptItem[]) => void
  /** Send a message and stream its reply; resolves when the turn is over (refusals become an error item). */
  readonly runTurn: (text: string) => Promise<void>
  /** Stop the reply being written; false when there is none. */
  readonly stopReply: () => boolean
  /** A reply or a command is running: a new message must wait. */
  readonly busy: {current: boolean}
  /**
   * Write the whole transcript again, the reply being written wrapped anew at `replyColumns` (the
   * terminal was resized and its screen cleared).
   */
  readonly redraw: (replyColumns: number) => void
}

export function useChatTurn(options: ChatTurnOptions): ChatTurnState {
  const {conversation, stats, frameMs, replyColumns} = options
  const nextId = useRef(0)
  const item = useCallback((kind: ItemKind, text: string): TranscriptItem => ({id: nextId.current++, kind, text}), [])
  const [transcript, setTranscript] = useState<Transcript>(() => ({
    items: options.initial(item),
    live: undefined,
    generated: 0,
    cached: 0,
    prompt: 0,
    epoch: 0,
  }))
  const busy = useRef(false)
  const abortRef = useRef<AbortController | undefined>(undefined)
  /** The reply being written: its turn (its rows' tag) and its wrapper. */
  const replyRef = useRef<{turn: number; wrapper: ReplyWrapper} | undefined>(undefined)
  /** Finished replies' text by turn: a redraw writes each as one item, wrapped at the new width. */
  const replies = useRef(new Map<number, string>())
  const append = useCallback((...items: TranscriptItem[]) => setTranscript((t) => ({...t, items: [...t.items, ...items]})), [])

  const stopReply = useCallback(() => {
    if (!abortRef.current) return false
    abortRef.current.abort()
    return true
  }, [])

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
      if (turn.plan.dropped > 0)
        head.push(item('notice', `dropped the ${turn.plan.dropped} oldest messages to fit the context (--context-shift)`))
      setTranscript((t) => ({
        ...t,
        items: [...t.items, ...head],
        live: '',
        generated: 0,
        cached: turn.cachedTokens,
        prompt: turn.plan.prompt.length,
      }))
      const wrapper = new ReplyWrapper(replyColumns())
      // The reply's rows are tagged with its message's id.
      const turnId = head[0]!.id
      replyRef.current = {turn: turnId, wrapper}
      let buffer = ''
      let generated = 0
      let dirty = false
      // One state update per frame: finished rows to <Static>, the row being written to the live area.
      const flush = (final: boolean) => {
        const {rows, live} = wrapper.push(buffer)
        buffer = ''
        if (final) rows.push(...wrapper.end())
        const chunk = rows.length > 0 ? {...item('assistant', rows.join('\n')), turn: turnId} : undefined
        setTranscript((t) => ({...t, items: chunk ? [...t.items, chunk] : t.items, live: final ? undefined : live, generated}))
      }
      const timer = setInterval(() => {
        if (!dirty) return
        dirty = false
        flush(false)
      }, frameMs)
      let failure: unknown
      try {
        for await (const e of turn.stream) {
          buffer += e.text
          if (e.token >= 0) {
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
      replies.current.set(turnId, wrapper.text)
      replyRef.current = undefined
      stats.generating = false
      busy.current = false
      abortRef.current = undefined
      const notes: TranscriptItem[] = []
      const cut = result && cutMarker(result)
      if (failure !== undefined) notes.push(item('error', failure instanceof RunnerError ? failure.message : String(failure)))
      else if (result && !result.kept) notes.push(item('notice', 'stopped before the first token; nothing was added to the conversation'))
      else if (result?.finishReason === 'aborted')
        notes.push(item('notice', `stopped after ${result.tokens.length} tokens (kept in the conversation)`))
      else if (result && result.reply.trim() === '')
        notes.push(item('notice', `empty reply (${result.finishReason === 'eos' ? 'the model ended it at once' : result.finishReason})`))
      else if (cut) notes.push(item('notice', cut))
      else if (result?.finishReason === 'context') {
        notes.push(
          item(
            'error',
            'the reply stopped because the context is full: /reset starts over (or restart with --context-shift or a larger -c)',
          ),
        )
      }
      if (result && result.shifts.count > 0)
        notes.push(
          item(
            'notice',
            `the context was full: shifted ${result.shifts.count} time(s), ${result.shifts.discarded} tokens after the system prompt dropped`,
          ),
        )
      if (notes.length > 0) append(...notes)
    },
    [append, conversation, frameMs, item, replyColumns, stats],
  )

  const redraw = useCallback(
    (columns: number) => {
      const reply = replyRef.current
      const again = reply?.wrapper.rewrap(columns)
      setTranscript((t) => {
        // A reply's rows went out in chunks, each wrapped for the width of its time: a finished reply
        // becomes one item of its whole text (wrapped by <Static> at the new width), the one being
        // written one item of its finished rows at the new width.
        const items: TranscriptItem[] = []
        for (const it of t.items) {
          if (it.turn === undefined) items.push(it)
          else if (it.turn === reply?.turn || items.at(-1)?.turn === it.turn) continue
          else items.push({...it, text: replies.current.get(it.turn) ?? it.text})
        }
        if (reply && again && again.rows.length > 0) items.push({...item('assistant', again.rows.join('\n')), turn: reply.turn})
        return {...t, items, ...(again ? {live: again.live} : {}), epoch: t.epoch + 1}
      })
    },
    [item],
  )

  return {transcript, item, append, runTurn, stopReply, busy, redraw}
}
