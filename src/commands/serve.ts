import {RunnerCommand} from '../lib/cli/index.js'
import {closeOnSignal, exposureWarning, serveFlags, serveOptions, startServer, startupLine} from '../lib/server/index.js'

export default class Serve extends RunnerCommand {
  static override summary = 'Serve GGUF models over an OpenAI-compatible HTTP API (and Anthropic, Responses, Ollama).'
  static override description =
    'Starts an HTTP server (chat and text completions, streaming, models, capabilities, health, Prometheus metrics) on ' +
    'loopback by default. --parallel slots share the model, each with its own KV cache; further requests queue up to ' +
    '--queue and are refused with 503 beyond it. A request whose prompt starts like an earlier one reuses its KV rows. ' +
    'Ctrl+C (SIGINT) or SIGTERM stops accepting, lets in-flight requests finish for a few seconds, cancels the rest ' +
    'and exits 0. Several -m ID=FILE, --models-dir DIR, or no -m (the models folder) serve several models: each loads when a request ' +
    'names it and unloads after keep_alive, or for room (docs/serving-many-models.md). Every route, field and error: docs/http-api.md.'

  static override examples = [
    {description: 'Serve on http://127.0.0.1:8080', command: '<%= config.bin %> serve -m ../shared/models/stories260K.gguf'},
    {
      description: "A pulled model by name, llama.cpp's built-in llama3 template, one JSON log line per request",
      command: '<%= config.bin %> serve -m OWNER/REPO:Q4_K_M --chat-template llama3 --log-format json',
    },
    {
      description: 'Four slots, 2048 tokens each, any free port; their decode steps run as one forward pass',
      command: '<%= config.bin %> serve -m model.gguf --parallel 4 --ctx 2048 --port 0',
    },
    {
      description: 'The same with each slot stepping on its own (the same tokens; to compare speed)',
      command: '<%= config.bin %> serve -m model.gguf --parallel 4 --no-batch-decode',
    },
    {
      description: 'On every interface, with a key clients must send',
      command: '<%= config.bin %> serve -m model.gguf --host 0.0.0.0 --api-key "$KEY"',
    },
    {
      description: 'Facing a network: shorter limits for slow clients, fewer connections per address',
      command:
        '<%= config.bin %> serve -m model.gguf --host 0.0.0.0 --api-key "$KEY" --headers-timeout 5 --body-timeout 15 --max-connections-per-client 8',
    },
    {
      description: 'Agent histories longer than the defaults allow: more messages and tools per request',
      command: '<%= config.bin %> serve -m model.gguf --ctx 32768 --max-messages 8192 --max-tools 256',
    },
    {
      description: 'Speculative decoding on every slot, and context shift for long answers (docs/speculative.md, docs/long-context.md)',
      command: '<%= config.bin %> serve -m model.gguf --draft-lookup --context-shift --keep -1',
    },
    {
      description: 'Two models, each loaded when a request names it ("model": "small"); one loaded at a time, kept 10 minutes',
      command: '<%= config.bin %> serve -m small=stories260K.gguf -m big=model.gguf --max-models 1 --keep-alive 10m',
    },
    {
      description: 'The models folder within 24 GiB of weights and KV caches; a request waits at most 2 minutes for its model',
      command: '<%= config.bin %> serve --models-memory 24G --load-timeout 120',
    },
    {
      description: 'Every model of a folder, each checked against its FILE.sig bundle (runner sign) before it loads',
      command: '<%= config.bin %> serve --models-dir ./models --model-pubkey signer.pub.pem --require-signed-model',
    },
    {
      description: 'Accept the default ids clients send (gpt-4o, ...) and browser apps from one origin',
      command: '<%= config.bin %> serve -m model.gguf --accept-any-model --cors http://localhost:5173',
    },
    {
      description: 'Then, from another shell',
      command:
        'curl http://127.0.0.1:8080/v1/chat/completions -H "content-type: application/json" -d \'{"model":"stories260K","messages":[{"role":"user","content":"Hi"}]}\'',
    },
  ]

  static override flags = serveFlags

  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    const options = serveOptions(flags)
    const warning = exposureWarning(options.host!, options.apiKey)
    if (warning) process.stderr.write(`${warning}\n`)
    const diagnostic = (line: string) => process.stderr.write(`${line}\n`)
    const server = await startServer(options, diagnostic)
    // Listening for signals first, then the startup line: a client may signal as soon as it reads the line.
    const closed = closeOnSignal(server, diagnostic)
    this.log(startupLine(server))
    await closed
  }
}
