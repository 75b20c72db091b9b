import {RunnerError} from '../errors.js'

/**
 * Events pushed by the generation loop and read by one consumer at its own pace. The loop never
 * waits for the reader (it is driven by the engine), so a caller that only awaits the result loses
 * nothing; leaving the iteration early calls `onLeave` (the generation stops).
 */
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = []
  private wake: (() => void) | undefined
  private ended = false
  private failure: {error: unknown} | undefined
  private iterated = false

  constructor(private readonly onLeave: () => void) {}

  push(item: T): void {
    this.items.push(item)
    this.wake?.()
  }

  /** No more items; the reader sees `error` (if any) once it has read the rest. */
  end(error?: {error: unknown}): void {
    this.ended = true
    this.failure = error
    this.wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterated) throw new RunnerError('STREAM_ITERATED', "a generation's events can be iterated once; keep what you need")
    this.iterated = true
    let finished = false
    try {
      for (;;) {
        const next = this.items.shift()
        if (next !== undefined) {
          yield next
          continue
        }
        if (this.ended) break
        await new Promise<void>((resolve) => {
          this.wake = resolve
        })
        this.wake = undefined
      }
      finished = true
      if (this.failure) throw this.failure.error
    } finally {
      if (!finished) this.onLeave()
    }
  }
}
