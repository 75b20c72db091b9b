import {ExitCode, RunnerError} from '../../errors.js'

/**
 * A GBNF grammar refused: a syntax error, an undefined or missing rule, left recursion, or a
 * feature we do not support (token matches). `line` and `column` are 1-based, the column counted in
 * code points, and point at the place the parser expected something else (for an undefined rule: its
 * first reference; for left recursion: the rule's definition), so an editor can jump there.
 */
export class GrammarSyntaxError extends RunnerError {
  readonly line: number
  readonly column: number
  /** The message without the position, e.g. `expecting ::=`. */
  readonly detail: string

  constructor(detail: string, line: number, column: number) {
    super('GRAMMAR_SYNTAX', `GBNF grammar: ${detail} at line ${line}, column ${column}`, ExitCode.usage)
    this.name = 'GrammarSyntaxError'
    this.detail = detail
    this.line = line
    this.column = column
  }
}

/** The 1-based line and code-point column of UTF-16 offset `index` in `text`. */
export function positionOf(text: string, index: number): {line: number; column: number} {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < index && i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x0a || (c === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line++
      lineStart = i + 1
    }
  }
  return {line, column: [...text.slice(lineStart, index)].length + 1}
}
