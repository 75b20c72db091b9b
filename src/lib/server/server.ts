/**
 * The HTTP server: fastify with the route table, errors in each API family's shape for everything
 * (bad JSON, oversize bodies, unknown routes, refused fields; ./error-shape.ts), slots built from one
 * loaded model, and a graceful close. `runner serve` is a thin wrapper around startServer.
 */
import {timingSafeEqual} from 'node:crypto'
import {availableParallelism} from 'node:os'
import {basename} from 'node:path'

import Fastify, {type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest} from 'fastify'

import type {RopeOverrides} from '../arch/index.js'
import {ChatTemplate} from '../chat/index.js'
import {adapterSummary, type Context, DecodeGroup, Model, Session, contextSize} from '../engine/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {LoraSpec} from '../lora/index.js'
import {MAX_TOP_LOGPROBS, SAMPLING_DEFAULTS} from '../sampling/index.js'
import {type OpenedDrafts, openDrafts, type SpeculationOptions, type SpeculationStatus} from '../speculative/index.js'
import {MAX_CHOICES} from './schemas.js'
import {defaultThreads, sha256File} from '../util/index.js'
import {ApiError, toApiError} from './api-error.js'
import {embeddingCapabilities} from './embeddings.js'
import {CONNECTION_DEFAULTS, type ConnectionLimits, limitedServerFactory} from './connections.js'
import {errorBodyFor} from './error-shape.js'
import {checkedJsonParser} from './json-body.js'
import {clientErrorHandler, methodNotAllowed} from './http-conformance.js'
import {buildInfo} from './build-info.js'
import {installCors, parseCorsOrigins} from './cors.js'
import {checkCanListen, listenError} from './listen.js'
import {installRequestLog, type LogFormat} from './request-log.js'
import {Metrics} from './metrics.js'
import {modelIds as ids, otherIds} from './model-ids.js'
import {COMPLETION_DEFAULT_MAX_TOKENS, type RequestEnv} from './requests.js'
import {ROUTES} from './routes.js'
import {Scheduler} from './scheduler.js'
import {ServerState} from './state.js'
import {thinkingSupport} from './thinking.js'
import {PromptWorkers} from './prompt-work.js'
import {longestPieceBytes, REQUEST_LIMIT_DEFAULTS, REQUEST_LIMIT_FLAGS, type RequestLimits} from './request-limits.js'
import {toolFormatOf} from '../tools/index.js'

/** Heap of each prompt worker (MiB): a request that needs more to render or tokenize gets 413, alone. */
const PROMPT_WORKER_HEAP_MB = 1024

export interface ServeOptions {
  readonly modelPath: string
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
} as const

/** How long a graceful close lets in-flight requests finish before cancelling them. */
export const SHUTDOWN_GRACE_MS = 5000

export interface RunningServer {
  readonly url: string
  readonly app: FastifyInstance
  readonly state: ServerState
  /** Stop accepting, finish (up to graceMs) or cancel in-flight requests, free the model. */
  close(graceMs?: number): Promise<void>
}

/** libuv's worker pool runs the engine's calls; its size caps how many slots generate at once. */
function uvThreadpoolSize(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE)
  return Number.isInteger(n) && n > 0 ? Math.min(n, 1024) : 4
}

/** The LoRA adapters every request runs with, as /v1/capabilities lists them (sha256: what a receipt records). */
async function servedAdapters(model: Model) {
  return Promise.all(model.adapters.map(async (a) => ({...adapterSummary(a), sha256: await sha256File(a.spec.path)})))
}

/** The longest request timeout Node's timers can hold, in seconds. */
export const MAX_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000)

export async function startServer(options: ServeOptions, log: (line: string) => void = () => {}): Promise<RunningServer> {
  const o = {...SERVE_DEFAULTS, ...definedOnly(options), modelPath: options.modelPath} as Required<
    Omit<
      ServeOptions,
      'lora' | 'rope' | 'nCtx' | 'threadsPerSlot' | 'apiKey' | 'chatTemplate' | 'aliases' | 'acceptAnyModel' | 'corsOrigins'
    >
  > &
    ServeOptions
  const check = (name: string, v: number, min: number, max: number) => {
    if (!Number.isInteger(v) || v < min || v > max)
      throw new RunnerError('SERVE_BAD_OPTION', `${name} ${v} must be an integer in [${min}, ${max}]`, ExitCode.usage)
  }
  check('--parallel', o.parallel, 1, 256)
  check('--queue', o.queueLimit, 0, 1 << 20)
  check('--body-limit', o.bodyLimitBytes, 1024, 1 << 30)
  check('--port', o.port, 0, 65535)
  // Node's timers hold at most 2^31 - 1 ms (about 24.8 days); a larger delay would fire at once.
  if (!(o.timeoutSeconds > 0) || !(o.timeoutSeconds <= MAX_TIMEOUT_SECONDS)) {
    throw new RunnerError(
      'SERVE_BAD_OPTION',
      `--timeout ${o.timeoutSeconds} must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`,
      ExitCode.usage,
    )
  }
  for (const a of o.aliases ?? [])
    if (a.length === 0) throw new RunnerError('SERVE_BAD_OPTION', '--alias must not be empty', ExitCode.usage)
  const corsOrigins = parseCorsOrigins(o.corsOrigins ?? [])
  const limits: ConnectionLimits = {...CONNECTION_DEFAULTS, ...definedOnly(options.connections ?? {})}
  const seconds = (name: string, v: number) => {
    if (!(v > 0) || !(v <= MAX_TIMEOUT_SECONDS))
      throw new RunnerError(
        'SERVE_BAD_OPTION',
        `${name} ${v} must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}`,
        ExitCode.usage,
      )
  }
  seconds('--headers-timeout', limits.headersTimeoutSeconds)
  seconds('--body-timeout', limits.bodyTimeoutSeconds)
  check('--max-connections', limits.maxConnections, 1, 1 << 20)
  check('--max-connections-per-client', limits.maxConnectionsPerClient, 1, 1 << 20)
  const requestLimits: RequestLimits = {...REQUEST_LIMIT_DEFAULTS, ...definedOnly(options.requestLimits ?? {})}
  for (const key of Object.keys(REQUEST_LIMIT_FLAGS) as Array<keyof RequestLimits>)
    check(REQUEST_LIMIT_FLAGS[key].flag, requestLimits[key], 1, 1 << 24)
  const build = await buildInfo()
  // Before the model loads: a port in use is said at once, not after a long load.
  await checkCanListen(o.host, o.port)

  const model = await Model.load(o.modelPath, {lora: options.lora, rope: options.rope})
  const contexts: Context[] = []
  let group: DecodeGroup | undefined
  let drafted: OpenedDrafts | undefined
  let work: PromptWorkers | undefined
  try {
    const template = ChatTemplate.forModel(model.gguf, model.tokenizer, o.chatTemplate)
    const nCtx = contextSize(o.nCtx, model.config, {name: '--ctx', onWarning: options.onWarning})
    const threadsPerSlot = o.threadsPerSlot ?? Math.max(1, Math.floor(defaultThreads() / o.parallel))
    for (let i = 0; i < o.parallel; i++)
      contexts.push(await model.createContext({nCtx, threads: threadsPerSlot, kvType: o.kvType, swaFull: o.swaFull ?? false}))
    // Refused by name before the server listens where a shift could not be exact (a sliding-window ring).
    if (o.contextShift) contexts[0]!.assertCanShift('--context-shift')
    // Prompts still run on their slot's own threads; the decode steps of every slot run together here.
    // Its threads: the slots' own budget when --threads gave one (threads x slots), else the physical cores.
    const groupThreads = Math.min(256, o.threadsPerSlot !== undefined ? o.threadsPerSlot * o.parallel : defaultThreads())
    if (o.batchDecode && o.parallel > 1) group = DecodeGroup.create(model, {threads: groupThreads, maxMembers: o.parallel})
    // A draft per slot (a generation holds its draft); a slot's generations with one decode outside the group.
    if (options.speculation)
      drafted = await openDrafts(model, options.speculation, {
        nCtx,
        kvType: o.kvType,
        threads: threadsPerSlot,
        count: o.parallel,
        ...(options.onWarning ? {onWarning: options.onWarning} : {}),
      })
    const modelIds = ids(basename(o.modelPath).replace(/\.gguf$/i, ''), o.aliases, o.acceptAnyModel)
    const modelId = modelIds.served
    // Two workers, whatever the slots: a render that runs to its budget in one leaves the other for everyone else.
    work = new PromptWorkers(model.gguf, template, {workers: 2, heapMb: PROMPT_WORKER_HEAP_MB})
    await work.started()
    const env: RequestEnv = {
      modelId,
      modelIds,
      systemFingerprint: build.systemFingerprint,
      tokenizer: model.tokenizer,
      template,
      work,
      nCtx,
      contextShift: o.contextShift !== undefined,
      limits: requestLimits,
    }
    // The template's capability probes, once, now: not inside the first request.
    toolFormatOf(template)
    thinkingSupport(env)
    const scheduler = new Scheduler(
      contexts.map((c, i) => new Session(c, group, drafted?.drafts[i])),
      {queueLimit: o.queueLimit, prefixCache: o.prefixCache},
    )
    const bytesPerPosition = contexts[0]!.kvBytes / nCtx
    const metrics = new Metrics(() => {
      // Without the prefix cache the slots' KV rows are never reused, so none count as cached.
      const tokens = o.prefixCache ? scheduler.slots.reduce((n, s) => n + s.session.cached.length, 0) : 0
      return {
        queueDepth: scheduler.queued,
        slotsBusy: scheduler.busy,
        slotsTotal: scheduler.slots.length,
        prefixCacheTokens: tokens,
        prefixCacheBytes: Math.round(tokens * bytesPerPosition),
        ...(group ? {batchedSteps: group.stats().steps, batchedTokens: group.stats().tokens} : {}),
      }
    })
    if (drafted?.status.active) metrics.speculation = drafted.status.source
    scheduler.onAssign = (_slot, reused) => metrics.recordPrefix(reused)
    const concurrent = Math.min(o.parallel, uvThreadpoolSize())
    if (concurrent < o.parallel) {
      log(
        `runner: warning: ${o.parallel} slots but only ${concurrent} engine calls run at once (UV_THREADPOOL_SIZE=${uvThreadpoolSize()}); start with UV_THREADPOOL_SIZE=${o.parallel} to run every slot at once`,
      )
    }
    const capabilities = {
      model: {
        id: modelId,
        aliases: otherIds(modelIds),
        accept_any_model: modelIds.acceptAny,
        file: o.modelPath,
        architecture: model.config.architecture,
        n_ctx_train: model.config.nCtxTrain,
        n_vocab: model.config.nVocab,
        adapters: await servedAdapters(model),
      },
      chat_template: {origin: template.origin, source: template.source},
      embeddings: embeddingCapabilities(model),
      slots: {
        parallel: o.parallel,
        n_ctx_per_slot: nCtx,
        threads_per_slot: threadsPerSlot,
        cpu_cores: availableParallelism(),
        concurrent_generations: concurrent,
        kv_type: o.kvType,
        kv_bytes_per_slot: contexts[0]!.kvBytes,
        kv_flat_bytes_per_slot: contexts[0]!.kvInfo.flatBytes,
        swa_ring_positions: contexts[0]!.kvInfo.ringPositions,
        context_shift: o.contextShift ? {keep: o.contextShift.keep} : false,
        batched_decode: group !== undefined,
        ...(group ? {batched_decode_threads: group.options.threads} : {}),
        scheduling:
          "each slot owns a context (its own KV cache) and runs its own native generation loop; prompts run on the slot's own threads " +
          '(threads_per_slot each). ' +
          (group
            ? "The slots' decode steps run together: each step evaluates the next token of every slot that has one in one forward pass " +
              '(one read of the weights), on batched_decode_threads threads. '
            : 'Decode steps of different slots run side by side, not batched (--parallel 1, or --no-batch-decode). ') +
          "A request's tokens do not depend on which slot runs it or what runs beside it.",
      },
      speculation: speculationCapability(drafted?.status, metrics),
      queue: {limit: o.queueLimit, full_status: 503},
      prefix_cache: {
        enabled: o.prefixCache,
        kind: 'slot-affinity',
        capacity_tokens: o.prefixCache ? nCtx * o.parallel : 0,
        capacity_bytes: o.prefixCache ? contexts[0]!.kvBytes * o.parallel : 0,
        eviction: 'least recently used slot',
        exact: true,
      },
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
        prompt_chars_per_slot: nCtx * longestPieceBytes(model.tokenizer),
        chat_template_budget: template.budget,
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
    const state = new ServerState(
      env,
      {scheduler, metrics, ...(o.contextShift ? {contextShift: o.contextShift} : {})},
      scheduler,
      metrics,
      capabilities,
      o.timeoutSeconds * 1000,
      model.gguf,
    )
    const app = buildApp(state, o.bodyLimitBytes, o.apiKey, corsOrigins, limits, (a) => installRequestLog(a, o.requestLog, log))
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
      state,
      close(graceMs = SHUTDOWN_GRACE_MS) {
        closing ??= (async () => {
          state.closing = true
          scheduler.close()
          const closed = app.close()
          await state.drain(graceMs)
          while (scheduler.busy > 0) await new Promise((resolve) => setTimeout(resolve, 5))
          app.server.closeAllConnections()
          await closed
          await work?.close()
          drafted?.dispose()
          for (const c of contexts) c.dispose()
          group?.dispose()
          model.dispose()
        })()
        return closing
      },
    }
  } catch (error) {
    await work?.close()
    drafted?.dispose()
    for (const c of contexts) c.dispose()
    group?.dispose()
    model.dispose()
    throw error
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
  state: ServerState,
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
      reply.raw.once('close', () => state.metrics.countRequest(route, reply.raw.writableFinished ? reply.raw.statusCode : 499))
    }
    // An unknown path is a 404 whatever the key: the not-found handler answers it.
    if (key && route !== 'unmatched' && !publicRoutes.has(route)) {
      const given = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? (req.headers['x-api-key'] as string | undefined)
      const ok = given !== undefined && Buffer.byteLength(given) === key.length && timingSafeEqual(Buffer.from(given), key)
      if (!ok) throw new ApiError(401, 'Incorrect API key provided (send it as "Authorization: Bearer KEY")', null, 'invalid_api_key')
    }
  })
  for (const r of ROUTES) app.route({method: r.method, url: r.url, handler: (req, reply) => r.handler(state, req, reply)})

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
