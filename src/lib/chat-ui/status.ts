/** The status line under the input: model, template, context use, the last turn's speeds. */
import type {ChatTemplateSource} from '../chat/index.js'
import type {TurnResult} from './conversation.js'

export interface StatusInput {
  readonly modelName: string
  readonly templateOrigin: ChatTemplateSource
  readonly nCtx: number
  readonly contextUsed: number
  readonly last: TurnResult | undefined
  /** Tokens of the reply being generated, when one is. */
  readonly generating?: number
  /** Prompt tokens the reply being generated reused from the KV cache. */
  readonly generatingCached?: number
}

const ORIGIN: Record<ChatTemplateSource, string> = {
  model: "model's template",
  'fallback-chatml': 'ChatML fallback',
  override: 'template override',
}

/**
 * KV positions in use while a reply is written: the prompt and the reply's tokens but the newest,
 * which is decoded into the cache with the next step (so the figure does not drop when the reply
 * ends and the conversation's own count takes over).
 */
export function liveContextUsed(promptTokens: number, generated: number): number {
  return promptTokens + Math.max(0, generated - 1)
}

function rate(tokens: number, ms: number): string {
  if (tokens === 0) return '-'
  const r = (1000 * tokens) / Math.max(ms, 1e-3)
  return r >= 100 ? r.toFixed(0) : r.toFixed(1)
}

export function formatStatus(s: StatusInput): string {
  const parts = [s.modelName, ORIGIN[s.templateOrigin], `ctx ${s.contextUsed}/${s.nCtx}`]
  if (s.generating !== undefined) {
    // While a reply is written the line shows its progress (the last turn's speeds return after it).
    parts.push(`cached ${s.generatingCached ?? 0}`, `generating ${s.generating} tok · Esc stops`)
  } else if (s.last) {
    parts.push(`cached ${s.last.cachedTokens}`)
    parts.push(`prompt ${rate(s.last.evaluatedTokens, s.last.promptMs)} tok/s`)
    parts.push(`decode ${rate(s.last.tokens.length, s.last.decodeMs)} tok/s`)
  }
  return parts.join(' · ')
}
