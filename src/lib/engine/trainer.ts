/**
 * The engine's LoRA trainer (runner.h "LoRA training") over a loaded model: one pair per target
 * weight, the loss and gradient of a sample computed on a worker thread, and the optimizer step.
 * Parameters are PEFT's lora_A (rank x n_in) and lora_B (n_out x rank) per target, in double.
 */
import type {TensorRole} from '../arch/index.js'
import {roleId} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {abortFlags} from './abort-flags.js'
import {loadAddon, type NativeTrainerHandle} from './addon.js'
import {engineError} from './errors.js'
import type {Model} from './model.js'

export interface TrainTarget {
  /** The base tensor, e.g. `blk.0.attn_q.weight` (the adapter names its pair after it). */
  readonly name: string
  readonly role: TensorRole
  readonly layer: number
  readonly nIn: number
  readonly nOut: number
}

export interface TrainerOptions {
  readonly targets: readonly TrainTarget[]
  readonly rank: number
  readonly alpha: number
  readonly dropout: number
  /** Most tokens of one sample. */
  readonly nCtx: number
  readonly threads: number
}

export interface OptimizerStep {
  readonly kind: 'adamw' | 'sgd'
  readonly lr: number
  readonly beta1: number
  readonly beta2: number
  readonly eps: number
  readonly weightDecay: number
  /** The accumulated gradients are multiplied by it first (1 / tokens scored). */
  readonly gradScale: number
  /** Clip the global norm to it (0: no clipping). */
  readonly maxGradNorm: number
}

export const TRAIN_VECTORS = {params: 0, grads: 1, moment1: 2, moment2: 3} as const
export type TrainVector = keyof typeof TRAIN_VECTORS

export class Trainer {
  private handle: NativeTrainerHandle | undefined

  private constructor(
    readonly model: Model,
    readonly options: TrainerOptions,
    handle: NativeTrainerHandle,
    readonly nParams: number,
  ) {
    this.handle = handle
  }

  static create(model: Model, options: TrainerOptions): Trainer {
    const addon = loadAddon()
    try {
      const handle = addon.trainerCreate(model.native, {
        nCtx: options.nCtx,
        rank: options.rank,
        alpha: options.alpha,
        dropout: options.dropout,
        threads: options.threads,
        roles: Int32Array.from(options.targets.map((t) => roleId(t.role))),
        layers: Int32Array.from(options.targets.map((t) => t.layer)),
      })
      return new Trainer(model, options, handle, addon.trainerNParams(handle))
    } catch (error) {
      throw engineError(error)
    }
  }

  private get native(): NativeTrainerHandle {
    if (!this.handle) throw new RunnerError('TRAINER_DISPOSED', 'the trainer has been disposed', ExitCode.failure)
    return this.handle
  }

  get(what: TrainVector): Float64Array {
    try {
      return loadAddon().trainerGet(this.native, TRAIN_VECTORS[what])
    } catch (error) {
      throw engineError(error)
    }
  }

  set(what: TrainVector, values: Float64Array): void {
    try {
      loadAddon().trainerSet(this.native, TRAIN_VECTORS[what], values)
    } catch (error) {
      throw engineError(error)
    }
  }

  get steps(): number {
    return loadAddon().trainerSteps(this.native)
  }

  set steps(n: number) {
    loadAddon().trainerSteps(this.native, n)
  }

  /**
   * The summed cross-entropy of tokens[i + 1] over the i with scored[i + 1] set; with `grad`, its
   * gradient is added to the accumulated gradients (dropout masks from `seed`).
   */
  async sample(
    tokens: Int32Array,
    scored: Uint8Array,
    options: {grad: boolean; seed?: bigint; signal?: AbortSignal},
  ): Promise<{loss: number; scored: number}> {
    const flags = abortFlags(options.signal)
    try {
      return await loadAddon().trainerSample(this.native, tokens, scored, options.grad, options.seed ?? 0n, flags.array)
    } catch (error) {
      throw engineError(error)
    } finally {
      flags.release()
    }
  }

  /** One optimizer step on the accumulated gradients (then zeroed); the gradient norm before clipping. */
  optimize(step: OptimizerStep): number {
    try {
      return loadAddon().trainerOptimize(this.native, {...step, kind: step.kind === 'adamw' ? 0 : 1})
    } catch (error) {
      throw engineError(error)
    }
  }

  dispose(): void {
    if (this.handle) loadAddon().trainerFree(this.handle)
    this.handle = undefined
  }
}
