/**
 * What the main thread and the prompt workers (./prompt-worker.ts) say to each other, and the one
 * tokenization both sides run.
 */
import {type ChatMessage, type ChatTemplateSource, encodeChatPrompt, type RenderBudget, type RenderOptions} from '../chat/index.js'
import type {ExitCodeValue} from '../errors.js'
import type {GgufKv} from '../gguf/index.js'
import type {Tokenizer} from '../tokenizer/index.js'

/**
 * How text becomes tokens: `chat`, a rendered template (its special tokens parsed, BOS once);
 * otherwise the tokenizer's own options (`runner run -p` text: BOS as the vocabulary asks, special
 * tokens as text).
 */
export type EncodeMode = 'chat' | {readonly addSpecial: boolean; readonly parseSpecial: boolean}

export function encodeText(tokenizer: Tokenizer, text: string, mode: EncodeMode): number[] {
  return mode === 'chat' ? encodeChatPrompt(tokenizer, text) : tokenizer.encode(text, mode)
}

export interface PromptWorkerData {
  readonly metadata: ReadonlyMap<string, GgufKv>
  readonly offsets: ReadonlyMap<string, number>
  readonly file: string
  readonly template: {
    readonly source: string
    readonly origin: ChatTemplateSource
    readonly tokens: {bos: string; eos: string}
    readonly budget: RenderBudget
  }
}

export type PromptJob =
  | {readonly id: number; readonly op: 'render'; readonly messages: readonly ChatMessage[]; readonly options: RenderOptions}
  | {readonly id: number; readonly op: 'encode'; readonly text: string; readonly mode: EncodeMode}

/** An error thrown in a worker, as data (errors lose their class crossing threads). */
export type WorkerFailure =
  | {readonly kind: 'history'; readonly code: string; readonly message: string; readonly param: string}
  | {readonly kind: 'tokenizer'; readonly code: string; readonly message: string; readonly field: string; readonly exitCode: ExitCodeValue}
  | {readonly kind: 'runner'; readonly code: string; readonly message: string; readonly exitCode: ExitCodeValue}
  | {readonly kind: 'other'; readonly message: string}

export type PromptReply = {readonly id: number} & ({readonly text: string} | {readonly ids: Int32Array} | {readonly failure: WorkerFailure})
