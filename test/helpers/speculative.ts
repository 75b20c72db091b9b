// Shared by the speculative decoding tests: the samplings they compare, a prompt lookup can draft
// from, what an outcome must keep with a draft on, and a draft whose vocabulary is not the model's.
import type {GenerationOutcome} from '../../src/lib/generate/index.js'
import {type GgufArray, GgufValueType, readGgufModel} from '../../src/lib/gguf/index.js'
import {resolveSamplingOptions, type SamplingOptions} from '../../src/lib/sampling/index.js'
import {withKvs} from './with-kvs.js'

export const GREEDY: SamplingOptions = resolveSamplingOptions({temperature: 0, logprobs: true, topLogprobs: 3})
export const SEEDED: SamplingOptions = resolveSamplingOptions({
  temperature: 0.9,
  topK: 40,
  topP: 0.95,
  seed: 1234,
  repeatPenalty: 1.1,
  logprobs: true,
  topLogprobs: 3,
})

/** A prompt that repeats itself, so prompt lookup finds continuations. */
export const REPETITIVE =
  'Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little girl named Lily. She'

/** What must not change with a draft: everything the outcome reports but timings and the draft's own counts. */
export function observable(o: GenerationOutcome, cached: readonly number[]) {
  return {text: o.text, ids: o.tokenIds, tokens: o.tokens, finish: o.finishReason, usage: o.usage, cached: [...cached]}
}

/** `dst`: stories260K (`src`) with token 300 renamed "renamed": a draft the vocabulary check refuses. */
export async function writeOtherVocab(src: string, dst: string): Promise<void> {
  const tokens = readGgufModel(src).metadata.get('tokenizer.ggml.tokens')!.value as GgufArray
  const items = [...(tokens.items as readonly string[])]
  items[300] = 'renamed'
  await withKvs(src, dst, () => [{key: 'tokenizer.ggml.tokens', type: GgufValueType.ARRAY, value: {itemType: tokens.itemType, items}}])
}
