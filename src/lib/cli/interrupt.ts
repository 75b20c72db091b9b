/**
 * Ctrl+C for commands: the first SIGINT (or another listed signal) raises an AbortSignal whose
 * reason is the signal's name. The listeners go at once, so a second Ctrl+C ends the process as
 * Node does by default (a way out if stopping cleanly hangs).
 */
export interface Interrupt {
  readonly signal: AbortSignal
  /** Stop listening (idempotent). */
  dispose(): void
}

export function listenForInterrupt(signals: readonly NodeJS.Signals[] = ['SIGINT']): Interrupt {
  const controller = new AbortController()
  const handlers = signals.map((name) => [name, () => stop(name)] as const)
  const dispose = () => {
    for (const [name, handler] of handlers) process.removeListener(name, handler)
  }
  const stop = (name: NodeJS.Signals) => {
    dispose()
    controller.abort(name)
  }
  for (const [name, handler] of handlers) process.once(name, handler)
  return {signal: controller.signal, dispose}
}

/** Run `body` with a signal that the first Ctrl+C (or another listed signal) raises. */
export async function withInterrupt<T>(body: (signal: AbortSignal) => Promise<T>, signals?: readonly NodeJS.Signals[]): Promise<T> {
  const interrupt = listenForInterrupt(signals)
  try {
    return await body(interrupt.signal)
  } finally {
    interrupt.dispose()
  }
}
