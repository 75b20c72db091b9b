/**
 * A local stand-in for the Hugging Face Hub, on loopback, answering the calls `runner pull` makes as
 * the Hub documents and llama.cpp's downloader relies on them (common/hf-cache.cpp, common/download.cpp):
 * - GET /api/models/OWNER/REPO/refs → {branches: [{name: 'main', ref, targetCommit}], tags: [], converts: []}
 * - GET /api/models/OWNER/REPO/tree/COMMIT?recursive=true → [{type: 'file', oid, size, path, lfs?: {oid, size, pointerSize}}]
 *   (paged with an RFC 8288 Link header when `pageSize` is set, as the Hub pages long listings)
 * - HEAD|GET /OWNER/REPO/resolve/COMMIT/PATH → for an LFS file 302 to the CDN with x-repo-commit,
 *   x-linked-size, x-linked-etag (the quoted sha256) and a weak ETag; for a git file 200 with ETag the blob id
 * - GET /cdn/SHA256 on a second server (another origin, as the Hub's CDN is) → the bytes, honouring
 *   `Range: bytes=N-` with 206 and Content-Range (Accept-Ranges: bytes)
 * - errors as the Hub sends them: 401 with x-error-code GatedRepo / RepoNotFound and x-error-message.
 * Content is real GGUF files; their sha256 is computed here with node:crypto, as `sha256sum` would.
 */
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface FakeFile {
  readonly path: string
  readonly bytes: Buffer
  /** Kept in git rather than LFS (the listing gives the blob id; resolve answers 200). */
  readonly git?: boolean
}

export interface FakeRepo {
  readonly repo: string
  readonly files: readonly FakeFile[]
  /** Requests without `Authorization: Bearer <token>` get 401 (a gated or private repository). */
  readonly token?: string
}

export interface RecordedRequest {
  readonly host: 'hub' | 'cdn'
  readonly method: string
  readonly path: string
  readonly range?: string
  readonly authorization?: string
}

export interface FakeHubOptions {
  /** Cut the connection after this many bytes of a CDN body (once per CDN request while > 0); resume tests. */
  cutAfterBytes?: number
  /** Cut only the body of the blob with this sha256 (the others are served whole). */
  cutBlob?: string
  /** Serve these bytes instead of the file's (the digest stays the real one): a corrupting mirror. */
  corrupt?: boolean
  /** Answer 200 with the whole file to a Range request (a server that ignores ranges). */
  ignoreRange?: boolean
  /** Milliseconds to wait between 64 KiB pieces of a CDN body (a slow download to interrupt). */
  throttleMs?: number
  /** Items per page of a tree listing (the Link header pages the rest). */
  pageSize?: number
  /** What the resolve address reports as x-linked-etag instead of the real sha256. */
  wrongEtag?: string
}

export const COMMIT = '0123456789abcdef0123456789abcdef01234567'

export function gitBlobSha1(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex')
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

export class FakeHub {
  readonly requests: RecordedRequest[] = []
  private server: Server | undefined
  private cdn: Server | undefined
  private blobs = new Map<string, Buffer>()

  constructor(
    private readonly repos: readonly FakeRepo[],
    readonly options: FakeHubOptions = {},
  ) {
    for (const r of repos) for (const f of r.files) this.blobs.set(sha256(f.bytes), f.bytes)
  }

  static fileFrom(path: string, source: string): FakeFile {
    return {path, bytes: readFileSync(source)}
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res))
    this.cdn = createServer((req, res) => void this.handle(req, res))
    for (const s of [this.server, this.cdn]) await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
    return this.url
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`
  }

  get cdnUrl(): string {
    return `http://127.0.0.1:${(this.cdn!.address() as AddressInfo).port}`
  }

  async stop(): Promise<void> {
    for (const s of [this.server, this.cdn]) {
      s?.closeAllConnections()
      await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()))
    }
  }

  private error(res: ServerResponse, status: number, code: string, message: string): void {
    res.writeHead(status, {'content-type': 'application/json', 'x-error-code': code, 'x-error-message': message})
    res.end(JSON.stringify({error: message}))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x')
    const port = req.socket.localPort
    const host = port === (this.cdn!.address() as AddressInfo).port ? 'cdn' : 'hub'
    this.requests.push({
      host,
      method: req.method ?? '',
      path: url.pathname,
      range: req.headers.range,
      authorization: req.headers.authorization,
    })
    if (host === 'cdn' && !url.pathname.startsWith('/cdn/')) return this.error(res, 404, 'EntryNotFound', 'not found')
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(url.pathname)
    if (cdn) return this.serveBytes(req, res, cdn[1]!)
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(refs|tree\/([^/]+))$/.exec(url.pathname)
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname)
    const repoName = api?.[1] ?? resolve?.[1]
    const repo = this.repos.find((r) => r.repo === repoName)
    if (!repo) return this.error(res, 401, 'RepoNotFound', 'Repository not found')
    if (repo.token && req.headers.authorization !== `Bearer ${repo.token}`)
      return this.error(
        res,
        401,
        'GatedRepo',
        `Access to model ${repo.repo} is restricted. You must have access to it and be authenticated to access it.`,
      )
    if (api?.[2] === 'refs') {
      res.writeHead(200, {'content-type': 'application/json'})
      return void res.end(
        JSON.stringify({branches: [{name: 'main', ref: 'refs/heads/main', targetCommit: COMMIT}], tags: [], converts: []}),
      )
    }
    if (api) {
      if (api[3] !== COMMIT) return this.error(res, 404, 'RevisionNotFound', `Invalid rev id: ${api[3]}`)
      const items = repo.files.map((f) =>
        f.git
          ? {type: 'file', oid: gitBlobSha1(f.bytes), size: f.bytes.length, path: f.path}
          : {
              type: 'file',
              oid: gitBlobSha1(
                Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256(f.bytes)}\nsize ${f.bytes.length}\n`),
              ),
              size: f.bytes.length,
              path: f.path,
              lfs: {oid: sha256(f.bytes), size: f.bytes.length, pointerSize: 134},
            },
      )
      const folders = [...new Set(repo.files.flatMap((f) => (f.path.includes('/') ? [f.path.split('/')[0]!] : [])))].map((p) => ({
        type: 'directory',
        oid: COMMIT,
        size: 0,
        path: p,
      }))
      const all = [...folders, ...items]
      const size = this.options.pageSize ?? all.length
      const start = Number(url.searchParams.get('cursor') ?? 0)
      const headers: Record<string, string> = {'content-type': 'application/json'}
      if (start + size < all.length) headers.link = `<${url.pathname}?recursive=true&cursor=${start + size}>; rel="next"`
      res.writeHead(200, headers)
      return void res.end(JSON.stringify(all.slice(start, start + size)))
    }
    if (resolve) {
      const file = repo.files.find((f) => f.path === decodeURIComponent(resolve[3]!))
      if (resolve[2] !== COMMIT && resolve[2] !== 'main') return this.error(res, 404, 'RevisionNotFound', 'Invalid rev id')
      if (!file) return this.error(res, 404, 'EntryNotFound', `${resolve[3]} does not exist on "main"`)
      if (file.git) {
        res.writeHead(200, {etag: `"${gitBlobSha1(file.bytes)}"`, 'content-length': String(file.bytes.length), 'x-repo-commit': COMMIT})
        return void res.end(req.method === 'HEAD' ? undefined : file.bytes)
      }
      const sha = sha256(file.bytes)
      res.writeHead(302, {
        location: `${this.cdnUrl}/cdn/${sha}?X-Amz-Signature=fake`,
        'x-repo-commit': COMMIT,
        'x-linked-size': String(file.bytes.length),
        'x-linked-etag': `"${this.options.wrongEtag ?? sha}"`,
        etag: `W/"${sha.slice(0, 20)}"`,
      })
      return void res.end()
    }
    this.error(res, 404, 'EntryNotFound', 'not found')
  }

  private async serveBytes(req: IncomingMessage, res: ServerResponse, sha: string): Promise<void> {
    let bytes = this.blobs.get(sha)
    if (!bytes) return this.error(res, 404, 'EntryNotFound', 'no such object')
    if (this.options.corrupt) {
      bytes = Buffer.from(bytes)
      bytes[bytes.length >> 1]! ^= 0xff
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    let start = 0
    if (range && !this.options.ignoreRange) {
      start = Number(range[1])
      if (start >= bytes.length) {
        res.writeHead(416, {'content-range': `bytes */${bytes.length}`})
        return void res.end()
      }
      res.writeHead(206, {
        'accept-ranges': 'bytes',
        'content-range': `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
        'content-length': String(bytes.length - start),
      })
    } else {
      res.writeHead(200, {'accept-ranges': 'bytes', 'content-length': String(bytes.length)})
    }
    const cut = this.options.cutBlob === undefined || this.options.cutBlob === sha ? (this.options.cutAfterBytes ?? 0) : 0
    let sent = 0
    for (let at = start; at < bytes.length; at += 65536) {
      const piece = bytes.subarray(at, Math.min(at + 65536, bytes.length))
      if (cut > 0 && sent + piece.length > cut) {
        res.write(piece.subarray(0, cut - sent))
        await new Promise((r) => setTimeout(r, 50))
        req.socket.destroy()
        return
      }
      if (!res.write(piece)) await new Promise((r) => res.once('drain', r))
      sent += piece.length
      if (this.options.throttleMs) await new Promise((r) => setTimeout(r, this.options.throttleMs))
      if (res.destroyed) return
    }
    res.end()
  }
}
