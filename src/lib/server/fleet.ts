/**
 * The models a server can serve and which of them are loaded: ollama's model juggling. A request
 * names a model; the fleet loads it on first use (requests for a model that is loading wait for
 * it, each bounded by --load-timeout and its own --timeout), holds it while any request uses it,
 * and keeps it loaded for the keep_alive of the request that used it last (the server's
 * --keep-alive unless the request gave one; 0: unload once idle; -1: until the server stops).
 * Loading a model that would pass --max-models or the --models-memory budget first unloads idle
 * models, least recently used first, or waits for one to become idle. A model that fails to load
 * answers the requests that asked for it with the reason and is tried again by the next request;
 * the server and its other models go on.
 */
import {statSync} from 'node:fs'

import {ExitCode, RunnerError} from '../errors.js'
import {type GgufModelFiles, readGgufModel} from '../gguf/index.js'
import {isSignatureRefusal, modelSignatureSummary} from '../signing/index.js'
import {printable} from '../util/index.js'
import {ApiError} from './api-error.js'
import type {Catalog, CatalogEntry} from './catalog.js'
import {type KeepAlive, expiresAt} from './keep-alive.js'
import type {Metrics} from './metrics.js'
import {type HostSettings, type ModelHost, openModelHost} from './model-host.js'
import {modelIds, requireModel} from './model-ids.js'

export type ModelState = 'unloaded' | 'loading' | 'loaded' | 'unloading' | 'failed'

export interface FleetPolicy {
  /** keep_alive when a request gives none. */
  readonly keepAlive: KeepAlive
  /** Most models loaded at once (loading ones included). */
  readonly maxModels: number
  /** Bytes the loaded models may hold together (their files and KV caches); undefined: no budget. */
  readonly memoryBytes?: number
  /** How long a request waits for its model to load (ms). */
  readonly loadTimeoutMs: number
  /** --accept-any-model: an id no model answers to means the first model. */
  readonly acceptAnyModel: boolean
}

export interface Lease {
  readonly host: ModelHost
  /** Milliseconds this request waited for the model to load (0: it was loaded): Ollama's load_duration. */
  readonly loadMs: number
  /** The request is done with the model (idempotent). */
  release(): void
}

export type UnloadReason = 'keep_alive' | 'expired' | 'evicted' | 'request' | 'shutdown'

interface Resident {
  readonly entry: CatalogEntry
  state: ModelState
  host?: ModelHost
  loading?: Promise<ModelHost>
  unloading?: Promise<void>
  /** Past the room check: counts against --max-models and the memory budget while it loads. */
  admitted: boolean
  /** Requests holding (or waiting for) the model. */
  refs: number
  /** Date.now() when the last request let it go. */
  lastUsed: number
  keepAlive: KeepAlive
  timer?: NodeJS.Timeout
  loadedAt?: number
  error?: {readonly message: string; readonly status: number; readonly type: string}
  /** What the last failed load threw (a one-model server's start reports it as it is). */
  cause?: unknown
  /** The files (and bundle) as they were when the load failed: the failure stands until one changes. */
  failedOn?: string
  /** POST .../unload while requests used it: unload once they are done, whatever their keep_alive. */
  unloadRequested?: boolean
}

export class Fleet {
  private readonly residents: Resident[]
  private waiters: Array<() => void> = []
  private closed = false
  private readonly headers = new Map<CatalogEntry, GgufModelFiles | undefined>()

  constructor(
    catalog: Catalog,
    private readonly settings: HostSettings,
    private readonly metrics: Metrics,
    readonly policy: FleetPolicy,
    private readonly log: (line: string) => void = () => {},
  ) {
    this.residents = catalog.entries.map((entry) => ({
      entry,
      state: 'unloaded',
      admitted: false,
      refs: 0,
      lastUsed: 0,
      keepAlive: policy.keepAlive,
    }))
  }

  get entries(): readonly CatalogEntry[] {
    return this.residents.map((r) => r.entry)
  }

  /** The first model: what a request that names none, and the top of /v1/capabilities, mean. */
  get first(): CatalogEntry {
    return this.residents[0]!.entry
  }

  /** Loaded models (for /metrics, /health, /api/ps). */
  loadedHosts(): ModelHost[] {
    return this.residents.flatMap((r) => (r.state === 'loaded' && r.host ? [r.host] : []))
  }

  /** A model's GGUF header (no weights mapped), read once; undefined when the file cannot be read. */
  header(entry: CatalogEntry): GgufModelFiles | undefined {
    if (!this.headers.has(entry)) {
      try {
        this.headers.set(entry, readGgufModel(entry.path))
      } catch {
        this.headers.set(entry, undefined)
      }
    }
    return this.headers.get(entry)
  }

  hostOf(entry: CatalogEntry): ModelHost | undefined {
    const r = this.residentOf(entry)
    return r.state === 'loaded' ? r.host : undefined
  }

  /**
   * The model an id names: an id or alias exactly, then Ollama's `NAME:latest` for NAME; with
   * --accept-any-model anything else is the first model.
   * Undefined when nothing matches.
   */
  find(id: string): CatalogEntry | undefined {
    const ids = (e: CatalogEntry) => [e.id, e.fileId, ...e.aliases]
    const exact = this.residents.find((r) => ids(r.entry).includes(id))
    if (exact) return exact.entry
    const bare = id.endsWith(':latest') ? id.slice(0, -':latest'.length) : undefined
    const tagged = bare !== undefined ? this.residents.find((r) => ids(r.entry).includes(bare)) : undefined
    if (tagged) return tagged.entry
    return this.policy.acceptAnyModel ? this.first : undefined
  }

  /** The model an id names, or 404 model_not_found listing what this server serves. */
  require(id: string): CatalogEntry {
    const entry = this.find(id)
    if (entry) return entry
    // One model: the message that names the flags which would make it answer to `id` (./model-ids.ts).
    if (this.residents.length === 1) requireModel(modelIds(this.first.fileId, this.first.aliases, this.policy.acceptAnyModel), id)
    const served = this.residents.map((r) => `\`${r.entry.id}\``)
    const list = served.length > 8 ? `${served.slice(0, 8).join(', ')} and ${served.length - 8} more` : served.join(', ')
    throw new ApiError(
      404,
      `The model \`${printable(id, {max: 200})}\` does not exist; this server serves ${list} (GET /v1/models). ` +
        'To serve another, restart runner serve with -m ID=FILE (or --models-dir DIR), or with --accept-any-model to send any id to the first model',
      'model',
      'model_not_found',
    )
  }

  /**
   * Hold the model for a request, loading it first when it is not loaded. `keepAlive` (the
   * request's keep_alive) replaces the model's when the request lets it go.
   */
  async acquire(entry: CatalogEntry, o: {signal: AbortSignal; keepAlive?: KeepAlive}): Promise<Lease> {
    if (this.closed) throw new ApiError(503, 'the server is shutting down', null, 'server_shutting_down')
    const r = this.residentOf(entry)
    r.refs++
    clearTimeout(r.timer)
    const t0 = performance.now()
    try {
      const loaded = r.state === 'loaded'
      const host = await this.ready(r, o.signal)
      let released = false
      return {
        host,
        loadMs: loaded ? 0 : performance.now() - t0,
        release: () => {
          if (released) return
          released = true
          this.letGo(r, o.keepAlive)
        },
      }
    } catch (error) {
      this.letGo(r, undefined)
      throw error
    }
  }

  lastLoadError(entry: CatalogEntry): unknown {
    return this.residentOf(entry).cause
  }

  /** Load a model without a request (load at start, ollama's empty generate). */
  async preload(entry: CatalogEntry): Promise<void> {
    const lease = await this.acquire(entry, {signal: new AbortController().signal})
    lease.release()
  }

  /**
   * Unload a model now (POST /v1/models/{id}/unload): at once when idle, else when its last request
   * ends or its load finishes, whatever keep_alive those requests gave. Resolves to the state it is left in.
   */
  async unload(entry: CatalogEntry): Promise<{state: ModelState; inFlight: number}> {
    const r = this.residentOf(entry)
    if (r.state === 'loading' || r.refs > 0) {
      r.unloadRequested = true
      return {state: r.state, inFlight: r.refs}
    }
    await this.unloadResident(r, 'request')
    return {state: r.state, inFlight: 0}
  }

  /** Every model and its state, as /v1/models, /health and /v1/capabilities describe them. */
  describe() {
    return this.residents.map((r) => this.describeResident(r))
  }

  describeEntry(entry: CatalogEntry) {
    return this.describeResident(this.residentOf(entry))
  }

  private describeResident(r: Resident) {
    return {
      id: r.entry.id,
      aliases: [...new Set([...r.entry.aliases, r.entry.fileId])].filter((a) => a !== r.entry.id),
      file: r.entry.path,
      file_bytes: r.entry.bytes,
      state: r.state,
      in_flight: r.refs,
      ...(r.state === 'loaded' && r.host
        ? {
            bytes: r.host.bytes,
            loaded_at: new Date(r.loadedAt!).toISOString(),
            keep_alive: r.keepAlive === 'forever' ? -1 : r.keepAlive / 1000,
            expires_at: this.expiry(r.entry),
            signature: r.host.model.signature ? modelSignatureSummary(r.host.model.signature) : null,
          }
        : {}),
      ...(r.error ? {last_error: {message: r.error.message, code: r.error.type}} : {}),
    }
  }

  /** When an idle loaded model unloads (a busy one: its keep_alive from now). */
  expiry(entry: CatalogEntry): string {
    const res = this.residentOf(entry)
    return expiresAt(res.refs > 0 ? Date.now() : res.lastUsed, res.keepAlive)
  }

  /** Unload every model (the server is closing; requests are done). */
  async close(): Promise<void> {
    this.closed = true
    for (const w of this.waiters.splice(0)) w()
    await Promise.allSettled(this.residents.map((r) => r.loading))
    await Promise.all(this.residents.map((r) => this.unloadResident(r, 'shutdown')))
  }

  private residentOf(entry: CatalogEntry): Resident {
    const r = this.residents.find((x) => x.entry === entry)
    if (!r) throw new RunnerError('FLEET_UNKNOWN_MODEL', `not a model of this server: ${entry.id}`)
    return r
  }

  private async ready(r: Resident, signal: AbortSignal): Promise<ModelHost> {
    for (;;) {
      if (r.state === 'loaded') return r.host!
      if (r.state === 'unloading') {
        await r.unloading
        continue
      }
      // A load that failed fails again while its files (and bundle) are as they were: not re-read per request.
      if (r.state === 'failed' && r.error && r.failedOn === filesState(r.entry))
        throw new ApiError(r.error.status, r.error.message, 'model', r.error.type)
      if (r.state !== 'loading') this.startLoad(r)
      return this.bounded(r, r.loading!, signal)
    }
  }

  /** A load, waited for up to --load-timeout and while the request lives; the load itself goes on. */
  private bounded(r: Resident, loading: Promise<ModelHost>, signal: AbortSignal): Promise<ModelHost> {
    return new Promise<ModelHost>((resolve, reject) => {
      const seconds = this.policy.loadTimeoutMs / 1000
      const timer = setTimeout(() => {
        done()
        reject(
          new ApiError(
            503,
            `the model \`${r.entry.id}\` is still loading after ${seconds} s (--load-timeout); try again shortly`,
            'model',
            'model_loading',
            {'retry-after': '5'},
          ),
        )
      }, this.policy.loadTimeoutMs)
      const onAbort = () => {
        done()
        reject(signal.reason)
      }
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
      }
      if (signal.aborted) return onAbort()
      signal.addEventListener('abort', onAbort, {once: true})
      loading.then(
        (host) => {
          done()
          resolve(host)
        },
        (error: unknown) => {
          done()
          reject(error)
        },
      )
    })
  }

  private startLoad(r: Resident): void {
    r.state = 'loading'
    r.error = undefined
    const started = performance.now()
    const attempt = (async () => {
      await this.makeRoom(r, r.entry.bytes)
      const host = await openModelHost(r.entry, this.settings, this.metrics)
      // The budget once more with what it really holds (its KV caches were not known before): idle
      // models make room without waiting; a model that alone passes the budget is refused.
      const budget = this.policy.memoryBytes
      if (this.closed || (budget !== undefined && host.bytes > budget)) {
        await host.close()
        if (this.closed) throw new ApiError(503, 'the server is shutting down', null, 'server_shutting_down')
        throw overBudget(r.entry, host.bytes, budget!)
      }
      await this.evictIdle(r, host.bytes)
      if (host.speculation?.active) this.metrics.speculation = host.speculation.source
      r.host = host
      r.state = 'loaded'
      r.loadedAt = Date.now()
      this.metrics.modelLoads++
      this.log(`runner serve: loaded ${printable(r.entry.id)} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
      // Every request that waited may have gone (timeout, client left): the keep_alive starts now.
      if (r.refs === 0) this.scheduleIdle(r)
      return host
    })()
    // Requests see a failure as an ApiError in their API's shape; the next request tries again.
    const loading = attempt.catch((error: unknown) => {
      const failure = loadFailure(r.entry, error)
      r.state = 'failed'
      r.admitted = false
      r.error = failure
      r.cause = error
      // What the file itself decides (not a GGUF, refused signature, past the budget) stands until it
      // changes; anything else (out of memory...) is tried again by the next request.
      r.failedOn = failureStands(error) ? filesState(r.entry) : undefined
      this.metrics.modelLoadFailures++
      this.log(`runner serve: ${failure.message}`)
      throw new ApiError(failure.status, failure.message, 'model', failure.type)
    })
    r.loading = loading
    // Also what keeps a load nobody waits for from being an unhandled rejection.
    void loading
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        if (r.loading === loading) r.loading = undefined
        this.notify()
      })
  }

  /**
   * Wait until `r` fits beside the loaded models: within --max-models and the memory budget,
   * unloading idle models (least recently used first) or waiting for one to become idle.
   */
  private async makeRoom(r: Resident, bytes: number): Promise<void> {
    const budget = this.policy.memoryBytes
    if (budget !== undefined && bytes > budget) throw overBudget(r.entry, bytes, budget)
    for (;;) {
      if (this.closed) throw new ApiError(503, 'the server is shutting down', null, 'server_shutting_down')
      const others = this.occupying(r)
      if (this.fits(others, bytes)) {
        r.admitted = true
        return
      }
      const idle = this.leastRecentlyUsedIdle(others)
      if (idle) await this.unloadResident(idle, 'evicted')
      else await new Promise<void>((resolve) => this.waiters.push(resolve))
    }
  }

  /** After a load: unload idle models (least recently used first) while the budget is passed; never waits. */
  private async evictIdle(r: Resident, bytes: number): Promise<void> {
    for (;;) {
      const others = this.occupying(r)
      const idle = this.fits(others, bytes) ? undefined : this.leastRecentlyUsedIdle(others)
      if (!idle) return
      await this.unloadResident(idle, 'evicted')
    }
  }

  /** The other models that count against --max-models and the budget: admitted loads, loaded and unloading ones. */
  private occupying(r: Resident): Resident[] {
    return this.residents.filter((x) => x !== r && (x.admitted || x.state === 'unloading'))
  }

  private fits(others: readonly Resident[], bytes: number): boolean {
    const budget = this.policy.memoryBytes
    const held = others.reduce((n, x) => n + (x.host?.bytes ?? x.entry.bytes), 0) + bytes
    return others.length + 1 <= this.policy.maxModels && (budget === undefined || held <= budget)
  }

  private leastRecentlyUsedIdle(others: readonly Resident[]): Resident | undefined {
    return others.filter((x) => x.state === 'loaded' && x.refs === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0]
  }

  private letGo(r: Resident, keepAlive: KeepAlive | undefined): void {
    r.refs--
    r.lastUsed = Date.now()
    if (keepAlive !== undefined) r.keepAlive = keepAlive
    if (r.refs === 0 && r.state === 'loaded') this.scheduleIdle(r)
    this.notify()
  }

  /** An idle loaded model: unload it now (keep_alive 0, or asked to), later (a duration), or never (-1). */
  private scheduleIdle(r: Resident): void {
    clearTimeout(r.timer)
    const keep = r.keepAlive
    if (r.unloadRequested || keep === 0) this.unloadQuietly(r, r.unloadRequested ? 'request' : 'keep_alive')
    else if (keep !== 'forever') {
      r.timer = setTimeout(() => {
        if (r.refs === 0) this.unloadQuietly(r, 'expired')
      }, keep)
      r.timer.unref()
    }
  }

  /** An unload nobody awaits: its failure is logged, never an unhandled rejection. */
  private unloadQuietly(r: Resident, reason: UnloadReason): void {
    this.unloadResident(r, reason).catch((error: unknown) =>
      this.log(`runner serve: error while unloading ${printable(r.entry.id)}: ${error instanceof Error ? error.message : String(error)}`),
    )
  }

  private async unloadResident(r: Resident, reason: UnloadReason): Promise<void> {
    if (r.state === 'unloading') return r.unloading
    if (r.state !== 'loaded' || !r.host) return
    clearTimeout(r.timer)
    const host = r.host
    r.state = 'unloading'
    // Counters of its decode group live on in /metrics after it goes.
    if (host.group) this.metrics.retireBatched(host.group.stats())
    r.unloading = host.close().finally(() => {
      r.host = undefined
      r.state = 'unloaded'
      r.admitted = false
      r.unloading = undefined
      r.unloadRequested = false
      // The next load starts from the server's default again.
      r.keepAlive = this.policy.keepAlive
      this.metrics.recordUnload(reason)
      this.log(`runner serve: unloaded ${printable(r.entry.id)} (${reason})`)
      this.notify()
    })
    return r.unloading
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w()
  }
}

/** 507 for a model that alone passes --models-memory; a RunnerError, so a one-model server exits 2 at start. */
function overBudget(entry: CatalogEntry, bytes: number, budget: number): RunnerError {
  return new RunnerError(
    'MODEL_EXCEEDS_MEMORY_BUDGET',
    `the model \`${entry.id}\` needs ${bytes} bytes (its files and KV caches), more than the server's memory budget of ${budget} bytes (--models-memory)`,
    ExitCode.usage,
  )
}

function failureStands(error: unknown): boolean {
  return (
    error instanceof RunnerError &&
    (error.exitCode === ExitCode.invalidModel || error.exitCode === ExitCode.unsupported || error.code === 'MODEL_EXCEEDS_MEMORY_BUDGET')
  )
}

/** The files' and bundle's sizes and modification times: what a cached load failure stands on. */
function filesState(entry: CatalogEntry): string {
  const paths = [...entry.files, ...(entry.signature?.bundlePath !== undefined ? [entry.signature.bundlePath] : [])]
  return JSON.stringify(
    paths.map((p) => {
      const st = statSync(p, {throwIfNoEntry: false, bigint: true})
      return st ? [String(st.size), String(st.mtimeNs), String(st.ino)] : null
    }),
  )
}

/** What a failed load tells the requests that asked for the model. */
function loadFailure(entry: CatalogEntry, error: unknown): {message: string; status: number; type: string} {
  if (error instanceof ApiError) return {message: error.message, status: error.status, type: error.code ?? error.type}
  if (error instanceof RunnerError && error.code === 'MODEL_EXCEEDS_MEMORY_BUDGET')
    return {message: error.message, status: 507, type: 'model_exceeds_memory_budget'}
  const reason = error instanceof Error ? error.message : String(error)
  if (isSignatureRefusal(error))
    return {
      message: `the model \`${entry.id}\` was refused by the signature policy: ${reason}`,
      status: 409,
      type: 'model_signature_refused',
    }
  const code = error instanceof RunnerError ? ` (${error.code})` : ''
  const status = error instanceof RunnerError && error.exitCode === ExitCode.usage ? 400 : 500
  return {message: `the model \`${entry.id}\` could not be loaded${code}: ${reason}`, status, type: 'model_load_failed'}
}
