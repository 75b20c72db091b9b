/** What a run says of its draft: counts from the generation, and one line for the summaries. */
import type {DraftStats} from '../engine/index.js'
import type {SpeculationStatus} from './options.js'

export type SpeculationReport = SpeculationStatus & {
  /** Drafted tokens the model verified, and those it sampled itself (accepted). */
  readonly drafted?: number
  readonly accepted?: number
  /** accepted / drafted, to 3 decimals (null: nothing drafted). */
  readonly acceptance?: number | null
  /** Verify steps that carried drafts. */
  readonly steps?: number
  readonly draftMs?: number
}

/** The report of a generation's draft (counts undefined: the draft was refused, or nothing ran). */
export function speculationReport(status: SpeculationStatus, counts: DraftStats | undefined): SpeculationReport {
  if (!status.active || !counts) return status
  const {drafted, accepted, steps, draftMs} = counts
  return {
    ...status,
    drafted,
    accepted,
    acceptance: drafted > 0 ? Math.round((accepted / drafted) * 1000) / 1000 : null,
    steps,
    draftMs: Math.round(draftMs * 10) / 10,
  }
}

/** ` · draft lookup 53/223 accepted (24%)` for a summary line; empty without speculation. */
export function describeSpeculation(r: SpeculationReport | undefined): string {
  if (!r) return ''
  if (!r.active) return ` · draft ${r.source} not used`
  if (r.drafted === undefined) return ` · draft ${r.source}`
  const pct = r.acceptance === null || r.acceptance === undefined ? '' : ` (${Math.round(r.acceptance * 100)}%)`
  return ` · draft ${r.source} ${r.accepted}/${r.drafted} accepted${pct}`
}
