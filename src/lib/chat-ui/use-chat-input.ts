/**
 * The keyboard side of the chat screen, as hooks: the editor and its hint line, Ctrl+C (stop the
 * reply, else arm, then exit), Esc, Ctrl+D, Enter while a reply is written; and bracketed paste.
 */
import {useInput} from 'ink'
import {useCallback, useEffect, useRef, useState} from 'react'

import {applyAction, type EditorAction, type EditorState, emptyEditor, keyActions} from './editor.js'

type Key = Parameters<Parameters<typeof useInput>[0]>[1]

export interface ChatInputOptions {
  /** A reply or a command is running: Enter keeps the text instead of sending it. */
  readonly busy: {readonly current: boolean}
  /** The app is leaving: keys are ignored. */
  readonly exiting: {readonly current: boolean}
  /** Stop the reply being written; false when there is none. */
  readonly stopReply: () => boolean
  readonly leave: (code: number) => void
  readonly submit: (text: string) => unknown
}

export function useChatInput(options: ChatInputOptions): {editor: EditorState; hint: string | undefined} {
  const {busy, exiting, stopReply, leave, submit} = options
  const [editor, setEditor] = useState<EditorState>(() => emptyEditor())
  const [hint, setHint] = useState<string | undefined>(undefined)
  const editorRef = useRef(editor)
  const exitArmed = useRef(false)

  const onAction = useCallback(
    (action: EditorAction) => {
      if (action.type === 'interrupt') {
        if (stopReply()) return
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
        stopReply()
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
    [busy, leave, stopReply, submit],
  )
  const onInput = useCallback(
    (input: string, key: Key) => {
      if (exiting.current) return
      for (const action of keyActions(input, key)) onAction(action)
    },
    [exiting, onAction],
  )
  useInput(onInput)
  return {editor, hint}
}

/**
 * Bracketed paste: a pasted newline is a new line of the message, not Enter. xterm's
 * modifyOtherKeys (level 1) makes xterm, and tmux with extended-keys on, report Shift+Enter
 * (CSI 27;2;13~) instead of a plain CR; terminals without it ignore the request.
 */
export function useBracketedPaste(stdout: NodeJS.WriteStream): void {
  useEffect(() => {
    if (!stdout.isTTY) return
    stdout.write('\u001B[?2004h\u001B[>4;1m')
    return () => {
      stdout.write('\u001B[?2004l\u001B[>4;0m')
    }
  }, [stdout])
}
