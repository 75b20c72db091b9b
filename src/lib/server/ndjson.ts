/**
 * Newline-delimited JSON as Ollama streams it: one JSON object per line, the last one with
 * `done: true`. Headers go out with the first line, so that a request refused or timed out before
 * any token (queue full, timeout during the prompt) still gets its HTTP status and `{"error"}` body;
 * after that an error is a last line `{"error": "message"}`, which Ollama's clients raise.
 */
import type {ServerResponse} from 'node:http'

import type {ApiError} from './api-error.js'
import {ollamaErrorBody} from './error-shape.js'

export const NDJSON_CONTENT_TYPE = 'application/x-ndjson'

export class NdjsonWriter {
  private started = false

  constructor(private readonly res: ServerResponse) {}

  private start(): void {
    if (this.started) return
    this.started = true
    this.res.writeHead(200, {'content-type': NDJSON_CONTENT_TYPE, 'cache-control': 'no-cache', 'x-accel-buffering': 'no'})
  }

  private get open(): boolean {
    return !this.res.writableEnded && !this.res.destroyed
  }

  send(line: unknown): void {
    this.start()
    if (this.open) this.res.write(`${JSON.stringify(line)}\n`)
  }

  /** The last line (`done: true`), then the end of the response. */
  end(line: unknown): void {
    this.start()
    if (this.open) this.res.end(`${JSON.stringify(line)}\n`)
  }

  fail(error: ApiError): void {
    if (!this.started) {
      this.started = true
      if (this.open) {
        this.res.writeHead(error.status, {'content-type': 'application/json; charset=utf-8', ...error.headers})
        this.res.end(JSON.stringify(ollamaErrorBody(error)))
      }
      return
    }
    if (this.open) this.res.end(`${JSON.stringify(ollamaErrorBody(error))}\n`)
  }
}
