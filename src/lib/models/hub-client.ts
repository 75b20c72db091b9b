import {ExitCode, RunnerError} from '../errors.js'
import {printable} from '../util/index.js'
import {safeRelativePath} from './manifest.js'

/**
 * The few Hugging Face Hub calls a pull needs, as llama.cpp's downloader makes them (common/hf-cache.cpp):
 * the main branch's commit (`api/models/OWNER/REPO/refs`), the files at that commit with their LFS
 * sha256 (`api/models/OWNER/REPO/tree/COMMIT?recursive=true`), and each file's resolve address
 * (`OWNER/REPO/resolve/COMMIT/PATH`), whose HEAD answers `x-linked-size` and `x-linked-etag` (the
 * LFS oid) and redirects to the CDN that serves the bytes with `Range`.
 */
export interface HubFile {
  readonly path: string
  readonly bytes: number
  /** sha256 of an LFS file, or the git blob id (sha1) of a file kept in git. */
  readonly digest: {readonly algorithm: 'sha256' | 'git-sha1'; readonly hex: string}
}

export interface HubHead {
  readonly bytes: number
  /** The digest the resolve endpoint reports (x-linked-etag for LFS, else the ETag), unquoted. */
  readonly etag?: string
  /** Where the bytes are (the CDN), absolute. */
  readonly location: string
}

/** The Hub the environment names: HF_ENDPOINT (as huggingface_hub and llama.cpp read it), else huggingface.co. */
export function hubEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  const e = (env.HF_ENDPOINT ?? '').trim() || 'https://huggingface.co'
  let url: URL
  try {
    url = new URL(e)
  } catch {
    throw new RunnerError('HUB_BAD_ENDPOINT', `HF_ENDPOINT ${JSON.stringify(printable(e, {max: 200}))} is not a URL`, ExitCode.usage)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new RunnerError(
      'HUB_BAD_ENDPOINT',
      `HF_ENDPOINT ${JSON.stringify(printable(e, {max: 200}))}: only http(s) addresses`,
      ExitCode.usage,
    )
  return url.href.endsWith('/') ? url.href : `${url.href}/`
}

/** The longest JSON answer read from the Hub (a tree listing of thousands of files is a few MiB). */
const MAX_JSON_BYTES = 64 << 20
const MAX_REDIRECTS = 5
const MAX_TREE_PAGES = 100

export class HubClient {
  constructor(
    readonly endpoint: string,
    private readonly token: string | undefined,
    private readonly signal?: AbortSignal,
  ) {}

  /** True once the pull was interrupted (a failure after that is the interruption, not the network). */
  get aborted(): boolean {
    return this.signal?.aborted === true
  }

  /** The commit the main branch points at (every file is then resolved at that commit, so a push mid-pull cannot mix versions). */
  async mainCommit(repo: string): Promise<string> {
    const refs = (await this.json(`api/models/${repo}/refs`, `repository ${repo}`)) as {
      branches?: {name?: unknown; targetCommit?: unknown}[]
    }
    const branches = Array.isArray(refs?.branches) ? refs.branches : []
    const main = branches.find((b) => b?.name === 'main') ?? branches[0]
    const commit = main?.targetCommit
    if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit))
      throw new RunnerError('HUB_BAD_ANSWER', `the Hub's refs of ${repo} name no commit for the main branch`, ExitCode.failure)
    return commit
  }

  /** Every file of the repository at a commit (the listing's pages followed through its Link header). */
  async files(repo: string, commit: string): Promise<HubFile[]> {
    const out: HubFile[] = []
    let next: string | undefined = `${this.endpoint}api/models/${repo}/tree/${commit}?recursive=true`
    for (let page = 0; next && page < MAX_TREE_PAGES; page++) {
      const res = await this.request(next, 'GET', `repository ${repo}`)
      const items = await readJson(res, next)
      if (!Array.isArray(items)) throw new RunnerError('HUB_BAD_ANSWER', `the Hub's file list of ${repo} is not a list`, ExitCode.failure)
      for (const item of items) {
        const f = hubFileOf(item)
        if (f) out.push(f)
      }
      next = nextLink(res.headers.get('link'), next)
    }
    return out
  }

  /** HEAD on the file's resolve address: its size, the digest the Hub reports, and the CDN address of its bytes. */
  async head(repo: string, commit: string, path: string): Promise<HubHead> {
    let url = this.resolveUrl(repo, commit, path)
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const res = await this.request(url, 'HEAD', `${repo}/${path}`)
      const linked = res.headers.get('x-linked-size')
      const etag = unquoteEtag(res.headers.get('x-linked-etag') ?? res.headers.get('etag'))
      if (res.status >= 300 && res.status < 400) {
        const location = new URL(res.headers.get('location') ?? '', url).href
        // The Hub's 302 already carries the LFS headers: the CDN is asked only for the bytes.
        if (linked !== null) return {bytes: headerNumber(linked), etag, location}
        url = location
        continue
      }
      return {bytes: headerNumber(linked ?? res.headers.get('content-length')), etag, location: url}
    }
    throw new RunnerError('HUB_BAD_ANSWER', `more than ${MAX_REDIRECTS} redirects resolving ${repo}/${path}`, ExitCode.failure)
  }

  resolveUrl(repo: string, commit: string, path: string): string {
    return `${this.endpoint}${repo}/resolve/${commit}/${path.split('/').map(encodeURIComponent).join('/')}`
  }

  /**
   * GET a file's bytes from `start` (a Range request when start > 0), following redirects by hand so
   * the token goes only to the Hub's own origin, never to a CDN. The answer's status says whether the
   * range was honoured (206) or the whole file comes (200).
   */
  async getBytes(url: string, start: number, what: string): Promise<Response> {
    let target = url
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const res = await this.request(target, 'GET', what, start > 0 ? {range: `bytes=${start}-`} : {}, [416])
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel()
        target = new URL(res.headers.get('location') ?? '', target).href
        continue
      }
      return res
    }
    throw new RunnerError('HUB_BAD_ANSWER', `more than ${MAX_REDIRECTS} redirects fetching ${what}`, ExitCode.failure)
  }

  private async json(path: string, what: string): Promise<unknown> {
    const url = `${this.endpoint}${path}`
    return readJson(await this.request(url, 'GET', what), url)
  }

  private async request(
    url: string,
    method: string,
    what: string,
    headers: Record<string, string> = {},
    okStatuses: number[] = [],
  ): Promise<Response> {
    const sameOrigin = new URL(url).origin === new URL(this.endpoint).origin
    const all: Record<string, string> = {'user-agent': 'runner', ...headers}
    if (this.token && sameOrigin) all.authorization = `Bearer ${this.token}`
    let res: Response
    try {
      res = await fetch(url, {method, headers: all, redirect: 'manual', signal: this.signal})
    } catch (error) {
      if (this.signal?.aborted) throw error
      const cause = (error as {cause?: {code?: string; message?: string}}).cause
      throw new RunnerError(
        'HUB_UNREACHABLE',
        `cannot reach ${printable(new URL(url).origin)} (${printable(cause?.code ?? cause?.message ?? String(error), {max: 200})}); ` +
          'HF_ENDPOINT names another Hub or mirror',
        ExitCode.failure,
      )
    }
    if (res.status < 400 || okStatuses.includes(res.status)) return res
    await res.body?.cancel().catch(() => {})
    throw hubHttpError(res, what, Boolean(this.token))
  }
}

/** What a failed Hub answer means for the user, by status (the Hub's own message, made printable, after it). */
function hubHttpError(res: Response, what: string, hadToken: boolean): RunnerError {
  const said = res.headers.get('x-error-message')
  const tail = said ? `: ${printable(said, {max: 300})}` : ''
  const table: Record<number, [string, string, number]> = {
    401: [
      'HUB_UNAUTHORIZED',
      hadToken
        ? `the Hub refused the token in HF_TOKEN for ${what} (401)${tail}`
        : res.headers.get('x-error-code') === 'RepoNotFound'
          ? `the Hub has no ${what} (401)${tail}; a private repository needs HF_TOKEN`
          : `${what} needs a token (401, gated or private)${tail}; set HF_TOKEN to a Hugging Face access token`,
      ExitCode.failure,
    ],
    403: [
      'HUB_FORBIDDEN',
      `the Hub refused access to ${what} (403)${tail}; a gated model's terms must be accepted on its page first`,
      ExitCode.failure,
    ],
    404: ['HUB_NOT_FOUND', `the Hub has no ${what} (404)${tail}`, ExitCode.invalidModel],
    429: [
      'HUB_RATE_LIMITED',
      `the Hub is rate-limiting requests (429)${tail}; wait and run the same pull again (it resumes)`,
      ExitCode.failure,
    ],
  }
  const [code, message, exit] = table[res.status] ?? [
    'HUB_HTTP_ERROR',
    `the Hub answered ${res.status} for ${what}${tail}; run the same pull again to resume`,
    ExitCode.failure,
  ]
  return new RunnerError(code, printable(message, {max: 1000}), exit as (typeof ExitCode)[keyof typeof ExitCode])
}

async function readJson(res: Response, url: string): Promise<unknown> {
  const declared = Number(res.headers.get('content-length') ?? 0)
  if (declared > MAX_JSON_BYTES)
    throw new RunnerError('HUB_BAD_ANSWER', `the Hub's answer for ${printable(url)} is ${declared} bytes`, ExitCode.failure)
  const chunks: Uint8Array[] = []
  let n = 0
  for await (const c of res.body ?? []) {
    n += (c as Uint8Array).length
    if (n > MAX_JSON_BYTES)
      throw new RunnerError('HUB_BAD_ANSWER', `the Hub's answer for ${printable(url)} is over ${MAX_JSON_BYTES} bytes`, ExitCode.failure)
    chunks.push(c as Uint8Array)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new RunnerError('HUB_BAD_ANSWER', `the Hub's answer for ${printable(url)} is not JSON`, ExitCode.failure)
  }
}

/** One entry of a tree listing, or undefined for folders and entries we cannot trust (a path leaving the repository, a bad oid). */
function hubFileOf(item: unknown): HubFile | undefined {
  const i = item as {type?: unknown; path?: unknown; size?: unknown; oid?: unknown; lfs?: {oid?: unknown; size?: unknown}}
  if (i?.type !== 'file' || typeof i.path !== 'string' || !safeRelativePath(i.path)) return undefined
  if (i.lfs && typeof i.lfs === 'object') {
    const bytes = Number(i.lfs.size ?? i.size)
    if (typeof i.lfs.oid !== 'string' || !/^[0-9a-f]{64}$/.test(i.lfs.oid) || !Number.isSafeInteger(bytes) || bytes < 0) return undefined
    return {path: i.path, bytes, digest: {algorithm: 'sha256', hex: i.lfs.oid}}
  }
  const bytes = Number(i.size)
  if (typeof i.oid !== 'string' || !/^[0-9a-f]{40}$/.test(i.oid) || !Number.isSafeInteger(bytes) || bytes < 0) return undefined
  return {path: i.path, bytes, digest: {algorithm: 'git-sha1', hex: i.oid}}
}

/** A size header's number; NaN (unknown) when it is absent or empty, which Number() would read as 0. */
function headerNumber(value: string | null): number {
  return value === null || value.trim() === '' ? Number.NaN : Number(value)
}

/** `W/"abc"` and `"abc"` → `abc`. */
function unquoteEtag(etag: string | null): string | undefined {
  return etag === null ? undefined : etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1')
}

/** The `rel="next"` address of an RFC 8288 Link header, resolved against the page it came with. */
function nextLink(link: string | null, base: string): string | undefined {
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null
  return m ? new URL(m[1]!, base).href : undefined
}
