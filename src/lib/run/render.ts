/** What `runner run` prints of a RunReport: the --json document and the summary line on stderr. */
import {amxStatus, cpuFeatures, describeKernels, describeKv, kernelSet} from '../engine/index.js'
import {describeSpeculation} from '../speculative/index.js'
import {formatBytes} from '../util/index.js'
import type {RunReport} from './run-prompt.js'

/** The --json document (the kernels the run used added). */
export function runJson(r: RunReport): Record<string, unknown> {
  const {text, tokens, promptTokens, finishReason, timings, constraint, peakRssBytes, kv, contextShift, adapters, speculation, signature} =
    r
  const kernels = kernelSet(cpuFeatures(), amxStatus().state)
  return {
    text,
    tokens,
    promptTokens,
    finishReason,
    seed: r.seed.toString(),
    timings,
    constraint,
    peakRssBytes,
    kv,
    contextShift,
    kernels,
    adapters,
    ...(speculation ? {speculation} : {}),
    ...(signature ? {signature} : {}),
  }
}

/** The one-line summary: load, prompt and decode speed, shifts, peak RSS, finish, seed, kernels, KV cache, draft. */
export function runSummary(r: RunReport): string {
  const t = r.timings
  return (
    `load ${t.loadMs} ms · prompt ${r.evaluatedTokens} tokens, ${t.promptTokensPerSecond} tok/s · decode ${r.tokens.length} tokens` +
    `${t.decodeTokensPerSecond === null ? '' : `, ${t.decodeTokensPerSecond} tok/s`}${shifts(r.contextShift)} · peak RSS ${formatBytes(r.peakRssBytes)} · ${r.finishReason} · seed ${r.seed} · ` +
    `kernels ${describeKernels(kernelSet(cpuFeatures(), amxStatus().state))} · ${describeKv(r.kv)}${describeSpeculation(r.speculation)}\n`
  )
}

/** " (2 context shifts, 244 tokens dropped)" with --context-shift, else nothing. */
function shifts(s: RunReport['contextShift']): string {
  return s ? ` (${s.shifts} context shift${s.shifts === 1 ? '' : 's'}, ${s.discarded} tokens dropped)` : ''
}
