import {formatBytes} from '../util/index.js'

/** How often a terminal line is redrawn, and how many plain lines a log gets (one per step of the percent). */
const REDRAW_MS = 100
const LOG_STEP_PERCENT = 10

/** `3s`, `4m05s`, `1h02m`: short enough for a progress line. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?'
  const s = Math.round(seconds)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/**
 * Progress of a long byte-counted job on stderr: on a terminal one line redrawn (percent, bytes, rate,
 * ETA), otherwise a plain line at every 10 % (a log gets eleven lines, not one per chunk). The rate
 * counts only the bytes moved by this run (`start` resumed bytes are not a speed). Nothing is drawn
 * when disabled (--json).
 */
export class ByteProgress {
  private readonly t0 = Date.now()
  private lastDraw = 0
  private lastStep = -1
  private startBytes: number | undefined

  constructor(
    private readonly label: string,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly enabled = true,
  ) {}

  update(done: number, total: number): void {
    if (!this.enabled) return
    this.startBytes ??= done
    const now = Date.now()
    const pct = total > 0 ? Math.min(100, (100 * done) / total) : 100
    const seconds = (now - this.t0) / 1000
    const rate = seconds > 0 ? (done - this.startBytes) / seconds : 0
    const eta = rate > 0 ? formatDuration((total - done) / rate) : '?'
    const line = `${this.label} ${pct.toFixed(0).padStart(3)}% ${formatBytes(done)}/${formatBytes(total)} ${formatBytes(Math.round(rate))}/s ETA ${eta}`
    if (this.stream.isTTY) {
      if (now - this.lastDraw < REDRAW_MS && done < total) return
      this.lastDraw = now
      this.stream.write(`\r${line}\u001B[K`)
      return
    }
    const step = Math.floor(pct / LOG_STEP_PERCENT)
    if (step === this.lastStep) return
    this.lastStep = step
    this.stream.write(`${line}\n`)
  }

  /** End the line (a terminal's redrawn line gets its newline; a log has its lines already). */
  done(summary?: string): void {
    if (!this.enabled) return
    if (this.stream.isTTY) this.stream.write(`\r\u001B[K`)
    if (summary) this.stream.write(`${summary}\n`)
  }
}
