/**
 * The package's entry module (`import {loadModel, serve} from 'runner-llm'`; docs/library.md).
 * A small typed surface over src/lib: load a model, generate and stream, chat, score, embed, serve.
 * Everything here is a wrapper of what the commands call; none of it has logic of its own.
 */
export * from './lib/library/index.js'
export {ExitCode, type ExitCodeValue, RunnerError} from './lib/errors.js'
export type {RopeOverrides, RopeScalingType} from './lib/arch/index.js'
export type {ChatMessage, ChatRole, ChatToolCall} from './lib/chat/index.js'
export type {EmbedInput, EmbedResult, Pooling} from './lib/embed/index.js'
export type {DraftReport, FinishReason, GenerationTimings, GenerationUsage} from './lib/generate/index.js'
export type {SamplingInput} from './lib/sampling/index.js'
export type {ScoreResult, WindowResult} from './lib/score/index.js'
export type {SpeculationOptions} from './lib/speculative/index.js'
