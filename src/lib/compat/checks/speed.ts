/**
 * `speed`: prompt processing and generation tokens/s on the row's model, as llama-bench measures
 * them (pp: one batch of N prompt tokens from an empty cache; tg: N tokens generated one at a time),
 * the median of a few repetitions. It passes whenever it measures: there is no absolute bound, the
 * figures carry `better: 'higher'` and a tolerance, and the baseline gate fails a drop beyond it.
 */
import {cpus} from 'node:os'

import {Model} from '../../engine/index.js'
import {resolveSamplingOptions} from '../../sampling/index.js'
import {type CheckClass, type CheckParams, type Figure, fail, numberParam, pass} from '../types.js'

const DEFAULTS = {pp: 64, tg: 32, reps: 3, tolerance: 0.5}

function integer(params: CheckParams, key: keyof typeof DEFAULTS, min: number): number {
  const v = numberParam(params, key, DEFAULTS[key])
  if (!Number.isSafeInteger(v) || v < min) throw new TypeError(`parameter ${key} must be an integer >= ${min}, got ${v}`)
  return v
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** The figures of a measurement: tokens/s, higher is better, within the tolerance of the baseline. */
export function speedFigures(ppPerSecond: number, tgPerSecond: number, tolerance: number): Record<string, Figure> {
  const round = (x: number) => Math.round(x * 10) / 10
  return {
    ppTokensPerSecond: {value: round(ppPerSecond), better: 'higher', tolerance, unit: 'tokens/s', machine: true},
    tgTokensPerSecond: {value: round(tgPerSecond), better: 'higher', tolerance, unit: 'tokens/s', machine: true},
  }
}

export const speed: CheckClass = {
  name: 'speed',
  summary:
    "prompt processing and generation tokens/s (llama-bench's pp and tg), median of repetitions; no absolute bound: the baseline report's figures, within a tolerance, are the anchor",
  params: {
    pp: {type: 'integer', minimum: 1, description: `prompt tokens processed in one batch (default ${DEFAULTS.pp})`},
    tg: {type: 'integer', minimum: 1, description: `tokens generated one at a time, greedy, end of text ignored (default ${DEFAULTS.tg})`},
    reps: {type: 'integer', minimum: 1, description: `repetitions; the median is reported (default ${DEFAULTS.reps})`},
    tolerance: {
      type: 'number',
      description: `relative drop against the baseline that still passes (default ${DEFAULTS.tolerance}: a drop of more than 50 % fails; CI machines are noisy)`,
    },
  },
  async when() {
    return undefined
  },
  async run(row, params, env) {
    const pp = integer(params, 'pp', 1)
    const tg = integer(params, 'tg', 1)
    const reps = integer(params, 'reps', 1)
    const tolerance = numberParam(params, 'tolerance', DEFAULTS.tolerance)
    if (!(tolerance >= 0 && tolerance <= 1)) throw new TypeError(`parameter tolerance must be in [0, 1], got ${tolerance}`)
    const model = await Model.load(row.path, {signal: env.signal})
    try {
      const nVocab = model.config.nVocab
      // Fixed ids spread over the vocabulary, after BOS: the cost of a forward step does not depend on which tokens.
      const bos = model.tokenizer.bos ?? 0
      const prompt = Array.from({length: pp}, (_, i) => (i === 0 ? bos : (i * 7919) % nVocab))
      const ctx = await model.createContext({nCtx: pp + tg + 1, nBatch: pp, threads: env.threads, kvType: 'f16'})
      try {
        const sampling = resolveSamplingOptions({temperature: 0, seed: 0})
        const once = async () => {
          ctx.kvTruncate(0)
          // tg + 1 tokens: the first is sampled from the prompt's logits, the other tg each cost one evaluated step.
          return ctx.generate(prompt, {maxTokens: tg + 1, sampling, stopTokens: [], pos: 0, signal: env.signal}).result
        }
        await once() // warm-up: page in the weights, size the scratch buffers
        const ppRates: number[] = []
        const tgRates: number[] = []
        for (let r = 0; r < reps; r++) {
          const g = await once()
          env.signal.throwIfAborted()
          if (g.tokens.length !== tg + 1) return fail(`generated ${g.tokens.length} of ${tg + 1} tokens (finish reason ${g.finishReason})`)
          ppRates.push((1000 * pp) / Math.max(g.promptMs, 1e-6))
          tgRates.push((1000 * tg) / Math.max(g.decodeMs, 1e-6))
        }
        const figures = speedFigures(median(ppRates), median(tgRates), tolerance)
        const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU'
        return pass(
          `pp ${pp}: ${figures.ppTokensPerSecond!.value} tokens/s, tg ${tg}: ${figures.tgTokensPerSecond!.value} tokens/s ` +
            `(median of ${reps}; ${env.threads} thread(s) on ${cpu}; tolerance ${tolerance} against the baseline)`,
          figures,
        )
      } finally {
        ctx.dispose()
      }
    } finally {
      model.dispose()
    }
  },
}
