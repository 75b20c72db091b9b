import {dominantType, readGgufModel, summarizeModel} from '../gguf/index.js'
import {RunnerError} from '../errors.js'
import {listStoredModels, type StoredModel} from './store.js'

/** One row of `runner list`: what ollama's list shows (name, size, modified) and what llama.cpp users look for (architecture, type, parameters). */
export interface ModelListing {
  readonly name: string
  readonly kind: StoredModel['kind']
  readonly path: string
  readonly files: number
  readonly bytes: number
  readonly modified: string
  readonly architecture?: string
  /** The type holding most of the weight bytes (Q4_K, Q8_0, F16…). */
  readonly type?: string
  readonly parameters?: number
  /** Set when the header cannot be read: the code of the refusal (the model is listed all the same, so `rm` can find it). */
  readonly error?: string
  readonly source?: {readonly repo: string; readonly commit: string; readonly endpoint: string}
}

/** Every model in the folder with what its header says (headers only: instant on any size). */
export async function listModels(dir: string): Promise<ModelListing[]> {
  return (await listStoredModels(dir)).map((m) => {
    const base = {
      name: m.name,
      kind: m.kind,
      path: m.path,
      files: m.files.length,
      bytes: m.bytes,
      modified: m.modified.toISOString(),
      ...(m.manifest
        ? {source: {repo: m.manifest.source.repo, commit: m.manifest.source.commit, endpoint: m.manifest.source.endpoint}}
        : {}),
    }
    try {
      const s = summarizeModel(readGgufModel(m.path))
      return {...base, architecture: s.architecture, type: dominantType(s), parameters: s.parameterCount}
    } catch (error) {
      return {...base, error: error instanceof RunnerError ? error.code : 'UNREADABLE'}
    }
  })
}
