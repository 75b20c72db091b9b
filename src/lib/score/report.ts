import {formatRows, printable} from '../util/index.js'
import type {ScoreDocument} from './corpus.js'

/** The human form of a score report: one row per figure. */
export function formatScoreReport(doc: ScoreDocument): string {
  return formatRows([
    ...(doc.partial ? ([['partial', partialLine(doc)]] as Array<[string, string]>) : []),
    ['tokens scored', `${doc.n_scored} in ${doc.windows_scored} windows of ${doc.scheme.ctx} (stride ${doc.scheme.stride})`],
    ['nll mean', `${doc.nll_mean.toFixed(6)} ± ${doc.nll_std_error.toFixed(6)} (std ${doc.nll_std.toFixed(4)})`],
    ['perplexity', `${doc.ppl.toFixed(4)} (95%: ${doc.ppl_ci95[0].toFixed(4)} to ${doc.ppl_ci95[1].toFixed(4)})`],
    ['top-1', `${doc.top1} of ${doc.n_scored} (${(100 * doc.top1_rate).toFixed(2)}%)`],
    ['speed', `${doc.timings.scoredPerSecond} tokens/s scored (${doc.timings.tokensPerSecond} tokens/s evaluated, ${doc.timings.ms} ms)`],
    ...(doc.kld
      ? ([
          [
            'KLD vs base',
            `mean ${doc.kld.mean.toFixed(6)}, median ${doc.kld.median.toFixed(6)}, p99 ${doc.kld.p99.toFixed(6)}, max ${doc.kld.max.toFixed(6)}`,
          ],
          [
            'top-1 agreement',
            `${(100 * doc.kld.top1_agreement).toFixed(2)}% (${(100 * doc.kld.top1_agreement_margin).toFixed(2)}% where the base leads by > ${doc.kld.margin} nats, ${doc.kld.margin_positions} positions)`,
          ],
          ['ppl ratio', `${doc.kld.ppl_ratio.toFixed(6)} (base ppl ${doc.kld.base_ppl.toFixed(4)})`],
        ] as Array<[string, string]>)
      : []),
    ['model sha256', doc.model.sha256],
    ...(doc.model.adapters ?? []).map((a): [string, string] => ['adapter', `${a.sha256} scale ${a.scale} (${printable(a.file)})`]),
    ['corpus sha256', doc.corpus.sha256],
  ])
}

/** What an interrupted report covers, first in it: a reader must not take it for the whole corpus. */
function partialLine(doc: ScoreDocument): string {
  const unsaved = doc.not_written === undefined ? '' : `; ${printable(doc.not_written)} was not written`
  return `${doc.windows_scored} of ${doc.scheme.windows} windows (interrupted); every figure below is over those windows only${unsaved}`
}
