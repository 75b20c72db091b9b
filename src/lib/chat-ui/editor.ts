/**
 * The input line of `runner chat` as pure functions: a key (Ink's `input` and `key`) becomes an
 * action, and an action turns one editor state into the next. No terminal, no React: the unit tests
 * drive these directly, and the Ink component only stores the state.
 */

/** The fields of Ink's Key this editor reads. */
export interface KeyLike {
  readonly upArrow?: boolean
  readonly downArrow?: boolean
  readonly leftArrow?: boolean
  readonly rightArrow?: boolean
  readonly home?: boolean
  readonly end?: boolean
  readonly return?: boolean
  readonly escape?: boolean
  readonly ctrl?: boolean
  readonly shift?: boolean
  readonly meta?: boolean
  readonly backspace?: boolean
  readonly delete?: boolean
  readonly tab?: boolean
}

export type EditorAction =
  | {readonly type: 'insert'; readonly text: string}
  | {readonly type: 'newline'}
  /** Enter: send, or a new line after a trailing backslash or inside a paste. */
  | {readonly type: 'submit'}
  | {readonly type: 'backspace'}
  | {readonly type: 'left'}
  | {readonly type: 'right'}
  | {readonly type: 'home'}
  | {readonly type: 'end'}
  | {readonly type: 'up'}
  | {readonly type: 'down'}
  | {readonly type: 'kill-line'}
  | {readonly type: 'kill-word'}
  | {readonly type: 'paste-start'}
  | {readonly type: 'paste-end'}
  /** Ctrl+C: stop a generation, or (idle) arm / confirm exit. */
  | {readonly type: 'interrupt'}
  /** Esc: stop a generation. */
  | {readonly type: 'escape'}
  /** Ctrl+D: exit. */
  | {readonly type: 'eof'}

export interface EditorState {
  readonly text: string
  /** Index into text (UTF-16 units), 0..text.length. */
  readonly cursor: number
  /** Earlier inputs, oldest first. */
  readonly history: readonly string[]
  /** Which history entry is shown; history.length = the draft being written. */
  readonly historyIndex: number
  /** What was being written before Up recalled history. */
  readonly draft: string
  /** Inside a bracketed paste: Enter inserts a line instead of sending. */
  readonly pasting: boolean
}

export function emptyEditor(history: readonly string[] = []): EditorState {
  return {text: '', cursor: 0, history, historyIndex: history.length, draft: '', pasting: false}
}

/**
 * Enter with a modifier as a key sequence Ink leaves unnamed (its ESC stripped): xterm's
 * modifyOtherKeys `CSI 27;MOD;13~` and kitty's `CSI 13;MOD u`. Shift/Alt/Ctrl+Enter all add a line.
 */
const MODIFIED_ENTER = /^\[(?:27;\d+;13~|13;\d+u)$/
/** Any other key sequence Ink leaves unnamed: not text, ignored. */
const UNNAMED_SEQUENCE = /^\[[\d;:]*[~u]$/

/**
 * Map one Ink input event to editor actions: one for a key, several for a chunk of typed text with
 * Enter in it ("hello\r" arrives in one read when typing is fast or scripted). Every CR outside a
 * bracketed paste is Enter; a paste in a terminal with bracketed paste arrives between paste-start
 * and paste-end, where applyAction turns Enter into a new line.
 */
export function keyActions(input: string, key: KeyLike): EditorAction[] {
  if (input === '[200~') return [{type: 'paste-start'}]
  if (input === '[201~') return [{type: 'paste-end'}]
  if (MODIFIED_ENTER.test(input)) return [{type: 'newline'}]
  if (UNNAMED_SEQUENCE.test(input) && !key.return) return []
  if (key.ctrl && !key.meta) {
    const action = CTRL_KEYS[input]
    if (action) return [action]
  }
  if (key.return) return [key.shift || key.meta ? {type: 'newline'} : {type: 'submit'}]
  if (key.escape) return [{type: 'escape'}]
  if (key.backspace || key.delete) return [{type: 'backspace'}]
  if (key.leftArrow) return [{type: 'left'}]
  if (key.rightArrow) return [{type: 'right'}]
  if (key.upArrow) return [{type: 'up'}]
  if (key.downArrow) return [{type: 'down'}]
  if (key.home) return [{type: 'home'}]
  if (key.end) return [{type: 'end'}]
  if (key.tab) return [{type: 'insert', text: '  '}]
  if (input === '' || key.ctrl) return []
  // A lone LF is Ctrl+J (a new line). In a longer chunk an LF is Enter too: text typed before the
  // UI switched the terminal to raw mode arrives as cooked lines ending in LF.
  if (input === '\n') return [{type: 'newline'}]
  const actions: EditorAction[] = []
  input
    .replace(/\r\n?|\n/g, '\r')
    .split('\r')
    .forEach((part, i) => {
      if (i > 0) actions.push({type: 'submit'})
      const text = stripControls(part)
      if (text !== '') actions.push({type: 'insert', text})
    })
  return actions
}

const CTRL_KEYS: Readonly<Record<string, EditorAction>> = {
  c: {type: 'interrupt'},
  d: {type: 'eof'},
  a: {type: 'home'},
  e: {type: 'end'},
  u: {type: 'kill-line'},
  w: {type: 'kill-word'},
  j: {type: 'newline'},
  b: {type: 'left'},
  f: {type: 'right'},
  p: {type: 'up'},
  n: {type: 'down'},
}

/** Drop control characters (other than newline and tab) that would corrupt the screen. */
function stripControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '')
}

export interface EditResult {
  readonly state: EditorState
  /** Set when the input was sent: the text to handle (a message or a slash command). */
  readonly submitted?: string
}

/** The index one character (code point) before / after i: a surrogate pair moves as one. */
function before(text: string, i: number): number {
  return i >= 2 && /[\udc00-\udfff]/.test(text[i - 1]!) && /[\ud800-\udbff]/.test(text[i - 2]!) ? i - 2 : Math.max(0, i - 1)
}
function after(text: string, i: number): number {
  return i + 2 <= text.length && /[\ud800-\udbff]/.test(text[i]!) && /[\udc00-\udfff]/.test(text[i + 1]!)
    ? i + 2
    : Math.min(text.length, i + 1)
}

function insert(s: EditorState, text: string): EditorState {
  return {...s, text: s.text.slice(0, s.cursor) + text + s.text.slice(s.cursor), cursor: s.cursor + text.length}
}

/** Column and line start of the cursor. */
function lineOf(text: string, cursor: number): {start: number; column: number} {
  const start = text.lastIndexOf('\n', cursor - 1) + 1
  return {start, column: cursor - start}
}

function recall(s: EditorState, index: number): EditorState {
  const text = index === s.history.length ? s.draft : s.history[index]!
  const draft = s.historyIndex === s.history.length ? s.text : s.draft
  return {...s, historyIndex: index, draft, text, cursor: text.length}
}

/** Apply an editing action. Interrupt, escape and eof are the caller's; they leave the state alone. */
export function applyAction(s: EditorState, action: EditorAction): EditResult {
  switch (action.type) {
    case 'insert':
      return {state: insert(s, action.text)}
    case 'newline':
      return {state: insert(s, '\n')}
    case 'paste-start':
      return {state: {...s, pasting: true}}
    case 'paste-end':
      return {state: {...s, pasting: false}}
    case 'submit': {
      const typed = s
      if (s.pasting) return {state: insert(typed, '\n')}
      // A trailing backslash continues the input on a new line (as in a shell).
      if (typed.cursor === typed.text.length && typed.text.endsWith('\\')) {
        return {state: {...typed, text: `${typed.text.slice(0, -1)}\n`, cursor: typed.text.length}}
      }
      const text = typed.text
      if (text.trim() === '') return {state: {...typed, text: '', cursor: 0}}
      const history = s.history.at(-1) === text ? s.history : [...s.history, text]
      return {state: emptyEditor(history), submitted: text}
    }
    case 'backspace': {
      if (s.cursor === 0) return {state: s}
      const at = before(s.text, s.cursor)
      return {state: {...s, text: s.text.slice(0, at) + s.text.slice(s.cursor), cursor: at}}
    }
    case 'left':
      return {state: {...s, cursor: before(s.text, s.cursor)}}
    case 'right':
      return {state: {...s, cursor: after(s.text, s.cursor)}}
    case 'home':
      return {state: {...s, cursor: lineOf(s.text, s.cursor).start}}
    case 'end': {
      const nl = s.text.indexOf('\n', s.cursor)
      return {state: {...s, cursor: nl < 0 ? s.text.length : nl}}
    }
    case 'up': {
      const {start, column} = lineOf(s.text, s.cursor)
      if (start > 0) {
        const prev = lineOf(s.text, start - 1)
        return {state: {...s, cursor: prev.start + Math.min(column, start - 1 - prev.start)}}
      }
      return {state: s.historyIndex > 0 ? recall(s, s.historyIndex - 1) : s}
    }
    case 'down': {
      const nl = s.text.indexOf('\n', s.cursor)
      if (nl >= 0) {
        const {column} = lineOf(s.text, s.cursor)
        const nextEnd = s.text.indexOf('\n', nl + 1)
        const nextLength = (nextEnd < 0 ? s.text.length : nextEnd) - (nl + 1)
        return {state: {...s, cursor: nl + 1 + Math.min(column, nextLength)}}
      }
      return {state: s.historyIndex < s.history.length ? recall(s, s.historyIndex + 1) : s}
    }
    case 'kill-line': {
      const {start} = lineOf(s.text, s.cursor)
      return {state: {...s, text: s.text.slice(0, start) + s.text.slice(s.cursor), cursor: start}}
    }
    case 'kill-word': {
      const before = s.text.slice(0, s.cursor).replace(/\S+\s*$/, '')
      return {state: {...s, text: before + s.text.slice(s.cursor), cursor: before.length}}
    }
    default:
      return {state: s}
  }
}
