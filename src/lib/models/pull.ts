import {stat} from 'node:fs/promises'
import {join} from 'node:path'

import {ExitCode, RunnerError} from '../errors.js'
import {formatBytes, printable} from '../util/index.js'
import {downloadFile, fileDigest} from './download.js'
import {HubClient, type HubFile} from './hub-client.js'
import {hasHubPrefix, type HubRef, parseHubRef} from './hub-ref.js'
import {type ModelManifest, readManifests, writeManifest} from './manifest.js'
import {HUB_FOLDER} from './models-dir.js'

/** What a pull is about to fetch, reported before the first byte. */
export interface PullPlan {
  readonly name: string
  readonly repo: string
  readonly commit: string
  readonly files: readonly HubFile[]
  readonly bytes: number
}

export interface PullOptions {
  readonly dir: string
  readonly endpoint: string
  readonly token?: string
  readonly signal?: AbortSignal
  readonly onPlan?: (plan: PullPlan) => void
  /** Bytes of the whole model on disk so far (resumed bytes included), and the total. */
  readonly onBytes?: (done: number, total: number) => void
}

export interface PullResult {
  readonly manifest: ModelManifest
  /** The path -m opens. */
  readonly path: string
  /** True when every file was already there with the listed digest: nothing was downloaded. */
  readonly upToDate: boolean
  /** Bytes that were already on disk from an interrupted pull and not downloaded again. */
  readonly resumedBytes: number
}

/** llama.cpp's default when no tag is given (common/download.cpp find_best_model): Q4_K_M, else Q8_0, else the first model. */
const DEFAULT_TAGS = ['Q4_K_M', 'Q8_0']
/** Files that are not a model to run (projectors, importance matrices, draft heads), as llama.cpp skips them. */
const NOT_A_MODEL = ['mmproj', 'imatrix', 'mtp-', 'eagle3-', 'dflash-', 'dspark-']
const SPLIT = /^(.+)-(\d{5})-of-(\d{5})$/i

interface SplitInfo {
  readonly prefix: string
  readonly tag: string
  readonly index: number
  readonly count: number
}

/** llama.cpp's reading of a GGUF file name: its split set (`-00001-of-00003`) and its quantization tag (`-Q4_K_M`, `.Q8_0`). */
function splitInfo(path: string): SplitInfo | undefined {
  if (!/\.gguf$/i.test(path)) return undefined
  let prefix = path.replace(/\.gguf$/i, '')
  let index = 1
  let count = 1
  const m = SPLIT.exec(prefix)
  if (m) {
    prefix = m[1]!
    index = Number(m[2])
    count = Number(m[3])
  }
  const tag = /[-.]([A-Z0-9_]+)$/i.exec(prefix)?.[1]?.toUpperCase() ?? ''
  return {prefix, tag, index, count}
}

function isModelFile(path: string): boolean {
  const name = path.split('/').at(-1)!
  return /\.gguf$/i.test(name) && !NOT_A_MODEL.some((x) => name.includes(x))
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** The file a reference means, chosen as llama.cpp's -hf chooses it, then every shard of its split set. */
export function chooseFiles(files: readonly HubFile[], ref: HubRef): {files: HubFile[]; tag?: string} {
  const ggufs = files.filter((f) => /\.gguf$/i.test(f.path))
  const available = () =>
    ggufs.length === 0
      ? 'it has no .gguf file'
      : `its GGUF files: ${ggufs
          .slice(0, 20)
          .map((f) => printable(f.path, {max: 120}))
          .join(', ')}${ggufs.length > 20 ? `, and ${ggufs.length - 20} more` : ''}`
  let primary: HubFile | undefined
  /** The tag that chose the file (the one asked for, or the default that matched): the model's name says what was asked, not what the file name ends with. */
  let matched: string | undefined
  if (ref.file !== undefined) {
    primary = files.find((f) => f.path === ref.file)
    if (!primary)
      throw new RunnerError('HUB_NO_SUCH_FILE', `${ref.repo} has no file ${printable(ref.file)}; ${available()}`, ExitCode.invalidModel)
  } else {
    const firstShard = (f: HubFile) => isModelFile(f.path) && splitInfo(f.path)!.index === 1
    for (const t of ref.tag ? [ref.tag] : DEFAULT_TAGS) {
      const pattern = new RegExp(`${escapeRegExp(t)}[.-]`, 'i')
      primary = files.find((f) => firstShard(f) && pattern.test(f.path))
      if (primary) {
        matched = t.toUpperCase()
        break
      }
    }
    if (!primary && !ref.tag) primary = files.find(firstShard)
    if (!primary)
      throw new RunnerError(
        'HUB_NO_SUCH_TAG',
        ref.tag
          ? `${ref.repo} has no model file tagged ${printable(ref.tag)}; ${available()}`
          : `${ref.repo} has no GGUF model file; ${available()}`,
        ExitCode.invalidModel,
      )
  }
  const info = splitInfo(primary.path)
  const tag = ref.file === undefined ? (matched ?? (info?.tag || undefined)) : undefined
  if (!info || info.count <= 1) return {files: [primary], tag}
  const shards: HubFile[] = []
  for (let i = 1; i <= info.count; i++) {
    const shard = files.find((f) => {
      const s = splitInfo(f.path)
      return s !== undefined && s.prefix === info.prefix && s.count === info.count && s.index === i
    })
    if (!shard)
      throw new RunnerError(
        'HUB_SPLIT_INCOMPLETE',
        `${printable(primary.path)} is shard 1 of ${info.count}, but shard ${i} is not in ${ref.repo}`,
        ExitCode.invalidModel,
      )
    shards.push(shard)
  }
  return {files: shards, tag}
}

/** Where a file of a repository lives in the models folder: hf.co/OWNER/REPO/PATH. */
export function storedPath(dir: string, repo: string, path: string): string {
  return join(dir, HUB_FOLDER, ...repo.split('/'), ...path.split('/'))
}

/**
 * `runner pull`: resolve the reference at the main branch's commit, choose its files, check the
 * digest each resolve address reports against the listing's, download each (resuming a previous
 * try), verify, publish, and write the manifest last. A file already there with the
 * listed digest is not downloaded again.
 */
export async function pullModel(text: string, options: PullOptions): Promise<PullResult> {
  // Written without a prefix it must still parse as a Hub reference (the prefix makes parseHubRef refuse, not pass).
  const ref = parseHubRef(hasHubPrefix(text) ? text : `hf.co/${text}`)!
  const client = new HubClient(options.endpoint, options.token, options.signal)
  const commit = await client.mainCommit(ref.repo)
  const chosen = chooseFiles(await client.files(ref.repo, commit), ref)
  const manifests = await readManifests(options.dir)
  const asked = ref.file !== undefined ? ref.name : chosen.tag ? `${ref.repo}:${chosen.tag}` : ref.repo
  // The Hub's names ignore case: a model pulled as TheBloke/X and again as thebloke/x is one model, in one place.
  const same = manifests.find((m) => m.name.toLowerCase() === asked.toLowerCase())
  const name = same?.name ?? asked
  const repoPath = same?.source.repo ?? ref.repo
  const total = chosen.files.reduce((a, f) => a + f.bytes, 0)
  options.onPlan?.({name, repo: ref.repo, commit, files: chosen.files, bytes: total})

  // A file some manifest already lists with the same digest, and whose size on disk is that one, is not fetched again.
  const known = new Map(manifests.flatMap((m) => m.files.map((f) => [f.path, f.digest.hex] as const)))
  const relPath = (f: HubFile) => [HUB_FOLDER, repoPath, f.path].join('/')
  const paths = chosen.files.map((f) => storedPath(options.dir, repoPath, f.path))
  let before = 0
  let resumedBytes = 0
  let fetched = 0
  for (const [i, file] of chosen.files.entries()) {
    const onDisk = await sizeOf(paths[i]!)
    const listed = known.get(relPath(file)) === file.digest.hex
    // A shard finished by an interrupted pull is in place but in no manifest yet: its bytes are hashed, not fetched again.
    if (onDisk === file.bytes && (listed || (await fileDigest(paths[i]!, file)) === file.digest.hex)) {
      if (!listed) resumedBytes += file.bytes
      before += file.bytes
      options.onBytes?.(before, total)
      continue
    }
    const head = await client.head(ref.repo, commit, file.path)
    // The resolve address and the listing are two answers of the Hub: they must agree before a byte is kept.
    if (head.etag !== undefined && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(head.etag) && head.etag !== file.digest.hex)
      throw new RunnerError(
        'HUB_DIGEST_DISAGREES',
        `${printable(file.path)}: the Hub's listing gives ${file.digest.hex}, its resolve address ${head.etag}`,
        ExitCode.verificationFailed,
      )
    if (Number.isFinite(head.bytes) && head.bytes !== file.bytes)
      throw new RunnerError(
        'HUB_SIZE_DISAGREES',
        `${printable(file.path)}: the Hub's listing gives ${file.bytes} bytes, its resolve address ${head.bytes}`,
        ExitCode.verificationFailed,
      )
    const {resumedFrom} = await downloadFile(client, head.location, file, paths[i]!, (n) => options.onBytes?.(before + n, total))
    resumedBytes += resumedFrom
    before += file.bytes
    fetched++
  }
  const manifest: ModelManifest = {
    schema: 1,
    name,
    source: {endpoint: options.endpoint, repo: repoPath, commit, ...(chosen.tag ? {tag: chosen.tag} : {})},
    files: chosen.files.map((f) => ({path: relPath(f), bytes: f.bytes, digest: f.digest})),
    pulledAt: new Date().toISOString(),
  }
  await writeManifest(options.dir, manifest)
  return {manifest, path: paths[0]!, upToDate: fetched === 0 && resumedBytes === 0, resumedBytes}
}

/** The line a finished pull prints (stderr), naming what the user runs next. */
export function pullSummary(r: PullResult): string {
  const files = r.manifest.files
  const resumed = r.resumedBytes > 0 ? `, resumed after ${formatBytes(r.resumedBytes)}` : ''
  return (
    `${r.upToDate ? 'up to date' : 'pulled'} ${printable(r.manifest.name)} (${files.length} file${files.length > 1 ? 's' : ''}, ` +
    `${formatBytes(files.reduce((a, f) => a + f.bytes, 0))}, sha256 checked${resumed})\n` +
    `run it with: runner run ${printable(r.manifest.name)} -p TEXT`
  )
}

/** What `runner pull --json` prints. */
export function pullJson(r: PullResult): unknown {
  return {
    name: r.manifest.name,
    path: r.path,
    upToDate: r.upToDate,
    resumedBytes: r.resumedBytes,
    source: r.manifest.source,
    files: r.manifest.files,
  }
}

/** Ctrl+C during a pull: what is kept, and that the same pull resumes (exit 130). */
export function pullInterrupted(done: number, plan: PullPlan | undefined): RunnerError {
  return new RunnerError(
    'PULL_INTERRUPTED',
    plan
      ? `interrupted: ${formatBytes(done)} of ${formatBytes(plan.bytes)} kept; run the same pull again to resume`
      : 'interrupted before the download began',
    ExitCode.interrupted,
  )
}

async function sizeOf(path: string): Promise<number | undefined> {
  const s = await stat(path).catch(() => undefined)
  return s?.isFile() ? s.size : undefined
}
