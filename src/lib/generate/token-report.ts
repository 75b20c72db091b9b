import type {Tokenizer} from '../tokenizer/index.js'

/** One generated token as the APIs report it (OpenAI's logprobs, completions' text_offset). */
export interface TokenReport {
  readonly token: number
  /** The token's own text (its piece; bytes of an incomplete UTF-8 sequence shown as U+FFFD). */
  readonly text: string
  readonly bytes: number[]
  /** log p(token) under the model (NaN unless sampling.logprobs). */
  readonly logprob: number
  readonly top: ReadonlyArray<{readonly token: number; readonly text: string; readonly bytes: number[]; readonly logprob: number}>
  /** Where the token's text starts in the generation's text (UTF-16 code units): completions' text_offset. */
  readonly offset: number
  /** A constraint allowed only this token, so it was taken without a draw (absent otherwise). */
  readonly forced?: true
}

/** A report before its offset is known. */
export type TokenFacts = Omit<TokenReport, 'offset'>

export function tokenFacts(
  tokenizer: Tokenizer,
  token: number,
  logprob: number,
  top: ReadonlyArray<{token: number; logprob: number}> | undefined,
  forced = false,
): TokenFacts {
  const piece = (id: number) => {
    const bytes = tokenizer.pieceBytes(id)
    return {text: Buffer.from(bytes).toString('utf8'), bytes: [...bytes]}
  }
  return {
    token,
    ...piece(token),
    logprob,
    top: (top ?? []).map((t) => ({token: t.token, ...piece(t.token), logprob: t.logprob})),
    ...(forced ? {forced: true as const} : {}),
  }
}
