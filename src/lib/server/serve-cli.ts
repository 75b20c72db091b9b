/**
 * What `runner serve` does around startServer: its flags and what they give (a template file read,
 * the timeout checked, the request log's format), the warning for an open address without a key, the startup line, and the graceful close
 * on SIGINT or SIGTERM.
 */

import {Flags, type Interfaces} from '@oclif/core'

import {
  contextShiftFlags,
  type DraftFlagValues,
  draftFlags,
  listenForInterrupt,
  loraFlag,
  loraFromFlags,
  noGpuFlag,
  refuseGpuLayers,
  type RopeFlagValues,
  ropeFlags,
  ropeFromFlags,
  speculationFromFlags,
  swaFullFlag,
  warnLine,
} from '../cli/index.js'
import {MAX_CONTEXT_SIZE} from '../engine/index.js'
import {BUILTIN_TEMPLATE_NAMES, chatTemplateOverride} from '../chat/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import {CONNECTION_DEFAULTS} from './connections.js'
import {type ServeSignatures, splitId} from './catalog.js'
import {describeKeepAlive, keepAliveFlag} from './keep-alive.js'
import {LOG_FORMATS, type LogFormat} from './request-log.js'
import {REQUEST_LIMIT_DEFAULTS, REQUEST_LIMIT_FLAGS, type RequestLimitFlag, type RequestLimits} from './request-limits.js'
import {type RunningServer, SERVE_DEFAULTS, type ServeOptions, SHUTDOWN_GRACE_MS} from './server.js'

/** The flags of `runner serve`. */
export const serveFlags = {
  model: Flags.string({
    char: 'm',
    description:
      'GGUF model file, or the name of a model in the models folder; repeat for several models, each as ID=FILE to name it (they load when a request names them; docs/serving-many-models.md). Without -m: every model of --models-dir or the models folder',
    helpValue: '[ID=]FILE|NAME',
    multiple: true,
  }),
  'models-dir': Flags.string({
    description:
      'serve every GGUF file (and pulled model) of this folder, each loaded when a request names it (default: none; without -m, the models folder)',
    helpValue: 'DIR',
  }),
  'keep-alive': Flags.string({
    description:
      'how long a model stays loaded after its last request when the request gives no keep_alive: seconds or a duration ("5m", "1h"), 0 to unload at once, -1 forever (default: 5m with several models, -1 with one -m)',
    helpValue: 'DURATION',
  }),
  'max-models': Flags.integer({
    aliases: ['models-max'],
    description:
      "most models loaded at once (llama-server's --models-max); loading one more first unloads the least recently used idle model",
    default: SERVE_DEFAULTS.maxModels,
    min: 1,
    max: 1024,
  }),
  'models-memory': Flags.string({
    description:
      'memory the loaded models may hold together (files and KV caches), in bytes or with K, M, G, T (powers of 1024); least recently used idle models unload to make room (default: no budget)',
    helpValue: 'SIZE',
  }),
  'model-sig': Flags.string({
    description:
      "a model's OpenSSF Model Signing bundle, checked before it loads (docs/model-signing.md): BUNDLE for one -m, ID=BUNDLE per model with several (repeatable); default with --model-pubkey: FILE.sig beside each model file when there is one",
    helpValue: '[ID=]BUNDLE',
    multiple: true,
  }),
  'model-pubkey': Flags.string({
    description: "the signer's ECDSA P-256/P-384/P-521 public key (PEM) every bundle must verify under (default: none)",
    helpValue: 'PEM',
  }),
  'require-signed-model': Flags.boolean({
    description:
      'refuse to load a model without a verified signature: 409 model_signature_refused (exit 3 for a one-model server at start)',
  }),
  'load-timeout': Flags.string({
    description: 'seconds a request waits for its model to load (then 503 model_loading with Retry-After; the load goes on)',
    default: String(SERVE_DEFAULTS.loadTimeoutSeconds),
    helpValue: 'SECONDS',
  }),
  host: Flags.string({
    description: 'address to bind (anything but loopback without --api-key prints a warning)',
    default: SERVE_DEFAULTS.host,
  }),
  port: Flags.integer({
    description: 'port (0: any free port; the startup line says which)',
    default: SERVE_DEFAULTS.port,
    min: 0,
    max: 65535,
  }),
  parallel: Flags.integer({
    char: 'P',
    description: 'slots: requests generated at once, each with its own KV cache',
    default: SERVE_DEFAULTS.parallel,
    min: 1,
    max: 256,
  }),
  'ctx-size': Flags.integer({
    char: 'c',
    aliases: ['ctx'],
    description:
      "context size of each slot in tokens (default: the model's training context, at most 4096; beyond the training context runs with a warning)",
    min: 1,
    max: MAX_CONTEXT_SIZE,
  }),
  ...noGpuFlag,
  threads: Flags.integer({
    char: 't',
    description: 'threads per slot (default: physical cores divided among the slots, at least 1)',
    min: 1,
    max: 256,
  }),
  'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: SERVE_DEFAULTS.kvType}),
  ...swaFullFlag(),
  ...contextShiftFlags,
  'api-key': Flags.string({
    description: 'require "Authorization: Bearer KEY" on every route but /health',
    env: 'RUNNER_API_KEY',
    helpValue: 'KEY',
  }),
  'chat-template': Flags.string({
    description: `chat template: a built-in (${BUILTIN_TEMPLATE_NAMES.join(', ')}, as llama.cpp names them) or a Jinja template file; a name wins over a file of that name (give ./NAME) (default: the model's own, else chatml)`,
    helpValue: 'NAME|FILE',
  }),
  alias: Flags.string({
    description:
      'a model id clients may send as "model", besides the file name without .gguf (repeatable; the first is the id responses name)',
    helpValue: 'NAME',
    multiple: true,
  }),
  'accept-any-model': Flags.boolean({
    description:
      'accept any "model" id, as llama-server does (responses still name the served id); default: only the file name and --alias',
  }),
  cors: Flags.string({
    description: 'let browser pages from ORIGIN call the API (CORS; repeatable; "*" for any origin); default: none',
    helpValue: 'ORIGIN',
    multiple: true,
  }),
  timeout: Flags.string({
    description: 'seconds a request may take from arrival, queue and prompt included (then 408)',
    default: String(SERVE_DEFAULTS.timeoutSeconds),
    helpValue: 'SECONDS',
  }),
  queue: Flags.integer({
    description: 'requests that may wait for a slot; more are refused with 503 and Retry-After',
    default: SERVE_DEFAULTS.queueLimit,
    min: 0,
  }),
  'body-limit': Flags.integer({
    description: 'largest request body in bytes (larger: 413)',
    default: SERVE_DEFAULTS.bodyLimitBytes,
    min: 1024,
  }),
  'headers-timeout': Flags.string({
    description: "seconds a client may take to send a request's headers (then 408 and the connection closed)",
    default: String(CONNECTION_DEFAULTS.headersTimeoutSeconds),
    helpValue: 'SECONDS',
  }),
  'body-timeout': Flags.string({
    description: 'seconds a client may take to send a whole request, body included (then 408 and the connection closed)',
    default: String(CONNECTION_DEFAULTS.bodyTimeoutSeconds),
    helpValue: 'SECONDS',
  }),
  'max-connections': Flags.integer({
    description: 'connections open at once; more are closed at once',
    default: CONNECTION_DEFAULTS.maxConnections,
    min: 1,
  }),
  'max-connections-per-client': Flags.integer({
    description: 'connections one client address may hold; more are closed at once',
    default: CONNECTION_DEFAULTS.maxConnectionsPerClient,
    min: 1,
  }),
  'no-prefix-cache': Flags.boolean({description: 'never reuse KV rows between requests (every prompt is evaluated whole)'}),
  'no-batch-decode': Flags.boolean({
    description: "run each slot's decode steps on its own instead of one forward pass for all slots (same tokens, slower with -P above 1)",
  }),
  'log-format': Flags.string({
    description:
      'one stderr line per request (method, route, status, tokens, ms; never prompts or headers): text, json (one object a line) or none',
    options: [...LOG_FORMATS],
    default: SERVE_DEFAULTS.requestLog,
  }),
  ...loraFlag,
  ...ropeFlags,
  ...draftFlags,
  ...limitFlags(),
}

/** --max-messages and the other request limits, from their table (./request-limits.ts). */
function limitFlags() {
  const entries = Object.entries(REQUEST_LIMIT_FLAGS) as Array<[keyof RequestLimits, {flag: string; help: string}]>
  return Object.fromEntries(
    entries.map(([key, {flag, help}]) => [
      flag.slice(2),
      Flags.integer({description: `${help} (more: 400)`, default: REQUEST_LIMIT_DEFAULTS[key], min: 1}),
    ]),
  ) as Record<RequestLimitFlag, Interfaces.OptionFlag<number>>
}

type ServeFlagValues = {
  readonly model?: string[]
  readonly 'models-dir'?: string
  readonly 'keep-alive'?: string
  readonly 'max-models': number
  readonly 'models-memory'?: string
  readonly 'load-timeout': string
  readonly 'model-sig'?: string[]
  readonly 'model-pubkey'?: string
  readonly 'require-signed-model'?: boolean
  readonly host: string
  readonly port: number
  readonly parallel: number
  readonly 'ctx-size'?: number
  readonly threads?: number
  readonly 'kv-type': string
  readonly 'swa-full'?: boolean
  readonly 'context-shift'?: boolean
  readonly keep?: number
  readonly 'n-gpu-layers'?: number
  readonly 'api-key'?: string
  readonly 'chat-template'?: string
  readonly alias?: string[]
  readonly 'accept-any-model': boolean
  readonly cors?: string[]
  readonly timeout: string
  readonly queue: number
  readonly 'body-limit': number
  readonly 'no-prefix-cache': boolean
  readonly 'no-batch-decode': boolean
  readonly 'headers-timeout': string
  readonly 'body-timeout': string
  readonly 'max-connections': number
  readonly 'max-connections-per-client': number
  readonly lora?: string[]
  readonly 'log-format': string
} & RopeFlagValues &
  DraftFlagValues &
  Readonly<Record<RequestLimitFlag, number>>

/** startServer's options from the parsed flags (the timeout checked, a template file read). */
export function serveOptions(flags: ServeFlagValues): ServeOptions {
  refuseGpuLayers(flags['n-gpu-layers'])
  const speculation = speculationFromFlags(flags)
  return {
    models: flags.model ?? [],
    ...(flags['models-dir'] !== undefined ? {modelsDir: flags['models-dir']} : {}),
    ...(flags['keep-alive'] !== undefined ? {keepAlive: keepAliveFlag(flags['keep-alive'])} : {}),
    maxModels: flags['max-models'],
    ...(flags['models-memory'] !== undefined ? {modelsMemoryBytes: sizeFlag('--models-memory', flags['models-memory'])} : {}),
    loadTimeoutSeconds: secondsFlag('--load-timeout', flags['load-timeout']),
    ...signaturesFromFlags(flags),
    ...(speculation ? {speculation} : {}),
    lora: loraFromFlags(flags.lora),
    rope: ropeFromFlags(flags),
    host: flags.host,
    port: flags.port,
    parallel: flags.parallel,
    nCtx: flags['ctx-size'],
    onWarning: warnLine,
    threadsPerSlot: flags.threads,
    kvType: flags['kv-type'] as 'f16' | 'f32',
    swaFull: flags['swa-full'] === true,
    ...(flags['context-shift'] ? {contextShift: {keep: flags.keep ?? 0}} : {}),
    queueLimit: flags.queue,
    timeoutSeconds: parseTimeoutFlag(flags.timeout),
    bodyLimitBytes: flags['body-limit'],
    apiKey: flags['api-key'],
    chatTemplate: readTemplateFlag(flags['chat-template']),
    prefixCache: !flags['no-prefix-cache'],
    batchDecode: !flags['no-batch-decode'],
    aliases: flags.alias,
    acceptAnyModel: flags['accept-any-model'],
    corsOrigins: flags.cors,
    requestLog: flags['log-format'] as LogFormat,
    connections: {
      headersTimeoutSeconds: secondsFlag('--headers-timeout', flags['headers-timeout']),
      bodyTimeoutSeconds: secondsFlag('--body-timeout', flags['body-timeout']),
      maxConnections: flags['max-connections'],
      maxConnectionsPerClient: flags['max-connections-per-client'],
    },
    requestLimits: Object.fromEntries(
      (Object.keys(REQUEST_LIMIT_FLAGS) as Array<keyof RequestLimits>).map((k) => [
        k,
        flags[REQUEST_LIMIT_FLAGS[k].flag.slice(2) as RequestLimitFlag],
      ]),
    ) as unknown as RequestLimits,
  }
}

/** --model-sig (BUNDLE or ID=BUNDLE, an existing path winning), --model-pubkey, --require-signed-model. */
function signaturesFromFlags(flags: ServeFlagValues): {signatures?: ServeSignatures} {
  const bundles: Record<string, string> = {}
  for (const text of flags['model-sig'] ?? []) {
    const {id = '', value} = splitId(text)
    if (bundles[id] !== undefined)
      throw new RunnerError('SERVE_BAD_OPTION', `--model-sig names two bundles for ${id === '' ? 'the model' : id}`, ExitCode.usage)
    bundles[id] = value
  }
  const require = flags['require-signed-model'] === true
  if (Object.keys(bundles).length === 0 && flags['model-pubkey'] === undefined && !require) return {}
  return {
    signatures: {
      ...(flags['model-pubkey'] !== undefined ? {publicKeyPath: flags['model-pubkey']} : {}),
      bundles,
      require,
    },
  }
}

const SIZE_UNITS: Readonly<Record<string, number>> = {'': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40}

/** A size as a flag gives it: bytes, or a number with K, M, G or T (powers of 1024; KiB, GB... read alike). */
export function sizeFlag(name: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim())
  const bytes = m ? Math.round(Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase()]!) : NaN
  if (!Number.isSafeInteger(bytes) || bytes <= 0)
    throw new RunnerError(
      'SERVE_BAD_OPTION',
      `${name} ${JSON.stringify(text)} must be a size such as 8G, 512M or a number of bytes`,
      ExitCode.usage,
    )
  return bytes
}

/** A number of seconds as a flag gives it (startServer checks the range). */
function secondsFlag(name: string, text: string): number {
  const v = Number(text)
  if (text.trim() === '' || !Number.isFinite(v))
    throw new RunnerError('SERVE_BAD_OPTION', `${name} ${JSON.stringify(text)} must be a number of seconds`, ExitCode.usage)
  return v
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i

/** --timeout: seconds, any positive number. */
export function parseTimeoutFlag(text: string): number {
  const seconds = Number(text)
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new RunnerError('BAD_FLAG', `--timeout ${JSON.stringify(text)} must be a positive number of seconds`, ExitCode.usage)
  return seconds
}

/** --chat-template: a built-in template's name or a Jinja template file (lib/chat chatTemplateOverride). */
export function readTemplateFlag(value: string | undefined): string | undefined {
  return chatTemplateOverride(value)
}

/** The warning for serving beyond loopback without a key, if that is what was asked. */
export function exposureWarning(host: string, apiKey: string | undefined): string | undefined {
  return !LOOPBACK.test(host) && apiKey === undefined
    ? `runner: warning: serving on ${host} without --api-key: anyone who can reach this address can use the model`
    : undefined
}

/** The line a client (or a test) waits for: where it listens and with what. */
export function startupLine(server: RunningServer): string {
  const fleet = server.core.fleet
  if (fleet.entries.length > 1 || !fleet.hostOf(fleet.first)) {
    const ids = fleet.entries.map((e) => e.id)
    const shown = ids.length > 6 ? `${ids.slice(0, 6).join(', ')} and ${ids.length - 6} more` : ids.join(', ')
    const p = fleet.policy
    return (
      `runner serve: listening on ${server.url} · ${ids.length} model(s), loaded on first request: ${shown} · ` +
      `at most ${p.maxModels} loaded` +
      (p.memoryBytes !== undefined ? ` within ${p.memoryBytes} bytes` : '') +
      ` · keep_alive ${describeKeepAlive(p.keepAlive)}`
    )
  }
  const caps = server.core.capabilities() as {
    model: {adapters: readonly unknown[]}
    slots: {parallel: number; n_ctx_per_slot: number; threads_per_slot: number}
    chat_template: {origin: string}
    speculation: {active: boolean; source: string | null}
  }
  const adapters = caps.model.adapters.length
  return (
    `runner serve: listening on ${server.url} · model ${fleet.first.id} · ${caps.slots.parallel} slot(s) × ${caps.slots.n_ctx_per_slot} tokens, ` +
    `${caps.slots.threads_per_slot} thread(s) each · chat template ${caps.chat_template.origin}` +
    (adapters > 0 ? ` · ${adapters} LoRA adapter(s)` : '') +
    (caps.speculation.active ? ` · speculative decoding (${caps.speculation.source})` : '')
  )
}

/**
 * Listen now for SIGINT and SIGTERM; on the first, close gracefully (in-flight requests get
 * SHUTDOWN_GRACE_MS). Resolves once the server is closed. Call it before printing the startup line:
 * a client may signal as soon as it reads that line.
 */
export function closeOnSignal(server: RunningServer, diagnostic: (line: string) => void): Promise<void> {
  const interrupt = listenForInterrupt(['SIGINT', 'SIGTERM'])
  return new Promise<void>((resolve) => {
    interrupt.signal.addEventListener('abort', () => {
      diagnostic(`runner: ${String(interrupt.signal.reason)}: closing (in-flight requests get ${SHUTDOWN_GRACE_MS / 1000} s)`)
      server.close().then(resolve, (error: unknown) => {
        diagnostic(`runner: error while closing: ${(error as Error).message}`)
        resolve()
      })
    })
  })
}
