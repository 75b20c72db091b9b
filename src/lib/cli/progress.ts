import {formatBytes} from '../util/index.js'

/**
 * A progress line on stderr while a big model loads: only on a terminal, and never when `enabled`
 * is false (--json, where stderr may be read by a script too).
 */
export function loadProgress(enabled = true): ((done: number, total: number) => void) | undefined {
  if (!enabled || !process.stderr.isTTY) return undefined
  return (done, total) => {
    process.stderr.write(`\rloading ${((100 * done) / Math.max(total, 1)).toFixed(0)}% (${formatBytes(done)} of ${formatBytes(total)})`)
    if (done >= total) process.stderr.write('\r\u001B[K')
  }
}

/** 0.4 → "<1 s", 4.2 → "4 s", 125 → "2m 05s", 7300 → "2h 01m": an ETA is a rough figure, so whole units. */
export function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?'
  if (seconds < 1) return '<1 s'
  const s = Math.round(seconds)
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/** Where a progress line goes: stderr, or a test's recorder. */
export interface ProgressStream {
  write(text: string): unknown
  readonly isTTY?: boolean
}

export interface ByteProgressOptions {
  readonly stream?: ProgressStream
  /** Redraw one line (a terminal) or print a plain line each `stepPercent` (a pipe, a log file). */
  readonly tty?: boolean
  readonly stepPercent?: number
  /** Milliseconds between redraws on a terminal (a 4 MiB chunk can take far less than a frame). */
  readonly redrawMs?: number
  readonly now?: () => number
  /**
   * The first update's bytes were already there (a resumed download's partial file): the rate counts
   * only what this run moves, so a resume does not claim a burst of speed.
   */
  readonly firstUpdateIsResumed?: boolean
}

/**
 * One progress line for work measured in bytes: percent, bytes done of total, rate and ETA. On a
 * terminal the line is redrawn in place (at most every redrawMs) and cleared at the end, so the
 * summary that follows stands alone; elsewhere a plain line is printed each time another
 * stepPercent is crossed (at most 100 / stepPercent lines, never one per tensor or chunk).
 * One line of our own rather than a listr2 task: listr2's simple renderer, used off a terminal,
 * prints every change of a task's output as a line, and its default renderer repaints the whole task
 * list for what is a single line.
 */
export class ByteProgress {
  private readonly stream: ProgressStream
  private readonly tty: boolean
  private readonly step: number
  private readonly redrawMs: number
  private readonly now: () => number
  private readonly started: number
  private lastStep = 0
  private lastDraw = -Infinity
  private lastDone = -1
  private drawn = false
  /** Bytes that were there before this run (firstUpdateIsResumed): not part of the rate. */
  private startBytes: number | undefined
  private readonly firstUpdateIsResumed: boolean

  constructor(
    private readonly label: string,
    o: ByteProgressOptions = {},
  ) {
    this.stream = o.stream ?? process.stderr
    this.tty = o.tty ?? Boolean(this.stream.isTTY)
    this.step = o.stepPercent ?? 10
    this.redrawMs = o.redrawMs ?? 100
    this.now = o.now ?? (() => performance.now())
    this.started = this.now()
    this.firstUpdateIsResumed = o.firstUpdateIsResumed ?? false
  }

  /** `done` of `total` bytes are finished. */
  update(done: number, total: number): void {
    this.startBytes ??= this.firstUpdateIsResumed ? done : 0
    const percent = total > 0 ? Math.min(100, (100 * done) / total) : 100
    if (this.tty) {
      const t = this.now()
      // The last chunks (the tail padding) repeat 100%: drawn once.
      if ((t - this.lastDraw < this.redrawMs && done < total) || done === this.lastDone) return
      this.lastDraw = t
      this.lastDone = done
      this.drawn = true
      this.stream.write(`\r${this.line(done, total, percent)}\u001B[K`)
      return
    }
    const step = Math.floor(percent / this.step)
    if (step <= this.lastStep) return
    this.lastStep = step
    this.stream.write(`${this.line(done, total, percent)}\n`)
  }

  /** The work ended (done, failed or interrupted): clear a redrawn line. */
  end(): void {
    if (this.tty && this.drawn) this.stream.write('\r\u001B[K')
    this.drawn = false
  }

  private line(done: number, total: number, percent: number): string {
    const seconds = (this.now() - this.started) / 1000
    const rate = seconds > 0 ? (done - (this.startBytes ?? 0)) / seconds : 0
    const eta = done >= total ? 'done' : rate > 0 ? `ETA ${formatEta((total - done) / rate)}` : 'ETA ?'
    return `${this.label} ${percent.toFixed(0).padStart(3)}% ${formatBytes(done)} of ${formatBytes(total)}, ${formatBytes(Math.round(rate))}/s, ${eta}`
  }
}
