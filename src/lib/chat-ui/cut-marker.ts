/**
 * The marker under a reply that `-n` cut off. Without it a reply stopped mid-sentence by the token
 * limit looks the same as one the model ended, so the UI and the line mode both say which it was.
 */
import type {TurnResult} from './conversation.js'

/** `[cut: -n 64 reached]` for a reply that ended at its token limit; undefined for any other end. */
export function cutMarker(result: Pick<TurnResult, 'finishReason' | 'maxTokens'>): string | undefined {
  if (result.finishReason !== 'length') return undefined
  return result.maxTokens >= 0 ? `[cut: -n ${result.maxTokens} reached]` : '[cut: token limit reached]'
}
