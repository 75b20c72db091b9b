/**
 * The context size a command uses when none is given: the model's training context, capped. The
 * cap keeps a model trained on 128k positions from allocating a KV cache of several GB by default;
 * -c / --ctx raises it.
 */
export const DEFAULT_CONTEXT_CAP = 4096

/** KV positions to allocate when the user gave none. */
export function defaultContextSize(nCtxTrain: number): number {
  return Math.min(nCtxTrain, DEFAULT_CONTEXT_CAP)
}
