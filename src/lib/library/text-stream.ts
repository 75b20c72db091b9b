/**
 * One generation as a library caller sees it: the text as an async iterator of chunks, and the
 * outcome. It is a view of generate()'s Generation (src/lib/generate): no token loop of its own.
 */
import type {DraftReport, FinishReason, Generation, GenerationTimings, GenerationUsage} from '../generate/index.js'

/** What a finished generation produced. */
export interface GenerateResult {
  /** The generated text (up to a stop string, if one matched). */
  readonly text: string
  /** The generated token ids. */
  readonly tokens: readonly number[]
  /** `eos`, `stop-string`, `length` (maxTokens), `context` (the context is full), `aborted` (the signal) or `stopped`. */
  readonly finishReason: FinishReason
  /** The stop string that ended it, when finishReason is `stop-string`. */
  readonly stopString?: string
  /** Prompt, cached, evaluated and completion tokens. */
  readonly usage: GenerationUsage
  /** Milliseconds spent on the prompt and on the generated tokens. */
  readonly timings: GenerationTimings
  /** With speculation: the source, tokens drafted and accepted, verify steps (the text is the same without it). */
  readonly draft?: DraftReport
  /** With contextShift: the shifts made and the tokens they dropped in all (absent: none). */
  readonly shifts?: {readonly count: number; readonly discarded: number}
}

/**
 * A generation in progress: iterate it for the text as it becomes final (`for await (const chunk of
 * stream)`); `result` resolves when the engine has finished. Leaving the loop early stops the
 * generation (finish reason `stopped`); `result` still resolves with what was generated.
 */
export class TextStream implements AsyncIterable<string> {
  /** The outcome; resolves whether or not the text was iterated. */
  readonly result: Promise<GenerateResult>

  constructor(
    private readonly generation: Generation,
    onText?: (text: string) => void,
  ) {
    this.result = generation.result.then((o) => ({
      text: o.text,
      tokens: o.tokenIds,
      finishReason: o.finishReason,
      ...(o.stopString === undefined ? {} : {stopString: o.stopString}),
      usage: o.usage,
      timings: o.timings,
      ...(o.draft ? {draft: o.draft} : {}),
      ...(o.shifts.count > 0 ? {shifts: o.shifts} : {}),
    }))
    // The caller may only await `result`; an engine error must still reach it, not go unhandled here.
    this.result.catch(() => {})
    this.onText = onText
  }

  private readonly onText: ((text: string) => void) | undefined
  private iterated = false

  /** Ask the engine to stop after the current token (finish reason `stopped`). */
  stop(): void {
    this.generation.events.stop()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    // The events are one reader's queue: a second iteration would see nothing, so it is refused.
    if (this.iterated) throw new TypeError('a TextStream can be iterated once')
    this.iterated = true
    for await (const e of this.generation.events) {
      if (!e.text) continue
      this.onText?.(e.text)
      yield e.text
    }
  }

  /** Read the text to the end (calling onText with each chunk) and return the outcome. */
  async finish(): Promise<GenerateResult> {
    if (!this.iterated) for await (const chunk of this) void chunk
    return this.result
  }
}
