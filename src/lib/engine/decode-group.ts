/**
 * A decode group (native/src/model/group.c): generations on several contexts of one model evaluate
 * their next tokens together, one forward pass (one read of the weights) per step for all of them.
 * `serve` makes one for its slots, so N clients cost about one weight pass per token instead of N.
 * Each sequence's tokens and log-probabilities are bitwise those of generating it alone: the
 * group changes speed, never results (test/lib/engine/decode-group.test.ts).
 */
import {ExitCode, RunnerError} from '../errors.js'
import {defaultThreads} from '../util/index.js'
import {loadAddon, type NativeGroupHandle} from './addon.js'
import {engineError} from './errors.js'
import type {Model} from './model.js'

export interface DecodeGroupOptions {
  /** Threads of the group's steps (default: the machine's physical cores). */
  readonly threads?: number
  /** Generations that may step together; one more decodes alone (default 8). */
  readonly maxMembers?: number
  /**
   * How long a step waits for the members still sampling before it runs without them, in
   * microseconds (default 2000): they join the next step.
   */
  readonly waitUs?: number
}

export interface DecodeGroupStats {
  /** Forward steps the group ran. */
  readonly steps: number
  /** Tokens evaluated in them (tokens / steps: the mean batch). */
  readonly tokens: number
}

export class DecodeGroup {
  private handle: NativeGroupHandle | undefined

  private constructor(
    readonly model: Model,
    handle: NativeGroupHandle,
    readonly options: Required<DecodeGroupOptions>,
  ) {
    this.handle = handle
  }

  static create(model: Model, options: DecodeGroupOptions = {}): DecodeGroup {
    const o = {threads: options.threads ?? defaultThreads(), maxMembers: options.maxMembers ?? 8, waitUs: options.waitUs ?? 2000}
    const check = (name: string, v: number, min: number, max: number) => {
      if (!Number.isInteger(v) || v < min || v > max)
        throw new RunnerError('GROUP_BAD_OPTION', `decode group ${name} ${v} must be an integer in [${min}, ${max}]`, ExitCode.usage)
    }
    check('threads', o.threads, 1, 256)
    check('maxMembers', o.maxMembers, 1, 4096)
    check('waitUs', o.waitUs, 0, 1_000_000)
    try {
      return new DecodeGroup(model, loadAddon().groupCreate(model.native, o), o)
    } catch (error) {
      throw engineError(error)
    }
  }

  /** The native handle, for a context of `model` (a group serves one model). */
  handleFor(model: Model): NativeGroupHandle {
    if (model !== this.model) throw new RunnerError('GROUP_OTHER_MODEL', 'the decode group belongs to another model', ExitCode.usage)
    if (!this.handle) throw new RunnerError('GROUP_DISPOSED', 'the decode group has been disposed', ExitCode.failure)
    return this.handle
  }

  stats(): DecodeGroupStats {
    if (!this.handle) return {steps: 0, tokens: 0}
    return loadAddon().groupStats(this.handle)
  }

  /** Release the group; generations still in it keep it until they end. */
  dispose(): void {
    if (this.handle) loadAddon().groupFree(this.handle)
    this.handle = undefined
  }
}
