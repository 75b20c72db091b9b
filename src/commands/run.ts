import {Flags} from '@oclif/core'

import {RunnerCommand} from '../lib/cli/runner-command.js'
import {samplingFlags, samplingFromFlags} from '../lib/cli/sampling-flags.js'
import {Model} from '../lib/engine/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {readGgufModel} from '../lib/gguf/index.js'
import {prepareReceipt, writeReceipt} from '../lib/receipt/index.js'
import {encodePrompt} from '../lib/tokenizer/index.js'
import {formatBytes} from '../lib/util/format.js'
import {readPrompt} from '../lib/util/prompt-input.js'

export default class Run extends RunnerCommand {
  static override summary = 'Generate text from a prompt with a GGUF model.'
  static override description =
    'Loads the model (memory-mapped, no copy), evaluates the prompt and streams the continuation to stdout as it is ' +
    'generated. A summary (load time, prompt and decode speed, peak memory) goes to stderr. The prompt comes from ' +
    '--prompt, --file or standard input. Ctrl+C stops cleanly and keeps what was generated (exit 130).'

  static override examples = [
    {description: 'Greedy continuation, the same llama.cpp prints', command: '<%= config.bin %> run -m ../shared/models/stories260K.gguf -p "Once upon a time" -n 64 --temp 0'},
    {description: 'Sampled, reproducible with a seed', command: '<%= config.bin %> run -m model.gguf -p "Write a haiku" --temp 0.7 --top-p 0.9 --seed 42'},
    {description: 'Prompt from a file, result as JSON for scripts', command: '<%= config.bin %> run -m model.gguf --file prompt.txt -n 128 --json'},
    {description: 'Prompt from standard input', command: 'echo "Once upon a time" | <%= config.bin %> run -m model.gguf -n 32'},
    {description: 'A signed receipt anyone with the model can replay (runner verify)', command: '<%= config.bin %> run -m model.gguf -p "Hello" --seed 7 --transcript r.json --sign-key alice.key'},
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
    prompt: Flags.string({char: 'p', description: 'prompt text', exclusive: ['file'], helpValue: 'TEXT'}),
    file: Flags.string({char: 'f', description: 'read the prompt from a file', exclusive: ['prompt'], helpValue: 'FILE'}),
    'n-predict': Flags.integer({char: 'n', description: 'tokens to generate; -1 = until end of text or a full context', default: -1, min: -1}),
    'ctx-size': Flags.integer({char: 'c', description: "context size in tokens (default: the model's, at most 4096)", min: 1}),
    'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step while reading the prompt', default: 512, min: 1}),
    ...samplingFlags,
    threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
    'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: 'f16'}),
    'no-bos': Flags.boolean({description: 'do not add the beginning-of-sequence token the model asks for'}),
    special: Flags.boolean({description: 'read special-token text in the prompt (<|im_start|>, <s>, ...) as those tokens, as a chat template writes them; a BOS already written is not added again'}),
    json: Flags.boolean({description: 'print one JSON document (text, token ids, finish reason, timings) instead of streaming'}),
    transcript: Flags.string({description: 'write a receipt of this run (model and build hashes, every setting, seed, tokens, bytes) that `runner verify` replays', helpValue: 'FILE'}),
    'sign-key': Flags.string({description: 'sign the receipt with this Ed25519 private key (from `runner keygen`)', dependsOn: ['transcript'], helpValue: 'KEY'}),
    'transcript-prev': Flags.string({description: 'link the receipt to a previous one by its chain hash', dependsOn: ['transcript'], helpValue: 'FILE'}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Run)
    const prompt = await readPrompt(flags.prompt, flags.file)
    const chosen = samplingFromFlags(flags)
    // A receipt records each token's log-probability; reporting them does not change sampling.
    const sampling = flags.transcript ? {...chosen, logprobs: true} : chosen

    const t0 = performance.now()
    // The receipt's inputs (output folder, key, previous receipt) are checked before the model loads.
    const receipt = flags.transcript
      ? await prepareReceipt(readGgufModel(flags.model), {path: flags.transcript, signKeyPath: flags['sign-key'], prevPath: flags['transcript-prev']})
      : undefined
    const model = await Model.load(flags.model, {onProgress: progressLine(flags.json)})
    const loadMs = performance.now() - t0
    const tokenizer = model.tokenizer
    const ids = encodePrompt(tokenizer, prompt, {addBos: !flags['no-bos'], parseSpecial: flags.special === true})
    const nCtx = flags['ctx-size'] ?? Math.min(model.config.nCtxTrain, 4096)
    if (ids.length >= nCtx) {
      throw new RunnerError('PROMPT_TOO_LONG', `the prompt is ${ids.length} tokens but the context holds ${nCtx}; raise -c (at most the model's ${model.config.nCtxTrain}) or shorten the prompt`, ExitCode.usage)
    }
    const ctx = await model.createContext({nCtx, nBatch: flags['batch-size'], threads: flags.threads, kvType: flags['kv-type'] as 'f16' | 'f32'})
    // -1: no cap of our own; the engine stops when the context is full and says so (finish reason "context").
    const maxTokens = flags['n-predict'] < 0 ? nCtx : flags['n-predict']

    const abort = new AbortController()
    const onSigint = () => abort.abort()
    process.once('SIGINT', onSigint)
    const stopTokens = [...tokenizer.eogTokens]
    const started = new Date()
    const stream = ctx.generate(ids, {maxTokens, sampling, signal: abort.signal, stopTokens})
    const logprobs: number[] = []
    try {
      for await (const t of stream) {
        if (t.token >= 0) logprobs.push(t.logprob)
        if (!flags.json) process.stdout.write(t.text)
      }
    } finally {
      process.removeListener('SIGINT', onSigint)
    }
    const result = await stream.result
    const finished = new Date()
    if (receipt && flags.transcript) {
      const written = await writeReceipt(flags.transcript, receipt, {
        architecture: model.config.architecture,
        started,
        finished,
        config: {maxTokens, nCtx, nBatch: ctx.options.nBatch, threads: ctx.options.threads, kvType: ctx.options.kvType, addBos: !flags['no-bos'], parseSpecial: flags.special === true, stopTokens, sampling},
        prompt: {text: prompt, tokens: ids},
        output: {tokens: result.tokens, text: result.text, bytes: tokenizer.decodeBytes(result.tokens), finishReason: result.finishReason, logprobs},
      })
      if (!flags.json) process.stderr.write(`receipt ${flags.transcript} (chain ${written.chain}${receipt.key ? ', signed' : ''})\n`)
    }
    const rss = process.resourceUsage().maxRSS * 1024
    const timings = {
      loadMs: round(loadMs),
      promptMs: round(result.promptMs),
      decodeMs: round(result.decodeMs),
      promptTokensPerSecond: round((1000 * result.promptTokens) / Math.max(result.promptMs, 1e-9)),
      decodeTokensPerSecond: round((1000 * result.tokens.length) / Math.max(result.decodeMs, 1e-9)),
    }
    if (flags.json) {
      this.log(
        JSON.stringify({
          text: result.text,
          tokens: result.tokens,
          promptTokens: ids,
          finishReason: result.finishReason,
          seed: sampling.seed.toString(),
          timings,
          peakRssBytes: rss,
        }),
      )
    } else {
      if (process.stdout.isTTY && !result.text.endsWith('\n')) process.stdout.write('\n')
      process.stderr.write(
        `load ${timings.loadMs} ms · prompt ${result.promptTokens} tokens, ${timings.promptTokensPerSecond} tok/s · ` +
          `decode ${result.tokens.length} tokens, ${timings.decodeTokensPerSecond} tok/s · peak RSS ${formatBytes(rss)} · ` +
          `${result.finishReason} · seed ${sampling.seed}\n`,
      )
    }
    ctx.dispose()
    model.dispose()
    if (result.finishReason === 'aborted') this.exit(ExitCode.interrupted)
  }
}

function round(x: number): number {
  return Math.round(x * 10) / 10
}

/** A progress line on stderr while a big model loads (only on a terminal, never with --json). */
function progressLine(json: boolean): ((done: number, total: number) => void) | undefined {
  if (json || !process.stderr.isTTY) return undefined
  return (done, total) => {
    process.stderr.write(`\rloading ${((100 * done) / Math.max(total, 1)).toFixed(0)}% (${formatBytes(done)} of ${formatBytes(total)})`)
    if (done >= total) process.stderr.write('\r\x1b[K')
  }
}
