/**
 * The seam a planned feature plugs into, typed now so that its issue changes one place: speculative
 * decoding (a draft model proposes, the target verifies). It is not built: a request that sets it is
 * refused by name, never ignored. (Constrained decoding, once a hook here, is the request's
 * `constraint`: its mask runs inside the engine's loop, not in JavaScript.)
 */
import {ExitCode, RunnerError} from '../errors.js'

/** Speculative decoding: a cheaper model proposes tokens, the target evaluates them in one step and keeps the agreeing prefix. */
export interface DraftHook {
  /** Up to `max` tokens predicted after `sequence` (prompt and generated tokens so far). */
  propose(sequence: readonly number[], max: number): Promise<readonly number[]>
  /** How many of the last proposal the target accepted. */
  accepted?(count: number): void
}

export interface GenerationHooks {
  readonly draft?: DraftHook
}

/** Why each hook is refused, by its option name. */
const NOT_BUILT: Readonly<Record<keyof GenerationHooks, string>> = {
  draft: 'draft (a draft/verify hook for speculative decoding) is not supported yet',
}

/** Refuse every hook that is set: none is built yet. */
export function refuseUnbuiltHooks(hooks: GenerationHooks): void {
  for (const name of Object.keys(NOT_BUILT) as Array<keyof GenerationHooks>) {
    if (hooks[name] !== undefined) throw new RunnerError('GENERATE_UNSUPPORTED', NOT_BUILT[name], ExitCode.unsupported)
  }
}
