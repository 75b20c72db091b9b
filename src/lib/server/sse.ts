/**
 * Server-sent events as OpenAI streams them: `data: {json}\n\n` per chunk, `data: [DONE]` at the
 * end. Headers go out with the first chunk, so that a request refused or timed out before any
 * token (in the queue, during prefill) still gets its HTTP status (503, 408) instead of a 200.
 */
import type {ServerResponse} from 'node:http'

import type {ApiError} from './api-error.js'

export class SseWriter {
  private started = false

  /** `errorBody`: the error object's shape on this route (OpenAI's by default, Anthropic's on /v1/messages). */
  constructor(
    private readonly res: ServerResponse,
    private readonly errorBody: (error: ApiError) => unknown = (e) => e.body(),
    /** The SSE event name errors go out under after the stream started (Anthropic names its events). */
    private readonly errorEvent?: string,
    /** The error's body once the stream started, when it differs (the Responses API's `error` event). */
    private readonly streamErrorBody: (error: ApiError) => unknown = errorBody,
  ) {}

  get headersSent(): boolean {
    return this.started
  }

  private start(): void {
    if (this.started) return
    this.started = true
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      // No connection header of our own: Node's follows the request (a client's "Connection: close" is honoured).
      'x-accel-buffering': 'no',
    })
  }

  send(data: unknown, event?: string): void {
    this.start()
    if (!this.res.writableEnded && !this.res.destroyed)
      this.res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`)
  }

  /** OpenAI's end marker. */
  done(): void {
    this.start()
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end('data: [DONE]\n\n')
  }

  /** End without a marker (Anthropic's streams end with their message_stop event). */
  end(): void {
    this.start()
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end()
  }

  /** After the stream started, an error travels as an event OpenAI's clients raise (`{"error": ...}`). */
  fail(error: ApiError): void {
    if (!this.started) {
      this.started = true
      if (!this.res.writableEnded && !this.res.destroyed) {
        this.res.writeHead(error.status, {'content-type': 'application/json; charset=utf-8', ...error.headers})
        this.res.end(JSON.stringify(this.errorBody(error)))
      }
      return
    }
    const event = this.errorEvent ? `event: ${this.errorEvent}\n` : ''
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end(`${event}data: ${JSON.stringify(this.streamErrorBody(error))}\n\n`)
  }
}
