/**
 * The seams two planned features plug into, typed now so that their issues change one place:
 * constrained decoding (a per-step token mask) and speculative decoding (a draft model proposes,
 * the target verifies). Neither is built: a request that sets one is refused by name, never ignored.
 */
import {ExitCode, RunnerError} from '../errors.js'

/** Constrained decoding: before each draw, which tokens may come next (a grammar or JSON schema state). */
export interface TokenMaskHook {
  /** Allowed ids after the tokens generated so far; undefined: no restriction at this step. */
  allowed(generated: readonly number[]): Uint8Array | ReadonlySet<number> | undefined
  /** Each accepted token, so the grammar can advance. */
  accept?(token: number): void
}

/** Speculative decoding: a cheaper model proposes tokens, the target evaluates them in one step and keeps the agreeing prefix. */
export interface DraftHook {
  /** Up to `max` tokens predicted after `sequence` (prompt and generated tokens so far). */
  propose(sequence: readonly number[], max: number): Promise<readonly number[]>
  /** How many of the last proposal the target accepted. */
  accepted?(count: number): void
}

export interface GenerationHooks {
  readonly tokenMask?: TokenMaskHook
  readonly draft?: DraftHook
}

/** Why each hook is refused, by its option name. */
const NOT_BUILT: Readonly<Record<keyof GenerationHooks, string>> = {
  tokenMask: 'tokenMask (a per-step token mask for constrained decoding) is not supported yet',
  draft: 'draft (a draft/verify hook for speculative decoding) is not supported yet',
}

/** Refuse every hook that is set: none is built yet. */
export function refuseUnbuiltHooks(hooks: GenerationHooks): void {
  for (const name of Object.keys(NOT_BUILT) as Array<keyof GenerationHooks>) {
    if (hooks[name] !== undefined) throw new RunnerError('GENERATE_UNSUPPORTED', NOT_BUILT[name], ExitCode.unsupported)
  }
}
