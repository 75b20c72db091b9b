/**
 * Stop strings over streamed text. Text that could still be the start of a stop string is held
 * back, so a client never sees a partial stop string that later turns out to match; text that
 * cannot match any more is released at once.
 */
export class StopMatcher {
  private held = ''
  private stopped = false
  /** The stop string that matched (the earliest in the text; the first listed among equals). */
  which: string | undefined

  constructor(private readonly stops: readonly string[]) {}

  /** True once a stop string matched; later pushes return nothing. */
  get matched(): boolean {
    return this.stopped
  }

  /** Add generated text; returns the text that can be released now. */
  push(text: string): string {
    if (this.stopped) return ''
    this.held += text
    if (this.stops.length === 0) {
      const out = this.held
      this.held = ''
      return out
    }
    let cut = -1
    for (const s of this.stops) {
      const i = this.held.indexOf(s)
      if (i >= 0 && (cut < 0 || i < cut)) {
        cut = i
        this.which = s
      }
    }
    if (cut >= 0) {
      this.stopped = true
      const out = this.held.slice(0, cut)
      this.held = ''
      return out
    }
    const keep = this.partialSuffix()
    const out = this.held.slice(0, this.held.length - keep)
    this.held = this.held.slice(this.held.length - keep)
    return out
  }

  /** At the end of generation without a match: whatever was held back is plain text. */
  flush(): string {
    const out = this.stopped ? '' : this.held
    this.held = ''
    return out
  }

  /** Length of the longest suffix of the held text that is a proper prefix of some stop string. */
  private partialSuffix(): number {
    let best = 0
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, this.held.length); n > best; n--) {
        if (this.held.endsWith(s.slice(0, n))) {
          best = n
          break
        }
      }
    }
    return best
  }
}
