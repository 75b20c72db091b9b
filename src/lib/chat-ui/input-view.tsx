/**
 * The input under the conversation: "› " before the message's first line, each line cut into rows
 * here (not by Ink) so the row and column of the cursor are known. With colour the cursor is an
 * inverse cell; without (NO_COLOR) it is the terminal's own cursor, placed through Ink's useCursor,
 * since an inverse cell is an SGR escape too.
 */
import {Box, Text, useCursor} from 'ink'

import {paint} from './color.js'
import type {EditorState} from './editor.js'
import {charWidth} from './transcript.js'

export interface InputRow {
  /** The first row of the message (it gets the "› " prompt). */
  readonly first: boolean
  readonly text: string
  /** Where the cursor sits in `text` (a UTF-16 index), when it is on this row. */
  readonly cursor?: number
}

const width = (s: string) => [...s].reduce((n, ch) => n + charWidth(ch), 0)

/** The message's rows at `columns` wide: lines cut by characters, the cursor's row marked. */
export function inputRows(editor: EditorState, columns: number): InputRow[] {
  const rows: InputRow[] = []
  let offset = 0
  for (const [i, line] of editor.text.split('\n').entries()) {
    const segments: string[] = []
    let row = ''
    let used = 0
    for (const ch of line) {
      const w = charWidth(ch)
      if (used + w > columns && row !== '') {
        segments.push(row)
        row = ''
        used = 0
      }
      row += ch
      used += w
    }
    segments.push(row)
    for (const [j, text] of segments.entries()) {
      const at = editor.cursor - offset
      // The cursor at a row's end belongs to the next row of the line, unless this is the last.
      const here = at >= 0 && (at < text.length || (at === text.length && j === segments.length - 1))
      rows.push({first: i === 0 && j === 0, text, ...(here ? {cursor: at} : {})})
      offset += text.length
    }
    offset += 1
  }
  return rows
}

export interface InputViewProps {
  readonly editor: EditorState
  readonly busy: boolean
  readonly color: boolean
  readonly columns: number
  /** The input's first row within Ink's live area (where useCursor counts from). */
  readonly top: number
}

export function InputView({editor, busy, color, columns, top}: InputViewProps): React.JSX.Element {
  // Two columns of prompt, one kept free for a cursor cell at the end of a full row.
  const rows = inputRows(editor, Math.max(8, columns - 3))
  const {setCursorPosition} = useCursor()
  const at = rows.findIndex((r) => r.cursor !== undefined)
  setCursorPosition(color || at < 0 ? undefined : {x: 2 + width(rows[at]!.text.slice(0, rows[at]!.cursor)), y: top + at})
  return (
    <Box flexDirection="column">
      {rows.map((row, i) => {
        const c = row.cursor
        const under = c !== undefined && c < row.text.length ? String.fromCodePoint(row.text.codePointAt(c)!) : ' '
        return (
          <Box key={i}>
            <Text {...paint(color, {color: busy ? 'gray' : 'cyan', bold: true})}>{row.first ? '› ' : '  '}</Text>
            {c !== undefined && color ? (
              <Text>
                {row.text.slice(0, c)}
                <Text inverse>{under}</Text>
                {row.text.slice(c + (c < row.text.length ? under.length : 0))}
              </Text>
            ) : (
              <Text>{row.text}</Text>
            )}
          </Box>
        )
      })}
    </Box>
  )
}
