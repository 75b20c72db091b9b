import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/index.js'
import {
  closeOnSignal,
  exposureWarning,
  parseTimeoutFlag,
  readTemplateFlag,
  SERVE_DEFAULTS,
  startServer,
  startupLine,
} from '../lib/server/index.js'

export default class Serve extends RunnerCommand {
  static override summary = 'Serve a GGUF model over an OpenAI-compatible HTTP API.'
  static override description =
    'Starts an HTTP server (chat and text completions, streaming, models, capabilities, health, Prometheus metrics) on ' +
    'loopback by default. --parallel slots share the model, each with its own KV cache; further requests queue up to ' +
    '--queue and are refused with 503 beyond it. A request whose prompt starts like an earlier one reuses its KV rows. ' +
    'Ctrl+C (SIGINT) or SIGTERM stops accepting, lets in-flight requests finish for a few seconds, cancels the rest ' +
    'and exits 0. Every route, field and error: docs/http-api.md.'

  static override examples = [
    {description: 'Serve on http://127.0.0.1:8080', command: '<%= config.bin %> serve -m ../shared/models/stories260K.gguf'},
    {
      description: 'Four slots, 2048 tokens each, any free port',
      command: '<%= config.bin %> serve -m model.gguf --parallel 4 --ctx 2048 --port 0',
    },
    {
      description: 'On every interface, with a key clients must send',
      command: '<%= config.bin %> serve -m model.gguf --host 0.0.0.0 --api-key "$KEY"',
    },
    {
      description: 'Then, from another shell',
      command:
        'curl http://127.0.0.1:8080/v1/chat/completions -H "content-type: application/json" -d \'{"model":"stories260K","messages":[{"role":"user","content":"Hi"}]}\'',
    },
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
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
    ctx: Flags.integer({char: 'c', description: "context size of each slot in tokens (default: the model's, at most 4096)", min: 1}),
    threads: Flags.integer({
      char: 't',
      description: 'threads per slot (default: physical cores divided among the slots, at least 1)',
      min: 1,
      max: 256,
    }),
    'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: SERVE_DEFAULTS.kvType}),
    'api-key': Flags.string({
      description: 'require "Authorization: Bearer KEY" on every route but /health',
      env: 'RUNNER_API_KEY',
      helpValue: 'KEY',
    }),
    'chat-template': Flags.string({
      description: 'chat template: "chatml" or a Jinja template file (default: the model\'s own, else ChatML)',
      helpValue: 'chatml|FILE',
    }),
    alias: Flags.string({description: 'model id clients send as "model" (default: the file name without .gguf)', helpValue: 'NAME'}),
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
    'no-prefix-cache': Flags.boolean({description: 'never reuse KV rows between requests (every prompt is evaluated whole)'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    const timeoutSeconds = parseTimeoutFlag(flags.timeout)
    const chatTemplate = readTemplateFlag(flags['chat-template'])
    const warning = exposureWarning(flags.host, flags['api-key'])
    if (warning) process.stderr.write(`${warning}\n`)
    const diagnostic = (line: string) => process.stderr.write(`${line}\n`)
    const server = await startServer(
      {
        modelPath: flags.model,
        host: flags.host,
        port: flags.port,
        parallel: flags.parallel,
        nCtx: flags.ctx,
        threadsPerSlot: flags.threads,
        kvType: flags['kv-type'] as 'f16' | 'f32',
        queueLimit: flags.queue,
        timeoutSeconds,
        bodyLimitBytes: flags['body-limit'],
        apiKey: flags['api-key'],
        chatTemplate,
        prefixCache: !flags['no-prefix-cache'],
        alias: flags.alias,
      },
      diagnostic,
    )
    // Listening for signals first, then the startup line: a client may signal as soon as it reads the line.
    const closed = closeOnSignal(server, diagnostic)
    this.log(startupLine(server))
    await closed
  }
}
