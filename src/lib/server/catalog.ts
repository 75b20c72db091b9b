/**
 * What a server can serve: the models named by `-m` (each `PATH`, a models-folder name, or
 * `ID=PATH`), every model of `--models-dir DIR`, or, with neither, every model of the models folder
 * (`runner pull`'s, `runner list`'s). Only headers are read here (sizes, shards); weights load when
 * a request first asks for a model (./fleet.ts).
 */
import {existsSync, statSync} from 'node:fs'
import {basename} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {shardPaths} from '../gguf/index.js'
import {listStoredModels, modelsDir, resolveModelPath} from '../models/index.js'
import {defaultBundlePath, type SignaturePolicy} from '../signing/index.js'
import {printable} from '../util/index.js'

export interface CatalogEntry {
  /** The id responses name: the first alias, else the file name without .gguf (a stored model: its name). */
  readonly id: string
  /** The id the file itself gives (the file name without .gguf, or the stored model's name). */
  readonly fileId: string
  /** Ids clients may send besides fileId (the first is `id`). */
  readonly aliases: readonly string[]
  /** The file the engine opens (the first shard of a split set). */
  readonly path: string
  readonly files: readonly string[]
  /** Bytes of every file (0 when a file is missing: its load fails, by name, when a request asks). */
  readonly bytes: number
  /** The signature check its load makes (docs/model-signing.md); absent: none. */
  readonly signature?: SignaturePolicy
}

/**
 * serve's signature policy: one signer's public key, a bundle per model (`ID=BUNDLE`, or BUNDLE for a
 * one-model server; otherwise the model file's `FILE.sig` beside it when there is one), and whether
 * every model must verify.
 */
export interface ServeSignatures {
  readonly publicKeyPath?: string
  /** Bundles by model id ('' for the one model of a one-model server). */
  readonly bundles?: Readonly<Record<string, string>>
  readonly require?: boolean
}

export interface CatalogOptions {
  /** -m values, in order. */
  readonly models: readonly string[]
  /** --alias values: extra ids of the one -m (with several -m, give ID=PATH instead). */
  readonly aliases?: readonly string[]
  /** --models-dir: a folder of GGUF files (and pulled models). */
  readonly modelsDir?: string
  readonly signatures?: ServeSignatures
  readonly env?: NodeJS.ProcessEnv
}

export interface Catalog {
  readonly entries: readonly CatalogEntry[]
  /**
   * One -m and nothing else: the model loads before the server listens and stays (keep_alive -1 by
   * default), as a one-model server always has. Otherwise models load on first use.
   */
  readonly single: boolean
}

const usage = (message: string) => new RunnerError('SERVE_BAD_OPTION', message, ExitCode.usage)

export async function buildCatalog(o: CatalogOptions): Promise<Catalog> {
  const env = o.env ?? process.env
  if (o.models.length !== 1 && (o.aliases ?? []).length > 0)
    throw usage('--alias names the one model of -m; with several models (or --models-dir alone), name each as -m ID=PATH')
  const entries: CatalogEntry[] = []
  for (const text of o.models) entries.push(await fromModelFlag(text, o.models.length === 1 ? (o.aliases ?? []) : [], env))
  const folder = o.modelsDir ?? (o.models.length === 0 ? modelsDir(env) : undefined)
  if (folder !== undefined) {
    if (o.modelsDir !== undefined && !existsSync(o.modelsDir)) throw usage(`--models-dir ${printable(o.modelsDir)} does not exist`)
    for (const m of await listStoredModels(folder))
      entries.push({id: m.name, fileId: m.name, aliases: [], path: m.path, files: m.files, bytes: m.bytes})
    if (entries.length === 0)
      throw usage(
        `no models to serve: ${printable(folder)} holds no GGUF files; give -m FILE, --models-dir DIR, or pull one (runner pull OWNER/REPO:QUANT)`,
      )
  }
  refuseDuplicateIds(entries)
  const single = o.models.length === 1 && o.modelsDir === undefined
  return {entries: withSignatures(entries, o.signatures ?? {}, single), single}
}

/** Each model's signature policy (ServeSignatures); a bundle for an id no model has, or without a key, is a usage error. */
function withSignatures(entries: readonly CatalogEntry[], sig: ServeSignatures, single: boolean): CatalogEntry[] {
  const bundles = {...sig.bundles}
  if (bundles[''] !== undefined && !single)
    throw usage('--model-sig BUNDLE names the bundle of the one model; with several models give --model-sig ID=BUNDLE for each')
  for (const id of Object.keys(bundles))
    if (id !== '' && !entries.some((e) => e.id === id || e.fileId === id || e.aliases.includes(id)))
      throw usage(`--model-sig ${printable(id)}=...: no model has the id ${printable(id)} (ids: ${entries.map((e) => e.id).join(', ')})`)
  if (Object.keys(bundles).length > 0 && sig.publicKeyPath === undefined)
    throw usage('--model-sig needs --model-pubkey: the public key (PEM) the bundles were signed with')
  if (sig.publicKeyPath === undefined && !sig.require) return [...entries]
  return entries.map((e) => {
    const given = bundles[e.id] ?? bundles[e.fileId] ?? e.aliases.map((a) => bundles[a]).find((b) => b !== undefined) ?? bundles['']
    const beside = defaultBundlePath(e.path)
    const bundlePath = given ?? (sig.publicKeyPath !== undefined && existsSync(beside) ? beside : undefined)
    // A key and no bundle for this model: its load is refused (model-host.ts), as a bundle-less key is elsewhere.
    const policy: SignaturePolicy = {
      ...(bundlePath !== undefined ? {bundlePath} : {}),
      ...(sig.publicKeyPath !== undefined ? {publicKeyPath: sig.publicKeyPath} : {}),
      require: sig.require === true,
    }
    return {...e, signature: policy}
  })
}

/**
 * `ID=VALUE` (serve's -m ID=FILE, --model-sig ID=BUNDLE) or a plain VALUE: an existing path wins over
 * the ID= reading, so a file whose name holds `=` still works.
 */
export function splitId(text: string): {readonly id?: string; readonly value: string} {
  const eq = text.indexOf('=')
  return eq > 0 && !existsSync(text) ? {id: text.slice(0, eq), value: text.slice(eq + 1)} : {value: text}
}

/** `-m PATH`, `-m NAME` (models folder) or `-m ID=PATH`. */
async function fromModelFlag(text: string, aliases: readonly string[], env: NodeJS.ProcessEnv): Promise<CatalogEntry> {
  const {id, value: target} = splitId(text)
  if (id !== undefined && target === '') throw usage(`-m ${printable(text)}: give a model file after ${printable(id)}=`)
  const path = await resolveModelPath(target, '-m', env)
  const files = shardPaths(path) ?? [path]
  const bytes = files.reduce((n, f) => n + (statSync(f, {throwIfNoEntry: false})?.size ?? 0), 0)
  const fileId = basename(path).replace(/\.gguf$/i, '')
  const all = [...new Set([...(id !== undefined ? [id] : []), ...aliases])]
  for (const a of all) if (a.length === 0) throw usage('--alias must not be empty')
  return {id: all[0] ?? fileId, fileId, aliases: all, path, files, bytes}
}

function refuseDuplicateIds(entries: readonly CatalogEntry[]): void {
  const owner = new Map<string, CatalogEntry>()
  for (const e of entries) {
    for (const id of new Set([e.fileId, ...e.aliases])) {
      const other = owner.get(id)
      if (other && other !== e)
        throw usage(
          `two models answer to the id ${printable(id)}: ${printable(other.path)} and ${printable(e.path)}; name one with -m ID=PATH`,
        )
      owner.set(id, e)
    }
  }
}
