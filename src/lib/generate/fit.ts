/**
 * Does a prompt fit the context? One rule for every caller; each caller words its own refusal (run:
 * PROMPT_TOO_LONG, chat: CHAT_CONTEXT_FULL, the server: OpenAI's context_length_exceeded naming
 * the parameter, replay: an invalid receipt).
 */
export interface PromptFit {
  /** The prompt and the room reserved for the reply fit in nCtx positions. */
  readonly fits: boolean
  /** The prompt alone leaves no position for a reply (so it is the prompt, not the reserve, that is too long). */
  readonly promptAlone: boolean
  /** Positions the request needs: prompt plus reserve. */
  readonly needed: number
  readonly promptTokens: number
  readonly reserve: number
  readonly nCtx: number
}

/** A prompt of `promptTokens` with `reserve` positions kept free for the reply, in a context of `nCtx`. */
export function fitPrompt(promptTokens: number, nCtx: number, reserve = 0): PromptFit {
  const needed = promptTokens + reserve
  return {fits: needed <= nCtx, promptAlone: promptTokens >= nCtx, needed, promptTokens, reserve, nCtx}
}
