/** An Int32Array [abort, stop] the engine polls (between layers, tokens and load chunks), raised by an AbortSignal. */
export function abortFlags(signal: AbortSignal | undefined): {array: Int32Array; release: () => void} {
  const array = new Int32Array(2)
  if (!signal) return {array, release: () => {}}
  const onAbort = () => {
    array[0] = 1
  }
  if (signal.aborted) onAbort()
  signal.addEventListener('abort', onAbort)
  return {array, release: () => signal.removeEventListener('abort', onAbort)}
}
