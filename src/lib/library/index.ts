/** Public face of the library API (src/index.ts re-exports it as the package's entry module). */
export {
  type ChatOptions,
  type ChatResult,
  type EmbedOptions,
  type GenerateOptions,
  loadModel,
  type LoadModelOptions,
  type ModelInfo,
  type PromptOptions,
  RunnerModel,
  type ScoreOptions,
} from './model.js'
export {serve, type Server, type ServeOptions} from './server.js'
export {type GenerateResult, TextStream} from './text-stream.js'
export type {ModelSignatureSummary, SignaturePolicy} from '../signing/index.js'
