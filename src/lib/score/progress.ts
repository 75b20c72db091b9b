/**
 * What `runner score` shows on stderr while it scores, after llama-perplexity: once the first window
 * is done, the time per window and an ETA; then the running perplexity (over every position scored
 * so far) as each window ends, `[1]12.3456,[2]10.1234,...`, on one line. Printed on a pipe as on a
 * terminal, as llama-perplexity does: the line grows by one entry per window, never redrawn.
 */
import {formatEta, type ProgressStream} from '../cli/index.js'

export interface ScoreProgress {
  /** Window `done` of `total` ended, `elapsedMs` after scoring began; `ppl` over every position so far. */
  window(done: number, total: number, elapsedMs: number, ppl: number): void
  /** Scoring ended, finished or not: the running line is closed before anything else is printed. */
  end(): void
}

export function scoreProgress(stream: ProgressStream = process.stderr): ScoreProgress {
  let open = false
  return {
    window(done, total, elapsedMs, ppl) {
      if (done === 1) {
        const perWindow = elapsedMs / 1000
        stream.write(`score: ${total} windows, ${perWindow.toFixed(2)} s per window, ETA ${formatEta(perWindow * (total - 1))}\n`)
      }
      stream.write(`[${done}]${ppl.toFixed(4)},`)
      open = true
    },
    end() {
      if (open) stream.write('\n')
      open = false
    },
  }
}
