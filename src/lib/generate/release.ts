/**
 * What of a generation is final. Text that may still become a stop string is held back (StopMatcher);
 * a token's report is released with the text it belongs to, so a client never sees a token whose
 * text it has not been sent, and never one inside a stop string. Offsets are each token's own
 * position in the generated text, so they are right when text was held back and when one character
 * spans several byte tokens (whose own texts are U+FFFD).
 */
import type {GeneratedToken} from '../engine/index.js'
import type {Tokenizer} from '../tokenizer/index.js'
import {StopMatcher} from './stop-strings.js'
import {type TokenFacts, tokenFacts, type TokenReport} from './token-report.js'

/** One step of a generation: what became final. */
export interface GenerationEvent {
  /** The token sampled at this step, or -1 for a step that carries text only (the decoder's tail, the held text at the end). */
  readonly token: number
  /** Text that became final at this step (empty while it may still be the start of a stop string). */
  readonly text: string
  /** Reports of the tokens whose text became final at this step. */
  readonly tokens: readonly TokenReport[]
}

type Pending = TokenFacts & {readonly start: number; readonly end: number}

export class Release {
  private readonly matcher: StopMatcher
  private readonly reports: Pending[] = []
  /** Generated token ids, in order. */
  readonly ids: number[] = []
  /** All text the tokens made, stop strings included. */
  private generated = ''
  /** Released text. */
  text = ''
  private released = 0
  /** Tokens generated when a stop string matched (the one completing it included); -1 until one does. */
  countAtStop = -1

  constructor(
    private readonly tokenizer: Tokenizer,
    stops: readonly string[],
  ) {
    this.matcher = new StopMatcher(stops)
  }

  get stopString(): string | undefined {
    return this.matcher.which
  }

  get stopped(): boolean {
    return this.matcher.matched
  }

  /** The reports released so far. */
  get tokens(): TokenReport[] {
    return this.reports.slice(0, this.released).map(withOffset)
  }

  /** A token (or the decoder's tail, token -1) from the engine. */
  push(t: GeneratedToken): GenerationEvent {
    if (t.token >= 0) {
      const start = this.generated.length
      this.generated += t.text
      this.ids.push(t.token)
      this.reports.push({...tokenFacts(this.tokenizer, t.token, t.logprob, t.top, t.forced === true), start, end: this.generated.length})
    } else {
      this.generated += t.text
    }
    const piece = this.matcher.push(t.text)
    if (this.matcher.matched) this.countAtStop = this.ids.length
    return this.emit(t.token, piece, false)
  }

  /** The end without a stop string: what was held back is plain text. */
  flush(): GenerationEvent {
    return this.emit(-1, this.matcher.flush(), true)
  }

  private emit(token: number, piece: string, all: boolean): GenerationEvent {
    this.text += piece
    const out: TokenReport[] = []
    const matched = this.matcher.matched
    while (this.released < this.reports.length) {
      const r = this.reports[this.released]!
      if (!(all || r.end <= this.text.length || (matched && r.start < this.text.length))) break
      if (matched && r.start >= this.text.length && r.end > r.start) break
      out.push(withOffset(r))
      this.released++
    }
    return {token, text: piece, tokens: out}
  }
}

function withOffset(r: Pending): TokenReport {
  return {
    token: r.token,
    text: r.text,
    bytes: r.bytes,
    logprob: r.logprob,
    top: r.top,
    offset: r.start,
    ...(r.forced ? {forced: r.forced} : {}),
  }
}
