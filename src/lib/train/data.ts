/**
 * Training data for `runner train-lora` (docs/lora.md): plain text, tokenized whole and cut into
 * packed windows of --ctx tokens (BOS first, every next token scored), or chat JSONL, one
 * {"messages": [...]} per line rendered with the model's chat template, the loss on the assistant
 * turns only. Malformed input is refused naming the file, the line and the field.
 */
import {readFile} from 'node:fs/promises'

import {type ChatMessage, ChatTemplate, validateHistory} from '../chat/index.js'
import type {Model} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {encodePrompt} from '../tokenizer/index.js'
import {preview, printable} from '../util/index.js'

export type DataFormat = 'text' | 'chat'

export interface TrainingSample {
  readonly tokens: Int32Array
  /** scored[i] set: tokens[i] is a target (its loss counts). scored[0] is never set. */
  readonly scored: Uint8Array
}

export interface TrainingData {
  readonly file: string
  readonly format: DataFormat
  readonly samples: readonly TrainingSample[]
  readonly tokens: number
  readonly scoredTokens: number
  /** Chat conversations longer than --ctx, cut to it. */
  readonly truncated: number
}

function bad(file: string, detail: string): never {
  throw new RunnerError('TRAIN_BAD_DATA', `${printable(file)}: ${detail}`, ExitCode.usage)
}

/** text for .txt and anything else, chat for .jsonl, unless --format says. */
export function dataFormatOf(file: string, format?: string): DataFormat {
  if (format === 'text' || format === 'chat') return format
  if (format !== undefined) bad(file, `--format ${preview(format)} must be text or chat`)
  return /\.jsonl$/i.test(file) ? 'chat' : 'text'
}

export async function readTrainingData(file: string, model: Model, options: {format?: string; ctx: number}): Promise<TrainingData> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new RunnerError('TRAIN_BAD_DATA', `cannot read ${printable(file)}: ${(error as Error).message}`, ExitCode.usage)
  }
  const format = dataFormatOf(file, options.format)
  const {samples, truncated} = format === 'text' ? textWindows(file, text, model, options.ctx) : chatSamples(file, text, model, options.ctx)
  if (samples.length === 0) bad(file, `no sample of at least 2 tokens (${format} data)`)
  const count = (f: (s: TrainingSample) => number) => samples.reduce((n, s) => n + f(s), 0)
  return {
    file,
    format,
    samples,
    tokens: count((s) => s.tokens.length),
    scoredTokens: count((s) => s.scored.reduce((n, v) => n + v, 0)),
    truncated,
  }
}

/** [BOS] + the text's tokens, in windows of ctx tokens; each window's first token is context only. */
function textWindows(file: string, text: string, model: Model, ctx: number) {
  if (text.trim() === '') bad(file, 'the file is empty')
  const ids = model.tokenizer.encode(text, {addSpecial: true, parseSpecial: false})
  const samples: TrainingSample[] = []
  for (let start = 0; start + 1 < ids.length; start += ctx) {
    const tokens = Int32Array.from(ids.slice(start, start + ctx))
    if (tokens.length < 2) break
    const scored = new Uint8Array(tokens.length).fill(1)
    scored[0] = 0
    samples.push({tokens, scored})
  }
  return {samples, truncated: 0}
}

/**
 * Each conversation rendered turn by turn: the text before assistant turn i (with the generation
 * prompt) and the text through it are tokenized whole (tokenizing pieces apart would add a
 * tokenizer's leading space to each), and the assistant's tokens are those the second adds to the
 * first. A template or tokenizer for which one is not a prefix of the other is refused by line.
 */
function chatSamples(file: string, text: string, model: Model, ctx: number) {
  const template = ChatTemplate.forModel(model.gguf, model.tokenizer)
  const encode = (t: string) => encodePrompt(model.tokenizer, t, {addBos: true, parseSpecial: true})
  const samples: TrainingSample[] = []
  let truncated = 0
  const lines = text.split(/\r?\n/)
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue
    const where = `line ${index + 1}`
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch (error) {
      bad(file, `${where} is not JSON: ${(error as Error).message}`)
    }
    if (typeof json !== 'object' || json === null || !('messages' in json))
      bad(file, `${where}: expected {"messages": [...]}, as OpenAI's and transformers' chat datasets are`)
    let messages: ChatMessage[]
    try {
      messages = validateHistory((json as {messages: unknown}).messages, 'messages', {endWith: 'any'})
    } catch (error) {
      bad(file, `${where}: ${(error as Error).message}`)
    }
    if (!messages.some((m) => m.role === 'assistant')) bad(file, `${where}: no assistant turn to learn from`)
    let ids: number[] = []
    let mask: number[] = []
    const extend = (next: number[], score: boolean, what: string) => {
      if (next.length < ids.length || ids.some((id, k) => next[k] !== id))
        bad(
          file,
          `${where}: ${what} does not tokenize as an extension of the turns before it (the chat template or tokenizer merges across turns)`,
        )
      mask = [...mask, ...next.slice(ids.length).map(() => (score ? 1 : 0))]
      ids = next
    }
    for (const [i, m] of messages.entries()) {
      if (m.role !== 'assistant') continue
      extend(encode(template.render(messages.slice(0, i), {addGenerationPrompt: true})), false, `the prompt before message ${i + 1}`)
      extend(encode(template.render(messages.slice(0, i + 1), {addGenerationPrompt: false})), true, `message ${i + 1}`)
    }
    if (ids.length > ctx) truncated++
    const tokens = Int32Array.from(ids.slice(0, ctx))
    const scored = Uint8Array.from(mask.slice(0, ctx))
    scored[0] = 0
    if (tokens.length >= 2 && scored.some((v) => v === 1)) samples.push({tokens, scored})
  }
  return {samples, truncated}
}
