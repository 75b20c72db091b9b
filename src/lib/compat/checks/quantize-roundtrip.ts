/**
 * `quantize_roundtrip`: the row's model quantized to Q8_0 (as `runner quantize --type Q8_0` does:
 * llama.cpp's Q8_0 mix, byte-identical to llama-quantize's), loaded and scored on a fixed text
 * beside the original (`runner score`'s library function, llama-perplexity's window scheme): the
 * mean NLLs must agree within a bound, and the KL divergence and top-1 agreement of the copy
 * against the original's saved distributions are reported beside it.
 */
import {rm} from 'node:fs/promises'
import {join} from 'node:path'

import {RunnerError} from '../../errors.js'
import {readGgufModel} from '../../gguf/index.js'
import {planQuantization, quantizeFile} from '../../quantize/index.js'
import {scoreCorpus} from '../../score/index.js'
import {type CheckClass, fail, numberParam, pass} from '../types.js'

/** The text both models score (every architecture's tokenizer reads plain English). */
export const ROUNDTRIP_TEXT =
  'Once upon a time, there was a little boy named Sam. Sam had a big brown dog called Max. Every morning they walked to the ' +
  'river and looked at the fish. One day the sky was grey and the wind was cold. Sam said, "Max, we must go home before the ' +
  'rain." Max barked and ran ahead. On the way they saw an old man sitting under a tree. He was sad because he had lost his ' +
  'hat. Sam and Max looked in the grass and behind the rocks. Max found the hat near the water and brought it back. The old ' +
  'man smiled and said, "Thank you, my friends." Sam felt happy. When they got home, his mother gave him a warm cup of milk, ' +
  'and Max went to sleep by the fire. The next day the sun came out again, and Sam and Max went back to the river to play.'

/** What runner quantize reads (plan.ts refuses any other source type: requantizing loses precision twice). */
const SOURCE_TYPES = ['F32', 'F16', 'BF16']
const DEFAULT_MAX_NLL_DELTA = 0.05
/** Windows of 64 tokens, overlapping by half so every token after the first window is scored. */
const CTX = 64
const STRIDE = 32
/** Refusals of the plan that mean "not applicable to this file", not a failure. */
const NOT_APPLICABLE = new Set(['QUANT_REQUANTIZE', 'QUANT_NOTHING_TO_DO', 'QUANT_MIX_UNSUPPORTED'])

const fmt = (x: number) => (Math.abs(x) >= 1e-3 || x === 0 ? x.toFixed(4) : x.toExponential(2))

export const quantizeRoundtrip: CheckClass = {
  name: 'quantize_roundtrip',
  summary:
    "the model quantized to Q8_0 (runner quantize, llama.cpp's mix) loads and scores a fixed text within a bound of the original's mean NLL (runner score, llama-perplexity's windows); KL divergence and top-1 agreement reported",
  params: {
    maxNllDelta: {
      type: 'number',
      description: `largest |Δ mean NLL| allowed between the original and its Q8_0 copy, in nats (default ${DEFAULT_MAX_NLL_DELTA})`,
    },
  },
  async when(row) {
    if (!SOURCE_TYPES.includes(row.type)) {
      return `the model is ${row.type}: quantize converts F32/F16/BF16 weights only (requantizing is refused)`
    }
    try {
      planQuantization(readGgufModel(row.path), {type: 'Q8_0', pure: false})
    } catch (error) {
      if (error instanceof RunnerError && NOT_APPLICABLE.has(error.code)) return `quantize refuses it: ${error.message}`
      // Anything else (an unreadable file...) is run()'s to report as a failure.
    }
    return undefined
  },
  async run(row, params, env) {
    const bound = numberParam(params, 'maxNllDelta', DEFAULT_MAX_NLL_DELTA)
    if (bound < 0) throw new TypeError(`parameter maxNllDelta must be >= 0, got ${bound}`)
    const copy = join(env.tmpDir, 'quantize-roundtrip.Q8_0.gguf')
    const base = join(env.tmpDir, 'quantize-roundtrip.base-logits')
    try {
      const q = await quantizeFile({
        input: row.path,
        output: copy,
        type: 'Q8_0',
        pure: false,
        keepOutput: false,
        threads: env.threads,
        silent: true,
        force: true,
        signal: env.signal,
      })
      const common = {
        corpus: ROUNDTRIP_TEXT,
        corpusFile: null,
        ctx: CTX,
        stride: STRIDE,
        threads: env.threads,
        nBatch: CTX,
        kvType: 'f32' as const,
        saveTopK: 32,
        signal: env.signal,
      }
      const original = await scoreCorpus({...common, modelPath: row.path, saveLogits: base})
      const quantized = await scoreCorpus({...common, modelPath: copy, kld: base})
      const delta = Math.abs(quantized.nll_mean - original.nll_mean)
      const k = quantized.kld!
      const evidence =
        `|Δ mean NLL| ${fmt(delta)} nats ${delta <= bound ? '<=' : '>'} ${bound} ` +
        `(${row.type} ${fmt(original.nll_mean)} -> Q8_0 ${fmt(quantized.nll_mean)} over ${original.n_scored} tokens; ` +
        `KL mean ${fmt(k.mean)}, max ${fmt(k.max)}; top-1 agreement ${(100 * k.top1_agreement).toFixed(1)} %; ` +
        `${q.summary.converted} of ${q.summary.tensors} tensors converted, ${q.summary.bitsPerWeight.toFixed(2)} bits per weight)`
      const figures = {nllDelta: {value: delta, better: 'lower' as const, tolerance: 0.5, unit: 'nats'}}
      return delta <= bound ? pass(evidence, figures) : fail(evidence, figures)
    } finally {
      await Promise.all([rm(copy, {force: true}), rm(base, {force: true})])
    }
  },
}
