import {readdir, rmdir, stat, unlink} from 'node:fs/promises'
import {dirname, join, relative, resolve, sep} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {shardPaths} from '../gguf/index.js'
import {printable} from '../util/index.js'
import {type ModelManifest, readManifests, removeManifest} from './manifest.js'

/** A model in the models folder: one `runner pull` left (with its manifest), or a .gguf file put there by hand. */
export interface StoredModel {
  readonly name: string
  readonly kind: 'pulled' | 'file'
  /** The file -m opens (the first shard of a split set). */
  readonly path: string
  /** Every file of the model (the shards of a split set). */
  readonly files: readonly string[]
  readonly bytes: number
  readonly modified: Date
  readonly manifest?: ModelManifest
}

const SHARD_SUFFIX = /-(\d{5})-of-(\d{5})\.gguf$/i

/** Every model in the folder: pulled ones by name, then the loose .gguf files at its top (a split set once). */
export async function listStoredModels(dir: string): Promise<StoredModel[]> {
  const out: StoredModel[] = []
  for (const m of await readManifests(dir)) {
    const files = m.files.map((f) => join(dir, ...f.path.split('/')))
    const stats = await Promise.all(files.map((f) => stat(f).catch(() => undefined)))
    // A manifest whose files are gone (removed by hand) is not a model: skipped, as ollama skips a broken one.
    if (stats.some((s) => !s?.isFile())) continue
    out.push({
      name: m.name,
      kind: 'pulled',
      path: files[0]!,
      files,
      bytes: m.files.reduce((a, f) => a + f.bytes, 0),
      modified: new Date(m.pulledAt),
      manifest: m,
    })
  }
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => /\.gguf$/i.test(n)).sort()
  for (const n of names) {
    const shard = SHARD_SUFFIX.exec(n)
    if (shard && Number(shard[1]) !== 1) continue
    const path = join(dir, n)
    const files = shard ? (shardPaths(path) ?? [path]) : [path]
    const stats = await Promise.all(files.map((f) => stat(f).catch(() => undefined)))
    if (!stats[0]?.isFile()) continue
    out.push({
      name: shard ? n.replace(SHARD_SUFFIX, '') : n.replace(/\.gguf$/i, ''),
      kind: 'file',
      path,
      files,
      bytes: stats.reduce((a, s) => a + (s?.size ?? 0), 0),
      modified: new Date(Math.max(...stats.map((s) => s?.mtimeMs ?? 0))),
    })
  }
  return out
}

/**
 * The shorter names a model also answers to, as ollama's `llama3` stands for `llama3:latest`:
 * `OWNER/REPO:TAG` is also `OWNER/REPO`, `REPO:TAG` and `REPO`; `OWNER/REPO/FILE.gguf` is also its
 * file's stem; a file in the folder is its stem and its name. Matched without regard to case (the
 * Hub's names and tags are case-insensitive); only a unique match counts.
 */
function aliases(m: StoredModel): string[] {
  if (m.kind === 'file') return [m.name, `${m.name}.gguf`]
  const {repo, tag} = m.manifest!.source
  const short = repo.split('/')[1]!
  const stem = m.path
    .split(sep)
    .at(-1)!
    .replace(SHARD_SUFFIX, '')
    .replace(/\.gguf$/i, '')
  return [m.name, repo, short, ...(tag ? [`${short}:${tag}`] : [stem])]
}

/**
 * The stored model a name means: the exact name first, else the one model whose short names include
 * it; undefined when none does. Two models answering the same short name are refused, listing both.
 */
export async function findStoredModel(dir: string, name: string): Promise<StoredModel | undefined> {
  const models = await listStoredModels(dir)
  const exact = models.filter((m) => m.name === name)
  const lower = name.toLowerCase()
  // Two loose files can share a name (foo.gguf and the split set foo-00001-of-00002.gguf): that is ambiguous too.
  const hits = exact.length > 0 ? exact : models.filter((m) => aliases(m).some((a) => a.toLowerCase() === lower))
  if (hits.length > 1)
    throw new RunnerError(
      'MODEL_AMBIGUOUS',
      `${JSON.stringify(printable(name, {max: 120}))} names ${hits.length} models: ${hits.map((m) => printable(m.name)).join(', ')}; give the full name`,
      ExitCode.usage,
    )
  return hits[0]
}

/**
 * Remove a stored model: its manifest first (from then on it is not a model), then each file that no
 * other manifest still lists, then the folders left empty below the models folder.
 */
export async function removeStoredModel(dir: string, model: StoredModel): Promise<string[]> {
  const others = (await listStoredModels(dir)).filter((m) => m.name !== model.name || m.kind !== model.kind)
  const kept = new Set(others.flatMap((m) => m.files.map((f) => resolve(f))))
  if (model.kind === 'pulled') await removeManifest(dir, model.name)
  const removed: string[] = []
  for (const f of model.files) {
    if (kept.has(resolve(f))) continue
    await unlink(f).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
    removed.push(f)
    await removeEmptyParents(dir, dirname(f))
  }
  return removed
}

async function removeEmptyParents(root: string, from: string): Promise<void> {
  for (let d = resolve(from); d !== resolve(root) && !relative(resolve(root), d).startsWith('..'); d = dirname(d)) {
    // rmdir fails on a folder that still holds anything: that ends the walk.
    if (
      !(await rmdir(d).then(
        () => true,
        () => false,
      ))
    )
      return
  }
}
