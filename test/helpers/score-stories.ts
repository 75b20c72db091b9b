// `runner score --json` of stories260K on llama.cpp's reference corpus (ctx 128), with extra flags
// (--lora ...): what the LoRA and training tests compare the base and the adapted model by.
import assert from 'node:assert/strict'

import {runCliAsync, sharedPath} from './shared.js'

export interface StoriesScore {
  readonly nll_mean: number
  readonly ppl: number
  readonly model: {readonly sha256: string; readonly adapters?: Array<{file: string; sha256: string; alpha: number; scale: number}>}
}

export async function scoreStories(...extra: string[]): Promise<StoriesScore> {
  const args = ['score', '-m', sharedPath('models', 'stories260K.gguf'), '--file', sharedPath('reference', 'corpus-stories.txt')]
  const r = await runCliAsync([...args, '--ctx', '128', '--json', ...extra])
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout) as StoriesScore
}
