import {mkdir, readdir, readFile, unlink} from 'node:fs/promises'
import {join} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {printable, writeFileAtomic} from '../util/index.js'
import {MANIFESTS_FOLDER} from './models-dir.js'

/**
 * What `runner pull` leaves beside a model's files: where they came from and what they must hash
 * to. A model counts as pulled only once its manifest is written, and the manifest is written last,
 * atomically, after every file is verified and renamed into place: a crash at any point leaves
 * either no model or a whole one.
 */
export interface ModelManifest {
  readonly schema: 1
  /** The name it is known by (`OWNER/REPO:TAG` or `OWNER/REPO/FILE.gguf`): what -m, list and rm take. */
  readonly name: string
  readonly source: {
    /** The Hub it came from (HF_ENDPOINT at pull time). */
    readonly endpoint: string
    readonly repo: string
    /** The commit the files were resolved at (the Hub's x-repo-commit / refs). */
    readonly commit: string
    readonly tag?: string
  }
  /** The files in load order (the first is what -m opens; the rest are its shards). */
  readonly files: readonly ManifestFile[]
  readonly pulledAt: string
}

export interface ManifestFile {
  /** Path below the models folder, `/`-separated. */
  readonly path: string
  readonly bytes: number
  /** The LFS oid the Hub reported (sha256), or the git blob id (sha1) of a file kept outside LFS. */
  readonly digest: {readonly algorithm: 'sha256' | 'git-sha1'; readonly hex: string}
}

/** A manifest's file name: the model name with every character that is not safe in a file name escaped. */
export function manifestFileName(name: string): string {
  return `${encodeURIComponent(name)}.json`
}

/** Every manifest in the models folder; a file that is not one of ours is skipped, never fatal. */
export async function readManifests(dir: string): Promise<ModelManifest[]> {
  const folder = join(dir, MANIFESTS_FOLDER)
  const names = await readdir(folder).catch(() => [] as string[])
  const out: ModelManifest[] = []
  for (const n of names.filter((x) => x.endsWith('.json')).sort()) {
    const m = parseManifest(await readFile(join(folder, n), 'utf8').catch(() => ''))
    if (m && manifestFileName(m.name) === n) out.push(m)
  }
  return out
}

export async function writeManifest(dir: string, manifest: ModelManifest): Promise<void> {
  await mkdir(join(dir, MANIFESTS_FOLDER), {recursive: true})
  await writeFileAtomic(join(dir, MANIFESTS_FOLDER, manifestFileName(manifest.name)), `${JSON.stringify(manifest, null, 2)}\n`)
}

export async function removeManifest(dir: string, name: string): Promise<void> {
  await unlink(join(dir, MANIFESTS_FOLDER, manifestFileName(name)))
}

const HEX = {sha256: /^[0-9a-f]{64}$/, 'git-sha1': /^[0-9a-f]{40}$/} as const

/** A manifest read back, or undefined when the text is not one (hand-edited, truncated, foreign). */
export function parseManifest(text: string): ModelManifest | undefined {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return undefined
  }
  const m = v as Partial<ModelManifest>
  const fileOk = (f: Partial<ManifestFile>) =>
    typeof f?.path === 'string' &&
    safeRelativePath(f.path) &&
    Number.isSafeInteger(f.bytes) &&
    (f.bytes ?? -1) >= 0 &&
    (f.digest?.algorithm === 'sha256' || f.digest?.algorithm === 'git-sha1') &&
    HEX[f.digest.algorithm].test(f.digest.hex)
  const ok =
    m?.schema === 1 &&
    typeof m.name === 'string' &&
    typeof m.source?.repo === 'string' &&
    typeof m.source.commit === 'string' &&
    typeof m.source.endpoint === 'string' &&
    Array.isArray(m.files) &&
    m.files.length > 0 &&
    m.files.every(fileOk) &&
    typeof m.pulledAt === 'string'
  return ok ? (m as ModelManifest) : undefined
}

/** A `/`-separated path that stays below its folder: no empty, `.` or `..` segment, no absolute start, no controls. */
export function safeRelativePath(path: string): boolean {
  return path.split('/').every((p) => p !== '' && p !== '.' && p !== '..' && !UNSAFE_IN_NAME.test(p)) && !/^[A-Za-z]:/.test(path)
}

/** A backslash (a separator on Windows) or a control character. */
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const UNSAFE_IN_NAME = /[\\\u0000-\u001F\u007F]/

/** The error for a model name that no manifest or file answers to. */
export function unknownModel(name: string, dir: string, flag: string, hubName?: string): RunnerError {
  const pull = hubName
    ? `\`runner pull ${printable(hubName, {max: 120})}\` fetches it`
    : '`runner pull OWNER/REPO[:QUANT]` fetches one from the Hugging Face Hub'
  return new RunnerError(
    'MODEL_NOT_FOUND',
    `${flag} ${JSON.stringify(printable(name, {max: 120}))}: no such file, and no model of that name in ${printable(dir)} ` +
      `(\`runner list\` shows the models there; ${pull})`,
    ExitCode.invalidModel,
  )
}
