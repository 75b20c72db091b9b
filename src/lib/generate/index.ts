/** Public face of the generation loop: one function, its request and outcome, and the helpers with one owner. */
export {keptTokens} from './context-shift.js'
export {fitPrompt, type PromptFit} from './fit.js'
export {
  type FinishReason,
  generate,
  type Generation,
  type GenerationEvents,
  type GenerationOutcome,
  type GenerationRequest,
  type GenerationTimings,
  type DraftReport,
  type GenerationUsage,
} from './generate.js'
export type {GenerationEvent} from './release.js'
export {StopMatcher} from './stop-strings.js'
export {type TokenReport, tokenFacts} from './token-report.js'
