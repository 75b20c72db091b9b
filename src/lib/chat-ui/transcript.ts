/**
 * How a streaming reply reaches the screen without redrawing history. Finished rows of the reply
 * move into Ink's <Static> (written once, then part of the terminal's scrollback); only the row
 * being written stays in the live area that Ink redraws. Pure, so tests pin it.
 */

export type ItemKind = 'banner' | 'user' | 'assistant' | 'notice' | 'error' | 'system'

export interface TranscriptItem {
  readonly id: number
  readonly kind: ItemKind
  readonly text: string
  /** Rows of the reply being written carry its turn, so a resize can wrap them again as one. */
  readonly turn?: number
}

/**
 * Columns a character takes in a terminal, near enough: 0 for combining marks and zero-width
 * characters, 2 for East Asian wide characters and emoji, 1 otherwise.
 */
export function charWidth(ch: string): number {
  const cp = ch.codePointAt(0)!
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe00 && cp <= 0xfe0f))
    return 0
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2
  }
  return 1
}

/**
 * Word-wrap text to `columns`: each line broken at spaces (a word longer than a line is cut), the
 * spaces at a break dropped. The chat wraps what it shows itself, so Ink has nothing left to wrap:
 * Ink 6.8's wrap keeps the space at a break, which pushes a full line one column past the edge.
 */
export function wrapText(text: string, columns: number): string[] {
  const width = Math.max(8, columns)
  const rows: string[] = []
  for (const line of text.split('\n')) {
    let row = ''
    let used = 0
    let continued = false
    const breakRow = () => {
      rows.push(row.trimEnd())
      row = ''
      used = 0
      continued = true
    }
    for (const word of line.split(/(?<= )/)) {
      const chars = [...word]
      const w = chars.reduce((n, ch) => n + charWidth(ch), 0)
      const visible = w - (word.endsWith(' ') ? 1 : 0)
      // A word that does not fit moves to a fresh row (where one longer than a row is cut). So a
      // row never changes once the next one has begun, however the last word grows: what
      // ReplyWrapper relies on to write finished rows while the reply is still being written.
      if (used > 0 && used + visible > width) breakRow()
      for (const ch of chars) {
        const c = charWidth(ch)
        if (used + c > width) {
          if (ch === ' ') continue
          breakRow()
        }
        // A wrapped row starts at its first word (a line's own indentation is kept).
        if (used === 0 && continued && ch === ' ') continue
        row += ch
        used += c
      }
    }
    rows.push(row.trimEnd())
  }
  return rows
}

/**
 * A reply on its way to the screen, row by row. Text goes in as it is generated; out come the rows
 * that are finished (for <Static>: written once, then scrollback) and the one row still being
 * written (the live area, redrawn each frame). Rows are wrapped here (wrapText), so the live area
 * is one row however long a paragraph grows, and a frame costs one row, never the history. Leading
 * whitespace of the reply is not shown; the conversation keeps the text unchanged.
 */
export class ReplyWrapper {
  /** The paragraph being written (display text, no newline). */
  private pending = ''
  /** Rows of `pending` already handed out as finished. */
  private emitted = 0
  private started = false
  /** Everything shown so far (display text), for rewrap. */
  private shown = ''

  constructor(private columns: number) {}

  push(text: string): {rows: string[]; live: string} {
    let t = displayText(text)
    if (!this.started) {
      t = t.replace(/^\s+/, '')
      if (t === '') return {rows: [], live: ''}
      this.started = true
    }
    this.shown += t
    const parts = (this.pending + t).split('\n')
    const rows: string[] = []
    for (const paragraph of parts.slice(0, -1)) {
      rows.push(...wrapText(paragraph, this.columns).slice(this.emitted))
      this.emitted = 0
    }
    this.pending = parts.at(-1)!
    const wrapped = wrapText(this.pending, this.columns)
    rows.push(...wrapped.slice(this.emitted, -1))
    this.emitted = Math.max(this.emitted, wrapped.length - 1)
    return {rows, live: wrapped.at(-1)!}
  }

  /** The reply as shown so far, unwrapped (display text, leading whitespace dropped). */
  get text(): string {
    return this.shown
  }

  /**
   * Wrap the reply so far again at a new width (the terminal was resized): every finished row, to
   * replace the ones written at the old width, and the row being written. Later pushes go on at the
   * new width.
   */
  rewrap(columns: number): {rows: string[]; live: string} {
    this.columns = columns
    const parts = this.shown.split('\n')
    const rows = parts.slice(0, -1).flatMap((paragraph) => wrapText(paragraph, columns))
    this.pending = parts.at(-1)!
    const wrapped = wrapText(this.pending, columns)
    rows.push(...wrapped.slice(0, -1))
    this.emitted = wrapped.length - 1
    return {rows, live: wrapped.at(-1)!}
  }

  /** The rows still held, at the end of the reply. */
  end(): string[] {
    const rows = this.pending === '' ? [] : wrapText(this.pending, this.columns).slice(this.emitted)
    this.pending = ''
    this.emitted = 0
    return rows
  }
}

/**
 * Text as the screen shows it: a model can write any character, and a control character written
 * raw would move the cursor or change colours under Ink's feet. Tabs become two spaces; other C0/C1
 * controls (newline excepted) become U+FFFD. The conversation itself keeps the text unchanged.
 */
export function displayText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\t/g, '  ').replace(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/g, '\uFFFD')
}
