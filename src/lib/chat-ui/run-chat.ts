/**
 * `runner chat` as a library call: load the model, pick the template, make the conversation, then
 * the Ink screen on a terminal or the line mode otherwise; everything is released at the end, after
 * any reply still being written has stopped. Resolves with the exit code.
 */
import {basename} from 'node:path'

import type {RopeOverrides} from '../arch/index.js'
import {chatTemplateOverride, ChatTemplate} from '../chat/index.js'
import {loadProgress, withInterrupt} from '../cli/index.js'
import {contextSize, Model, Session} from '../engine/index.js'
import type {SignaturePolicy} from '../signing/index.js'
import type {Constraint} from '../grammar/index.js'
import type {LoraSpec} from '../lora/index.js'
import type {SamplingOptions} from '../sampling/index.js'
import {openDrafts, type SpeculationOptions} from '../speculative/index.js'
import {ChatConversation} from './conversation.js'
import {runInteractive} from './interactive.js'
import {runLineMode} from './line-mode.js'

export interface ChatOptions {
  readonly modelPath: string
  readonly system?: string
  /** Most tokens per reply; -1: until the end of the reply or a full context. */
  readonly nPredict: number
  /** Default: the model's training context, at most 4096. */
  readonly nCtx?: number
  /** A context size given beyond the model's training context runs, with this warning (engine contextSize). */
  readonly onWarning?: (message: string) => void
  readonly nBatch: number
  readonly threads?: number
  readonly kvType: 'f16' | 'f32'
  /** Sliding-window layers keep every position (--swa-full) instead of a ring. */
  readonly swaFull?: boolean
  readonly contextShift: boolean
  /** "chatml", or a file holding a Jinja chat template (default: the model's own). */
  readonly chatTemplate?: string
  /** Line mode with one JSON document per answer. */
  readonly json: boolean
  readonly sampling: SamplingOptions
  /** Constrain every reply (compiled before the model loads). */
  readonly constraint?: Constraint
  /** LoRA adapters applied to the model, in order. */
  readonly lora?: readonly LoraSpec[]
  /** Speculative decoding for every reply (docs/speculative.md): the replies are the same, only faster or slower. */
  readonly speculation?: SpeculationOptions
  /** llama.cpp's rope overrides (docs/long-context.md). */
  readonly rope?: RopeOverrides
  /** Check the model's OMS signature before it is mapped (docs/model-signing.md). */
  readonly signature?: SignaturePolicy
}

export async function runChat(options: ChatOptions): Promise<number> {
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY) && !options.json
  const override = chatTemplateOverride(options.chatTemplate)
  const model = await Model.load(options.modelPath, {
    onProgress: loadProgress(interactive),
    lora: options.lora,
    rope: options.rope,
    ...(options.signature ? {signature: options.signature} : {}),
  })
  const template = ChatTemplate.forModel(model.gguf, model.tokenizer, override)
  const nCtx = contextSize(options.nCtx, model.config, {name: '-c/--ctx-size', onWarning: options.onWarning})
  const ctx = await model.createContext({
    nCtx,
    nBatch: options.nBatch,
    threads: options.threads,
    kvType: options.kvType,
    swaFull: options.swaFull ?? false,
  })
  // --context-shift also lets a reply shift a full context, where that is exact; where not, say why.
  const shiftRefusal = options.contextShift ? ctx.contextShiftRefusal : undefined
  if (shiftRefusal !== undefined)
    options.onWarning?.(`--context-shift drops old turns, but a reply still ends at a full context: ${shiftRefusal}`)
  const opened = options.speculation
    ? await openDrafts(model, options.speculation, {
        nCtx,
        kvType: options.kvType,
        threads: ctx.options.threads,
        onWarning: options.onWarning,
      }).catch((error: unknown) => {
        ctx.dispose()
        model.dispose()
        throw error
      })
    : undefined
  const modelName = basename(options.modelPath).replace(/(-\d{5}-of-\d{5})?\.gguf$/i, '')
  const conversation = new ChatConversation({
    tokenizer: model.tokenizer,
    template,
    session: new Session(ctx),
    nCtx,
    contextShift: options.contextShift,
    replyShift: options.contextShift && shiftRefusal === undefined,
    params: {sampling: options.sampling, maxTokens: options.nPredict},
    ...(options.constraint ? {constraint: options.constraint} : {}),
    ...(opened ? {draft: {draft: opened.drafts[0], status: opened.status}} : {}),
    ...(options.system === undefined ? {} : {system: options.system}),
    modelName,
  })
  try {
    return interactive ? await runInteractive(conversation, modelName, template.origin, nCtx) : await runLines(conversation, options.json)
  } finally {
    // A reply still being generated (exit or an error mid-turn) must end before its context goes.
    await conversation.stop()
    opened?.dispose()
    ctx.dispose()
    model.dispose()
  }
}

function runLines(conversation: ChatConversation, json: boolean): Promise<number> {
  return withInterrupt((interrupt) =>
    runLineMode({
      conversation,
      input: process.stdin,
      write: (s) => process.stdout.write(s),
      diagnostic: (s) => process.stderr.write(s),
      json,
      interrupt,
    }),
  )
}
