import {formatBytes} from '../util/index.js'

/**
 * A progress line on stderr while a big model loads: only on a terminal, and never when `enabled`
 * is false (--json, where stderr may be read by a script too).
 */
export function loadProgress(enabled = true): ((done: number, total: number) => void) | undefined {
  if (!enabled || !process.stderr.isTTY) return undefined
  return (done, total) => {
    process.stderr.write(`\rloading ${((100 * done) / Math.max(total, 1)).toFixed(0)}% (${formatBytes(done)} of ${formatBytes(total)})`)
    if (done >= total) process.stderr.write('\r\u001B[K')
  }
}
