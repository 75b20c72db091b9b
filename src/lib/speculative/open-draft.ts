/**
 * Opening the draft a run asked for: prompt lookup at once; a draft model loaded once and given a
 * context per generation slot, the size of the target's (it must hold the same sequence), checked
 * against the target's vocabulary; the model's own MTP head, a context of the target's model per
 * slot. A draft that cannot be used (its file not a model, its vocabulary another, a model without
 * an MTP head) fails the run when `required`, else is refused by a warning naming why and the run
 * goes on without it: never dropped without a word. Bad settings (a draft max of 0) are usage
 * errors either way.
 */
import {Draft, Model} from '../engine/index.js'
import {RunnerError} from '../errors.js'
import {printable} from '../util/index.js'
import type {SpeculationOptions, SpeculationStatus} from './options.js'

export interface OpenedDrafts {
  /** One draft per slot asked for (a generation holds its draft), or none when it was refused. */
  readonly drafts: readonly Draft[]
  readonly status: SpeculationStatus
  /** Frees the drafts, their contexts and the draft model. */
  dispose(): void
}

export interface OpenDraftContext {
  /** The target's context size: the draft's context holds the same sequence. */
  readonly nCtx: number
  readonly kvType: 'f16' | 'f32'
  readonly threads?: number
  /** A refused draft's warning (when not required). */
  readonly onWarning?: (message: string) => void
  readonly signal?: AbortSignal
  /** Drafts wanted (serve: one per slot; default 1). */
  readonly count?: number
}

/** Errors that are the user's settings, not the draft's usability: never turned into a warning. */
const SETTINGS_ERRORS = new Set(['DRAFT_BAD_OPTION', 'CONTEXT_BAD_OPTION', 'ENGINE_ABORTED', 'INTERRUPTED'])

export async function openDrafts(target: Model, options: SpeculationOptions, at: OpenDraftContext): Promise<OpenedDrafts> {
  const count = at.count ?? 1
  const drafts: Draft[] = []
  const disposeAll = (model?: Model) => () => {
    for (const d of drafts) d.dispose()
    model?.dispose()
  }
  if (options.source === 'lookup') {
    for (let i = 0; i < count; i++) drafts.push(Draft.lookup(options))
    return {drafts, status: {active: true, source: 'lookup', settings: {...drafts[0]!.settings}}, dispose: disposeAll()}
  }
  let model: Model | undefined
  try {
    const threads = options.threads ?? at.threads
    if (options.source === 'mtp') {
      const head = {model: target, options: {nCtx: at.nCtx, kvType: at.kvType, ...(threads !== undefined ? {threads} : {})}}
      for (let i = 0; i < count; i++) drafts.push(await Draft.mtp(head, options))
      return {drafts, status: {active: true, source: 'mtp', settings: {...drafts[0]!.settings}}, dispose: disposeAll()}
    }
    model = await Model.load(options.path, {signal: at.signal})
    for (let i = 0; i < count; i++) {
      const ctx = await model.createContext({nCtx: at.nCtx, kvType: at.kvType, ...(threads !== undefined ? {threads} : {})})
      try {
        drafts.push(Draft.fromContext(ctx, target.tokenizer, options.path, options))
      } catch (error) {
        ctx.dispose()
        throw error
      }
    }
    return {drafts, status: {active: true, source: 'model', settings: {...drafts[0]!.settings}}, dispose: disposeAll(model)}
  } catch (error) {
    disposeAll(model)()
    drafts.length = 0
    if (options.required || !(error instanceof RunnerError) || SETTINGS_ERRORS.has(error.code)) throw error
    const what = options.source === 'mtp' ? "the model's MTP head" : `the draft model ${printable(options.path)}`
    at.onWarning?.(`${what} is not used: ${error.message}; running without speculation (--draft-required makes this an error)`)
    return {drafts, status: {active: false, source: options.source, refused: error.message}, dispose: () => {}}
  }
}
