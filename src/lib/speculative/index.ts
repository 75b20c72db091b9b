/** Public face of the speculative area: the options a run gives, opening its drafts, and its report (docs/speculative.md). */
export {openDrafts, type OpenDraftContext, type OpenedDrafts} from './open-draft.js'
export type {SpeculationOptions, SpeculationStatus} from './options.js'
export {describeSpeculation, type SpeculationReport, speculationReport} from './report.js'
