import {existsSync} from 'node:fs'

import {hasHubPrefix, parseHubRef} from './hub-ref.js'
import {unknownModel} from './manifest.js'
import {modelsDir} from './models-dir.js'
import {findStoredModel} from './store.js'

/**
 * What a model argument means, wherever a command takes a model path (`-m`, run's and chat's
 * argument, inspect's and quantize's input): an existing path is that file; otherwise a model in the
 * models folder by name (`OWNER/REPO:Q4_K_M`, or a unique short name such as `stories260K`); otherwise,
 * when it cannot be a path either (no `.gguf` at its end), MODEL_NOT_FOUND saying where we looked
 * and how to pull one. A missing path ending in .gguf stays a path, and the loader names it
 * (GGUF_NOT_FOUND), as it always has.
 */
export async function resolveModelPath(text: string, flag: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (text === '' || existsSync(text)) return text
  const dir = modelsDir(env)
  const stored = (await findStoredModel(dir, text)) ?? (await viaHubName(dir, text))
  if (stored) return stored.path
  if (!/\.gguf$/i.test(text) || hasHubPrefix(text)) throw unknownModel(text, dir, flag, hubName(text))
  return text
}

/** The Hub name a text would pull as, when it is written as one (OWNER/REPO[:QUANT], hf.co/...). */
function hubName(text: string): string | undefined {
  try {
    return parseHubRef(text)?.name
  } catch {
    return undefined
  }
}

/** `hf.co/OWNER/REPO:TAG` (llama.cpp's -hf spelling) means the pulled `OWNER/REPO:TAG`. */
async function viaHubName(dir: string, text: string) {
  const name = hubName(text)
  return name !== undefined && name !== text ? findStoredModel(dir, name) : undefined
}
