/**
 * `runner embed` as a library call: load the model, make one context, embed the inputs, and render
 * the vectors (one line of numbers per input, or JSON). The command parses flags and prints.
 */
import {readFile} from 'node:fs/promises'

import type {RopeOverrides} from '../arch/index.js'
import {contextSize, Model, Session} from '../engine/index.js'
import type {SignaturePolicy} from '../signing/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {LoraSpec} from '../lora/index.js'
import {embed, type EmbedResult} from './embed.js'
import type {Pooling} from './pooling.js'

export interface EmbedFileOptions {
  readonly modelPath: string
  readonly inputs: readonly string[]
  readonly pooling?: Pooling
  readonly normalize?: boolean
  /** Default: the model's training context, at most 4096 (as `runner serve` sizes a slot). */
  readonly nCtx?: number
  /** A context size given beyond the model's training context runs, with this warning (engine contextSize). */
  readonly onWarning?: (message: string) => void
  readonly nBatch?: number
  readonly threads?: number
  readonly kvType?: 'f16' | 'f32'
  /** LoRA adapters applied to the model, in order. */
  readonly lora?: readonly LoraSpec[]
  /** llama.cpp's rope overrides (docs/long-context.md). */
  readonly rope?: RopeOverrides
  readonly onProgress?: (done: number, total: number) => void
  readonly signal?: AbortSignal
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
}

export async function embedWithModel(options: EmbedFileOptions): Promise<EmbedResult> {
  const model = await Model.load(options.modelPath, {
    onProgress: options.onProgress,
    signal: options.signal,
    lora: options.lora,
    rope: options.rope,
    ...(options.signature ? {signature: options.signature} : {}),
  })
  try {
    const nCtx = contextSize(options.nCtx, model.config, {name: '-c/--ctx-size', onWarning: options.onWarning})
    const ctx = await model.createContext({nCtx, nBatch: options.nBatch, threads: options.threads, kvType: options.kvType})
    try {
      return await embed(new Session(ctx), options.inputs, {
        ...(options.pooling ? {pooling: options.pooling} : {}),
        ...(options.normalize === undefined ? {} : {normalize: options.normalize}),
        ...(options.signal ? {signal: options.signal} : {}),
      })
    } finally {
      ctx.dispose()
    }
  } finally {
    model.dispose()
  }
}

/** The inputs of --file: one per line (a final newline ends the last line; blank lines are refused by embed). */
export async function readInputLines(file: string): Promise<string[]> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new RunnerError('EMBED_INPUT_FILE', `cannot read the input file ${file}: ${(error as Error).message}`, ExitCode.usage)
  }
  const lines = text.split(/\r?\n/)
  if (lines.at(-1) === '') lines.pop()
  return lines
}

/**
 * Plain output: one line per vector, values separated by spaces, each the shortest decimal that
 * reads back as the same float32 (so the text round-trips bit for bit).
 */
export function formatVectors(result: EmbedResult, json: boolean): string {
  const rows = result.embeddings.map((v) => Array.from(v, shortestFloat32))
  return json ? JSON.stringify(rows) : rows.map((r) => r.join(' ')).join('\n')
}

/** The shortest decimal that Math.fround maps back to x (x a float32 value). */
export function shortestFloat32(x: number): number {
  for (let digits = 1; digits <= 9; digits++) {
    const y = Number(x.toPrecision(digits))
    if (Math.fround(y) === x) return y
  }
  return x
}
