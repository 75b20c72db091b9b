/**
 * `runner serve` as a library call: startServer (src/lib/server) with the same options, returning
 * where it listens and how to close it. Signals are the caller's business here: nothing listens
 * for SIGINT or SIGTERM, as `runner serve` does.
 */
import type {ServeOptions} from '../server/index.js'

export type {ServeOptions}

/** A running server. */
export interface Server {
  /** Where it listens, e.g. `http://127.0.0.1:8080` (port 0 in the options: the port the OS chose). */
  readonly url: string
  /**
   * Stop accepting connections, let in-flight requests finish for up to `graceMs` (default 5000),
   * cancel the rest, and free the model.
   */
  close(graceMs?: number): Promise<void>
  /** `await using server = await serve(...)` closes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Load the model and start the OpenAI-, Anthropic- and Ollama-compatible HTTP server (docs/http-api.md).
 *
 * @example
 * const server = await serve({modelPath: 'stories260K.gguf', port: 0})
 * const res = await fetch(`${server.url}/v1/models`)
 * await server.close()
 */
export async function serve(options: ServeOptions): Promise<Server> {
  // Loaded on first use: the HTTP stack (fastify, the routes' schemas) is most of what importing
  // the package would cost (0.8 s instead of 0.3 s), and a caller that never serves need not pay it.
  const {startServer} = await import('../server/index.js')
  const running = await startServer(options)
  return {
    url: running.url,
    close: (graceMs?: number) => running.close(graceMs),
    [Symbol.asyncDispose]: () => running.close(),
  }
}
