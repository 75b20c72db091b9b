/**
 * The HTTP server: fastify with the route table, errors in each API family's shape for everything
 * (bad JSON, oversize bodies, unknown routes, refused fields; ./error-shape.ts), the fleet of models
 * (./fleet.ts: loaded on first use, kept for keep_alive, unloaded least recently used first; one -m
 * loads at start and stays), and a graceful close. `runner serve` is a thin wrapper around startServer.
 */
import {timingSafeEqual} from 'node:crypto'

import Fastify, {type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest} from 'fastify'

import type {RopeOverrides} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {LoraSpec} from '../lora/index.js'
import {MAX_TOP_LOGPROBS, SAMPLING_DEFAULTS} from '../sampling/index.js'
import {readPublicKeyFile} from '../signing/index.js'
import type {SpeculationOptions, SpeculationStatus} from '../speculative/index.js'
import {MAX_CHOICES} from './schemas.js'
import {ApiError, toApiError} from './api-error.js'
import {buildCatalog, type CatalogEntry, type ServeSignatures} from './catalog.js'
import {CONNECTION_DEFAULTS, type ConnectionLimits, limitedServerFactory} from './connections.js'
import {errorBodyFor} from './error-shape.js'
import {Fleet, type FleetPolicy, type Lease} from './fleet.js'
import {checkedJsonParser} from './json-body.js'
import {clientErrorHandler, methodNotAllowed} from './http-conformance.js'
import {buildInfo} from './build-info.js'
import {installCors, parseCorsOrigins} from './cors.js'
import {type KeepAlive, requestKeepAlive} from './keep-alive.js'
import {checkCanListen, listenError} from './listen.js'
import {installRequestLog, type LogFormat} from './request-log.js'
import {type GaugeReadings, Metrics} from './metrics.js'
import type {HostSettings} from './model-host.js'
import {COMPLETION_DEFAULT_MAX_TOKENS} from './requests.js'
import {type ModelRoute, ROUTES} from './routes.js'
import {ServerCore, ServerState} from './state.js'
import {REQUEST_LIMIT_DEFAULTS, REQUEST_LIMIT_FLAGS, type RequestLimits} from './request-limits.js'

export interface ServeOptions {
  /** The one model (a path, or -m's ID=PATH); with `models` too, it comes first. */
  readonly modelPath?: string
  /** Further -m values (./catalog.ts): several models, loaded when a request names them (docs/serving-many-models.md). */
  readonly models?: readonly string[]
  /** --models-dir: serve every GGUF file (and pulled model) of a folder. */
  readonly modelsDir?: string
  /** Signature checks at each model's load (./catalog.ts ServeSignatures, docs/model-signing.md); refused: 409 model_signature_refused. */
  readonly signatures?: ServeSignatures
  /** keep_alive when a request gives none (default: 5 minutes with several models, forever with one -m). */
  readonly keepAlive?: KeepAlive
  /** Most models loaded at once (default 3, as Ollama's OLLAMA_MAX_LOADED_MODELS on a CPU). */
  readonly maxModels?: number
  /** Bytes the loaded models may hold together (files and KV caches); default: no budget. */
  readonly modelsMemoryBytes?: number
  /** Seconds a request waits for its model to load (then 503 model_loading, Retry-After). */
  readonly loadTimeoutSeconds?: number
  /**
   * LoRA adapters applied to the model, in order, for every request. One set per server, so the
   * prefix cache never reuses KV rows computed under other adapters.
   */
  readonly lora?: readonly LoraSpec[]
  /** llama.cpp's rope overrides, for the one model (docs/long-context.md). */
  readonly rope?: RopeOverrides
  readonly host?: string
  /** 0: any free port (tests). */
  readonly port?: number
  readonly parallel?: number
  /** KV positions per slot (default: the model's training context, at most 4096). */
  readonly nCtx?: number
  /** A context size given beyond the model's training context runs, with this warning (engine contextSize). */
  readonly onWarning?: (message: string) => void
  /** Threads per slot (default: physical cores divided among the slots, at least 1). */
  readonly threadsPerSlot?: number
  readonly kvType?: 'f16' | 'f32'
  /** Sliding-window layers keep every position (llama.cpp's --swa-full) instead of a ring; a ring reuses less of a slot's cache. */
  readonly swaFull?: boolean
  /**
   * llama-server's --context-shift with --keep N (prompt tokens after BOS; -1: the whole prompt): a slot
   * whose context fills drops half of what follows them and goes on; refused at start where it cannot
   * be exact (a sliding-window ring).
   */
  readonly contextShift?: {readonly keep: number}
  readonly queueLimit?: number
  /** Seconds a request may take from arrival (queue and prefill included). */
  readonly timeoutSeconds?: number
  readonly bodyLimitBytes?: number
  /** Time to send headers and whole requests, and connections at once (./connections.ts). */
  readonly connections?: Partial<ConnectionLimits>
  readonly apiKey?: string
  /** "chatml" or the text of a Jinja chat template; wins over the model's. */
  readonly chatTemplate?: string
  readonly prefixCache?: boolean
  /**
   * The slots' decode steps run as one forward pass for all of them (a DecodeGroup on the machine's
   * physical cores); each request's tokens are bitwise the same either way. Default true with
   * --parallel above 1.
   */
  readonly batchDecode?: boolean
  /** Speculative decoding on every slot (docs/speculative.md): answers are the same, only the speed differs. */
  readonly speculation?: SpeculationOptions
  /** Model ids clients may name besides the file name without .gguf; the first is the served id (./model-ids.ts). */
  readonly aliases?: readonly string[]
  /** Accept any `model` id, as llama-server does (default: only the file name and the aliases). */
  readonly acceptAnyModel?: boolean
  /** What one request may hold (./request-limits.ts); the rest at REQUEST_LIMIT_DEFAULTS. */
  readonly requestLimits?: Partial<RequestLimits>
  /** Origins allowed by CORS ("*": any); none by default (./cors.ts). */
  readonly corsOrigins?: readonly string[]
  /** One line per request through startServer's `log` (./request-log.ts): text, json, or none. */
  readonly requestLog?: LogFormat
}

export const SERVE_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  parallel: 1,
  kvType: 'f16',
  queueLimit: 64,
  timeoutSeconds: 600,
  bodyLimitBytes: 4 << 20,
  prefixCache: true,
  batchDecode: true,
  requestLog: 'text',
  maxModels: 3,
  loadTimeoutSeconds: 600,
  /** keep_alive with several models (Ollama's default); one -m stays loaded. */
  keepAlive: 5 * 60_000,
} as const

/** How long a graceful close lets in-flight requests finish before cancelling them. */
export const SHUTDOWN_GRACE_MS = 5000

export interface RunningServer {
  readonly url: string
  readonly app: FastifyInstance
  readonly core: ServerCore
  /** The first model's state while it is loaded (a one-model server's model always is). */
  readonly state: ServerState
  /** Stop accepting, finish (up to graceMs) or cancel in-flight requests, unload every model. */
  close(graceMs?: number): Promise<void>
}

/** libuv's worker pool runs the engine's calls; its size caps how many slots generate at once. */
function uvThreadpoolSize(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE)
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4
}

/** The longest request timeout Node's timers can hold, in seconds. */
export const MAX_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000)

export async function startServer(options: ServeOptions, log: (line: string) => void = () => {}): Promise<RunningServer> {
  const o = {...SERVE_DEFAULTS, ...definedOnly(options)} as typeof SERVE_DEFAULTS & ServeOptions
  const check = (name: string, v: number, min: number, max: number) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new RunnerError('SERVE_BAD_OPTION', `${name} ${v} must be an integer in [${min}, ${max}]`, ExitCode.usage)
  }
  check('--parallel', o.parallel, 1, 256)
  check('--queue', o.queueLimit, 0, 1 << 20)
  check('--body-limit', o.bodyLimitBytes, 1024, 1 << 30)
  check('--port', o.port, 0, 65535)
  check('--max-models', o.maxModels, 1, 1024)
  if (o.modelsMemoryBytes !== undefined && !(Number.isSafeInteger(o.modelsMemoryBytes) && o.modelsMemoryBytes > 0))
    throw new RunnerError('SERVE_BAD_OPTION', `--models-memory ${o.modelsMemoryBytes} must be a positive number of bytes`, ExitCode.usage)
  const seconds = (name: string, v: number) => {
    // Node's timers hold at most 2^31 - 1 ms (about 24.8 days); a larger delay would fire at once.
    if (!(v > 0) || !(v <= MAX_TIMEOUT_SECONDS))
      throw new RunnerError(
        'SERVE_BAD_OPTION',
        `${name} ${v} must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`,
        ExitCode.usage,
      )
  }
  seconds('--timeout', o.timeoutSeconds)
  seconds('--load-timeout', o.loadTimeoutSeconds)
  const corsOrigins = parseCorsOrigins(o.corsOrigins ?? [])
  const limits: ConnectionLimits = {...CONNECTION_DEFAULTS, ...definedOnly(options.connections ?? {})}
  seconds('--headers-timeout', limits.headersTimeoutSeconds)
  seconds('--body-timeout', limits.bodyTimeoutSeconds)
  check('--max-connections', limits.maxConnections, 1, 1 << 20)
  check('--max-connections-per-client', limits.maxConnectionsPerClient, 1, 1 << 20)
  const requestLimits: RequestLimits = {...REQUEST_LIMIT_DEFAULTS, ...definedOnly(options.requestLimits ?? {})}
  for (const key of Object.keys(REQUEST_LIMIT_FLAGS) as Array<keyof RequestLimits>)
    check(REQUEST_LIMIT_FLAGS[key].flag, requestLimits[key], 1, 1 << 24)
  const catalog = await buildCatalog({
    models: [...(options.modelPath !== undefined ? [options.modelPath] : []), ...(options.models ?? [])],
    ...(options.aliases ? {aliases: options.aliases} : {}),
    ...(options.modelsDir !== undefined ? {modelsDir: options.modelsDir} : {}),
    ...(options.signatures ? {signatures: options.signatures} : {}),
  })
  // Adapters and a draft model are made for one base model and vocabulary: not for a fleet of them.
  if (catalog.entries.length > 1) {
    if ((options.lora ?? []).length > 0) throw serveOption('--lora adapts one model: serve several models without it (or one -m with it)')
    if (options.speculation?.source === 'model')
      throw serveOption(
        '--draft pairs a draft model with one model: with several models use --draft-lookup or --draft-mtp, or serve one -m',
      )
  }
  const build = await buildInfo()
  // Before any model loads: a port in use is said at once, not after a long load.
  await checkCanListen(o.host, o.port)

  const concurrent = Math.min(o.parallel, uvThreadpoolSize())
  if (concurrent < o.parallel) {
    log(
      `runner: warning: ${o.parallel} slots but only ${concurrent} engine calls run at once (UV_THREADPOOL_SIZE=${uvThreadpoolSize()}); start with UV_THREADPOOL_SIZE=${o.parallel} to run every slot at once`,
    )
  }
  const settings: HostSettings = {
    parallel: o.parallel,
    ...(o.nCtx !== undefined ? {nCtx: o.nCtx} : {}),
    ...(options.onWarning ? {onWarning: options.onWarning} : {}),
    ...(o.threadsPerSlot !== undefined ? {threadsPerSlot: o.threadsPerSlot} : {}),
    kvType: o.kvType,
    swaFull: o.swaFull ?? false,
    ...(o.contextShift ? {contextShift: o.contextShift} : {}),
    queueLimit: o.queueLimit,
    prefixCache: o.prefixCache,
    batchDecode: o.batchDecode,
    ...(options.speculation ? {speculation: options.speculation} : {}),
    ...(options.lora ? {lora: options.lora} : {}),
    ...(options.rope ? {rope: options.rope} : {}),
    ...(o.chatTemplate !== undefined ? {chatTemplate: o.chatTemplate} : {}),
    acceptAnyModel: o.acceptAnyModel ?? false,
    requestLimits,
    systemFingerprint: build.systemFingerprint,
    concurrent,
  }
  const policy: FleetPolicy = {
    keepAlive: options.keepAlive ?? (catalog.single ? 'forever' : SERVE_DEFAULTS.keepAlive),
    maxModels: o.maxModels,
    ...(o.modelsMemoryBytes !== undefined ? {memoryBytes: o.modelsMemoryBytes} : {}),
    loadTimeoutMs: o.loadTimeoutSeconds * 1000,
    acceptAnyModel: o.acceptAnyModel ?? false,
  }
  const metrics: Metrics = new Metrics(() => gaugeReadings(fleet, o.prefixCache))
  const fleet = new Fleet(catalog, settings, metrics, policy, log)
  try {
    // One -m: loaded before the server listens, so a model that cannot load stops the start (exit 3...).
    if (catalog.single) await loadAtStart(fleet)
    const serverPart = {
      ...serverCapabilities(o, limits, requestLimits, corsOrigins, build, policy, catalog.single),
      signature_policy: await signaturePolicyCapability(options.signatures, catalog.entries),
    }
    const core: ServerCore = new ServerCore(
      fleet,
      metrics,
      (): Record<string, unknown> => capabilitiesNow(core, serverPart, metrics),
      o.timeoutSeconds * 1000,
    )
    const app = buildApp(core, o.bodyLimitBytes, o.apiKey, corsOrigins, limits, (a) => installRequestLog(a, o.requestLog, log))
    try {
      await app.listen({host: o.host, port: o.port})
    } catch (error) {
      throw listenError(error, o.host, o.port)
    }
    const address = app.server.address()
    const port = typeof address === 'object' && address ? address.port : o.port
    const url = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`
    let closing: Promise<void> | undefined
    return {
      url,
      app,
      core,
      get state() {
        const host = fleet.hostOf(fleet.first)
        if (!host) throw new RunnerError('SERVE_NOT_LOADED', `the model ${fleet.first.id} is not loaded`)
        return new ServerState(core, host)
      },
      close(graceMs = SHUTDOWN_GRACE_MS) {
        closing ??= (async () => {
          core.closing = true
          for (const host of fleet.loadedHosts()) host.scheduler.close()
          const closed = app.close()
          await core.drain(graceMs)
          app.server.closeAllConnections()
          await closed
          await fleet.close()
        })()
        return closing
      },
    }
  } catch (error) {
    await fleet.close()
    throw error
  }
}

/** What /v1/capabilities says of the signature policy in force: the key, whether every model must verify, each model's bundle. */
async function signaturePolicyCapability(sig: ServeSignatures | undefined, entries: readonly CatalogEntry[]) {
  const key = sig?.publicKeyPath !== undefined ? await readPublicKeyFile(sig.publicKeyPath) : undefined
  return {
    require_signed_model: sig?.require === true,
    public_key: sig?.publicKeyPath ?? null,
    public_key_fingerprint: key?.fingerprint ?? null,
    format: 'OpenSSF Model Signing v1.0 bundle, key-based ECDSA P-256/P-384/P-521 (docs/model-signing.md)',
    refused_status: 409,
    bundles: Object.fromEntries(entries.map((e) => [e.id, e.signature?.bundlePath ?? null])),
  }
}

function serveOption(message: string): RunnerError {
  return new RunnerError('SERVE_BAD_OPTION', message, ExitCode.usage)
}

/** The one model of a one-model server, loaded now: its load error is the start's error, as a RunnerError. */
async function loadAtStart(fleet: Fleet): Promise<void> {
  try {
    await fleet.preload(fleet.first)
  } catch (error) {
    throw fleet.lastLoadError(fleet.first) ?? error
  }
}

/** /metrics' gauges over the loaded models. */
function gaugeReadings(fleet: Fleet, prefixCache: boolean): GaugeReadings {
  const hosts = fleet.loadedHosts()
  // Without the prefix cache the slots' KV rows are never reused, so none count as cached.
  let tokens = 0
  let bytes = 0
  for (const h of hosts) {
    const held = prefixCache ? h.scheduler.slots.reduce((n, s) => n + s.session.cached.length, 0) : 0
    tokens += held
    bytes += Math.round(held * (h.kvBytesPerSlot / h.env.nCtx))
  }
  const groups = hosts.flatMap((h) => (h.group ? [h.group.stats()] : []))
  return {
    queueDepth: hosts.reduce((n, h) => n + h.scheduler.queued, 0),
    slotsBusy: hosts.reduce((n, h) => n + h.scheduler.busy, 0),
    slotsTotal: hosts.reduce((n, h) => n + h.scheduler.slots.length, 0),
    prefixCacheTokens: tokens,
    prefixCacheBytes: bytes,
    ...(groups.length > 0
      ? {batchedSteps: groups.reduce((n, g) => n + g.steps, 0), batchedTokens: groups.reduce((n, g) => n + g.tokens, 0)}
      : {}),
    modelsLoaded: hosts.length,
    modelsServable: fleet.entries.length,
  }
}

/** The server-wide part of /v1/capabilities: what no model changes. */
function serverCapabilities(
  o: typeof SERVE_DEFAULTS & ServeOptions,
  limits: ConnectionLimits,
  requestLimits: RequestLimits,
  corsOrigins: readonly string[],
  build: Awaited<ReturnType<typeof buildInfo>>,
  policy: FleetPolicy,
  single: boolean,
) {
  return {
    models_policy: {
      load: single ? 'at start' : 'on first request',
      default_keep_alive: policy.keepAlive === 'forever' ? -1 : policy.keepAlive / 1000,
      max_models: policy.maxModels,
      memory_budget_bytes: policy.memoryBytes ?? null,
      load_timeout_seconds: policy.loadTimeoutMs / 1000,
      eviction: 'least recently used idle model, when a load would pass max_models or the memory budget',
    },
    queue: {limit: o.queueLimit, full_status: 503},
    limits: {
      timeout_seconds: o.timeoutSeconds,
      headers_timeout_seconds: limits.headersTimeoutSeconds,
      body_timeout_seconds: limits.bodyTimeoutSeconds,
      max_connections: limits.maxConnections,
      max_connections_per_client: limits.maxConnectionsPerClient,
      body_limit_bytes: o.bodyLimitBytes,
      max_stop_sequences: 4,
      max_top_logprobs: MAX_TOP_LOGPROBS,
      max_messages: requestLimits.messages,
      max_content_parts: requestLimits.contentParts,
      max_tools: requestLimits.tools,
      max_stop_length: requestLimits.stopChars,
      max_logit_bias: requestLimits.logitBias,
    },
    auth: {api_key_required: o.apiKey !== undefined},
    cors: {origins: corsOrigins},
    build: {
      runner: build.runner,
      addon_sha256: build.addonSha256,
      package_sha256: build.packageSha256,
      system_fingerprint: build.systemFingerprint,
    },
    defaults: {
      temperature: SAMPLING_DEFAULTS.temperature,
      top_k: SAMPLING_DEFAULTS.topK,
      top_p: SAMPLING_DEFAULTS.topP,
      min_p: SAMPLING_DEFAULTS.minP,
      presence_penalty: 0,
      frequency_penalty: 0,
      penalty_last_n: SAMPLING_DEFAULTS.penaltyLastN,
      chat_max_tokens: 'until end of text or the slot context is full',
      completion_max_tokens: COMPLETION_DEFAULT_MAX_TOKENS,
      seed: 'random per request when not given',
    },
    fields: {
      honoured: [
        'model',
        'messages',
        'prompt',
        'max_tokens',
        'max_completion_tokens',
        'temperature',
        'top_p',
        'top_k',
        'min_p',
        'seed',
        'stop',
        'presence_penalty',
        'frequency_penalty',
        'logit_bias',
        'logprobs',
        'top_logprobs',
        `n (at most ${MAX_CHOICES}: choices run one after another)`,
        'tools, tool_choice, parallel_tool_calls (docs/http-api.md#tool-calling)',
        'chat_template_kwargs',
        'stream',
        'stream_options.include_usage',
        'response_format (text, json_object, json_schema: every schema enforced exactly, strict or not)',
        'user (accepted; the server keeps no per-user records)',
        'echo (false)',
        'suffix (empty)',
        'best_of (1)',
        'keep_alive (Ollama routes: how long the model stays loaded after the request)',
      ],
      refused: {
        [`n > ${MAX_CHOICES}`]: 'choices run one after another on one slot',
        'response_format json_schema a schema cannot honour exactly': 'refused naming the keyword and JSON pointer',
        'functions, function_call': 'the deprecated fields: use tools and tool_choice',
        'non-text content parts, audio, modalities': 'the runner is text-only',
        'other fields': 'refused by name as unrecognized',
      },
    },
    routes: ROUTES.map((r) => ({method: r.method, path: r.url, summary: r.summary})),
  }
}

/**
 * /v1/capabilities as it stands: the server's part, the first model's (its file, template, slots,
 * speculation, prefix cache) while it is loaded, and every model with its state. Speculation's
 * acceptance is read when the document is sent (getters), as /metrics counts it.
 */
function capabilitiesNow(core: ServerCore, server: ReturnType<typeof serverCapabilities>, metrics: Metrics): Record<string, unknown> {
  const fleet = core.fleet
  const first = fleet.hostOf(fleet.first)
  const firstPart = first
    ? first.capabilities
    : {model: {id: fleet.first.id, file: fleet.first.path, state: fleet.describeEntry(fleet.first).state}}
  const hostLimits = (first?.capabilities.limits ?? {}) as Record<string, unknown>
  return {
    ...firstPart,
    speculation: speculationCapability(first?.speculation, metrics),
    ...server,
    limits: {...server.limits, ...hostLimits},
    models: fleet.describe(),
  }
}

/**
 * What /v1/capabilities says of speculation: the source in use and its settings, or the one refused
 * and why; the acceptance so far is read when the document is sent (getters), as /metrics counts it.
 */
function speculationCapability(status: SpeculationStatus | undefined, metrics: Metrics) {
  if (!status) return {active: false, source: null}
  if (!status.active) return {active: false, source: status.source, refused: status.refused}
  return {
    active: true,
    source: status.source,
    settings: status.settings,
    exact: true,
    decoding: "drafted tokens are verified by the model's own sampler: answers are token for token those without speculation",
    get drafted_tokens() {
      return metrics.draftTokens
    },
    get accepted_tokens() {
      return metrics.draftAccepted
    },
    get acceptance() {
      return metrics.draftTokens > 0 ? Math.round((metrics.draftAccepted / metrics.draftTokens) * 1000) / 1000 : null
    },
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>
}

function buildApp(
  core: ServerCore,
  bodyLimit: number,
  apiKey: string | undefined,
  corsOrigins: readonly string[],
  limits: ConnectionLimits,
  /** Installs the request log: its hook must come before every other (./request-log.ts). */
  installLog: (app: FastifyInstance) => void = () => {},
): FastifyInstance {
  const app = Fastify({
    bodyLimit,
    serverFactory: limitedServerFactory(limits),
    logger: false,
    return503OnClosing: false,
    // Errors Node's parser raises (bad Content-Length, obs-fold, a slow request) in the API's shape.
    clientErrorHandler,
    // Errors Fastify raises before routing (an undecodable URL) in the API's error shape too.
    frameworkErrors: (error, req, reply: FastifyReply) => {
      const api = new ApiError(400, `the request URL cannot be decoded: ${error.message}`, null, 'invalid_request')
      void reply.code(400).send(errorBodyFor(req.url, req.headers, api))
    },
  })
  // Any content type is read as JSON (curl -d sends form encoding by default).
  const json = checkedJsonParser(app.getDefaultJsonParser('error', 'error'))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', {parseAs: 'buffer'}, json)
  app.addContentTypeParser('*', {parseAs: 'buffer'}, json)

  // First the request log (a request refused by a later hook is logged), then CORS: preflights are
  // answered before the API key is asked for.
  installLog(app)
  installCors(app, corsOrigins)
  const publicRoutes = new Set(ROUTES.filter((r) => !r.auth).map((r) => r.url))
  const key = apiKey === undefined ? undefined : Buffer.from(apiKey)
  app.addHook('onRequest', async (req, reply) => {
    ;(req as FastifyRequest & {startedAt?: number}).startedAt = performance.now()
    const route = req.routeOptions.url ?? 'unmatched'
    if (route !== '/metrics') {
      reply.raw.once('close', () => core.metrics.countRequest(route, reply.raw.writableFinished ? reply.raw.statusCode : 499))
    }
    // An unknown path is a 404 whatever the key: the not-found handler answers it.
    if (key && route !== 'unmatched' && !publicRoutes.has(route)) {
      const given = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? (req.headers['x-api-key'] as string | undefined)
      const ok = given !== undefined && Buffer.byteLength(given) === key.length && timingSafeEqual(Buffer.from(given), key)
      if (!ok) throw new ApiError(401, 'Incorrect API key provided (send it as "Authorization: Bearer KEY")', null, 'invalid_api_key')
    }
  })
  for (const r of ROUTES) {
    const handler =
      r.model === 'none'
        ? (req: FastifyRequest, reply: FastifyReply) => r.handler(core, req, reply)
        : (req: FastifyRequest, reply: FastifyReply) => withModel(core, r, req, reply)
    app.route({method: r.method, url: r.url, handler})
  }

  /** Each API family's errors in its own shape: Anthropic's, Ollama's or OpenAI's (./error-shape.ts). */
  const errorBody = (req: FastifyRequest, e: ApiError) => errorBodyFor(req.url, req.headers, e)
  app.setNotFoundHandler((req, reply) => {
    const wrongMethod = methodNotAllowed(ROUTES, req.method, req.url, corsOrigins.length > 0)
    if (wrongMethod) return void reply.code(405).headers(wrongMethod.headers).send(errorBody(req, wrongMethod))
    const err = new ApiError(
      404,
      `there is no route ${req.method} ${req.url.split('?')[0]} (GET /v1/capabilities lists the routes)`,
      null,
      'unknown_url',
    )
    void reply.code(404).send(errorBody(req, err))
  })
  app.setErrorHandler((error: FastifyError, req, reply) => {
    const api = fromFastify(error)
    void reply.code(api.status).headers(api.headers).send(errorBody(req, api))
  })
  return app
}

/**
 * A model's route: the model the body names (the first one where the route lets it be left out, or
 * the server has one), loaded if it is not and held until the handler is done; the body's Ollama
 * `keep_alive` says how long it stays loaded afterwards.
 */
async function withModel(core: ServerCore, r: ModelRoute, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as {model?: unknown; keep_alive?: unknown}
  const named = typeof body.model === 'string' ? body.model : undefined
  const fleet = core.fleet
  let entry: CatalogEntry
  if (named !== undefined) entry = fleet.entries.length === 1 && r.model === 'required' ? fleet.first : fleet.require(named)
  else if (r.model === 'optional' || fleet.entries.length === 1) entry = fleet.first
  else
    throw new ApiError(
      400,
      `you must name a model in "model": this server serves ${fleet.entries.map((e) => `\`${e.id}\``).join(', ')} (GET /v1/models)`,
      'model',
      'missing_required_parameter',
    )
  const keepAlive = r.keepAlive ? requestKeepAlive(body.keep_alive) : undefined
  const wait = core.waitSignal(req, reply)
  let lease: Lease
  try {
    lease = await fleet.acquire(entry, {signal: wait.signal, ...(keepAlive !== undefined ? {keepAlive} : {})})
  } finally {
    wait.done()
  }
  try {
    return await r.handler(new ServerState(core, lease.host, lease.loadMs), req, reply)
  } finally {
    lease.release()
  }
}

/** Fastify's own refusals (body parsing, size) as ApiErrors; everything else through toApiError. */
function fromFastify(error: FastifyError): ApiError {
  if (error instanceof ApiError) return error
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, `the request body is larger than the server's limit (--body-limit)`, null, 'request_too_large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, error.message, null, 'unsupported_media_type')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'the request body is empty; send a JSON object', null, 'invalid_json')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, `the request body is not valid JSON: ${error.message}`, null, 'invalid_json')
    default:
      break
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new ApiError(400, `the request body is not valid JSON: ${error.message}`, null, 'invalid_json')
  }
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500)
    return new ApiError(error.statusCode, error.message, null, (error.code ?? 'bad_request').toLowerCase())
  return toApiError(error)
}
