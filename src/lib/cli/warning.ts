/** A warning on stderr, one line, as the commands print them (`runner: warning: …`); never on stdout, which --json owns. */
export function warnLine(message: string): void {
  process.stderr.write(`runner: warning: ${message}\n`)
}
