/**
 * Non-interactive chat reads one message per line and writes one answer per line, so a newline
 * inside a message or an answer is written as the two characters `\n` (and a backslash as `\\`,
 * a carriage return as `\r`, a tab stays a tab). `unescapeLine(escapeLine(s)) === s` for every s.
 */
export function escapeLine(text: string): string {
  return text.replace(/[\\\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : '\\r'))
}

/** The inverse of escapeLine; a backslash before any other character (or at the end) stays as it is. */
export function unescapeLine(line: string): string {
  return line.replace(/\\([\\nr])/g, (_, c: string) => (c === '\\' ? '\\' : c === 'n' ? '\n' : '\r'))
}
