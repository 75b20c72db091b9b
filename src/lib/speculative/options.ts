/**
 * What a user asks of speculative decoding (docs/speculative.md): one draft source per run, its
 * settings, and whether a draft that cannot be used fails the run (`required`) or is refused with a
 * warning while the run goes on without it. Never dropped quietly: the report says which.
 */
import type {LookupDraftOptions, ModelDraftOptions, MtpDraftOptions} from '../engine/index.js'

export type SpeculationOptions =
  | ({readonly source: 'lookup'; readonly required?: boolean} & LookupDraftOptions)
  | ({
      readonly source: 'model'
      /** The draft model: a file or a model name, already resolved to a path. */
      readonly path: string
      /** Its context's threads (default: the target's). */
      readonly threads?: number
      readonly required?: boolean
    } & ModelDraftOptions)
  | ({readonly source: 'mtp'; readonly required?: boolean} & MtpDraftOptions)

/** What a run reports of its draft: the source in use, or the one asked for and why it is not used. */
export type SpeculationStatus =
  | {readonly active: true; readonly source: 'lookup' | 'model' | 'mtp'; readonly settings: Readonly<Record<string, number | string>>}
  | {readonly active: false; readonly source: 'lookup' | 'model' | 'mtp'; readonly refused: string}
