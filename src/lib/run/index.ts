/** Public face of `runner run`'s use case: one prompt, one generation, an optional receipt. */
export {type RunOptions, type RunReport, type RunTimings, runPrompt} from './run-prompt.js'
export {runFlags} from './run-flags.js'
export {RUN_EXAMPLES} from './examples.js'
export {runJson, runSummary} from './render.js'
