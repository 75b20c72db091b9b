import {Flags} from '@oclif/core'

import {loadProgress, RunnerCommand, samplingFlags, samplingFromFlags, withInterrupt} from '../lib/cli/index.js'
import {ExitCode} from '../lib/errors.js'
import {runPrompt} from '../lib/run/index.js'
import {formatBytes, readPrompt} from '../lib/util/index.js'

export default class Run extends RunnerCommand {
  static override summary = 'Generate text from a prompt with a GGUF model.'
  static override description =
    'Loads the model (memory-mapped, no copy), evaluates the prompt and streams the continuation to stdout as it is ' +
    'generated. A summary (load time, prompt and decode speed, peak memory) goes to stderr. The prompt comes from ' +
    '--prompt, --file or standard input. Ctrl+C stops cleanly and keeps what was generated (exit 130).'

  static override examples = [
    {
      description: 'Greedy continuation, the same llama.cpp prints',
      command: '<%= config.bin %> run -m ../shared/models/stories260K.gguf -p "Once upon a time" -n 64 --temp 0',
    },
    {
      description: 'Sampled, reproducible with a seed',
      command: '<%= config.bin %> run -m model.gguf -p "Write a haiku" --temp 0.7 --top-p 0.9 --seed 42',
    },
    {
      description: 'Prompt from a file, result as JSON for scripts',
      command: '<%= config.bin %> run -m model.gguf --file prompt.txt -n 128 --json',
    },
    {description: 'Prompt from standard input', command: 'echo "Once upon a time" | <%= config.bin %> run -m model.gguf -n 32'},
    {
      description: 'A signed receipt anyone with the model can replay (runner verify)',
      command: '<%= config.bin %> run -m model.gguf -p "Hello" --seed 7 --transcript r.json --sign-key alice.key',
    },
  ]

  static override flags = {
    model: Flags.string({char: 'm', description: 'GGUF model file (or any shard of a split model)', required: true, helpValue: 'FILE'}),
    prompt: Flags.string({char: 'p', description: 'prompt text', exclusive: ['file'], helpValue: 'TEXT'}),
    file: Flags.string({char: 'f', description: 'read the prompt from a file', exclusive: ['prompt'], helpValue: 'FILE'}),
    'n-predict': Flags.integer({
      char: 'n',
      description: 'tokens to generate; -1 = until end of text or a full context',
      default: -1,
      min: -1,
    }),
    'ctx-size': Flags.integer({char: 'c', description: "context size in tokens (default: the model's, at most 4096)", min: 1}),
    'batch-size': Flags.integer({char: 'b', description: 'tokens per forward step while reading the prompt', default: 512, min: 1}),
    ...samplingFlags,
    threads: Flags.integer({char: 't', description: 'threads (default: physical cores, at most 32)', min: 1, max: 256}),
    'kv-type': Flags.string({description: 'KV cache type', options: ['f16', 'f32'], default: 'f16'}),
    'no-bos': Flags.boolean({description: 'do not add the beginning-of-sequence token the model asks for'}),
    special: Flags.boolean({
      description:
        'read special-token text in the prompt (<|im_start|>, <s>, ...) as those tokens, as a chat template writes them; a BOS already written is not added again',
    }),
    json: Flags.boolean({description: 'print one JSON document (text, token ids, finish reason, timings) instead of streaming'}),
    transcript: Flags.string({
      description: 'write a receipt of this run (model and build hashes, every setting, seed, tokens, bytes) that `runner verify` replays',
      helpValue: 'FILE',
    }),
    'sign-key': Flags.string({
      description: 'sign the receipt with this Ed25519 private key (from `runner keygen`)',
      dependsOn: ['transcript'],
      helpValue: 'KEY',
    }),
    'transcript-prev': Flags.string({
      description: 'link the receipt to a previous one by its chain hash',
      dependsOn: ['transcript'],
      helpValue: 'FILE',
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Run)
    const prompt = await readPrompt(flags.prompt, flags.file)
    const sampling = samplingFromFlags(flags)
    const receipt =
      flags.transcript === undefined
        ? undefined
        : {path: flags.transcript, signKeyPath: flags['sign-key'], prevPath: flags['transcript-prev']}
    const r = await withInterrupt((signal) =>
      runPrompt({
        modelPath: flags.model,
        prompt,
        nPredict: flags['n-predict'],
        nCtx: flags['ctx-size'],
        nBatch: flags['batch-size'],
        threads: flags.threads,
        kvType: flags['kv-type'] as 'f16' | 'f32',
        addBos: !flags['no-bos'],
        parseSpecial: flags.special === true,
        sampling,
        receipt,
        onProgress: loadProgress(!flags.json),
        onText: flags.json ? undefined : (text) => process.stdout.write(text),
        signal,
      }),
    )
    if (flags.json) {
      const {text, tokens, promptTokens, finishReason, timings, peakRssBytes} = r
      this.log(JSON.stringify({text, tokens, promptTokens, finishReason, seed: r.seed.toString(), timings, peakRssBytes}))
    } else {
      if (r.receipt) process.stderr.write(`receipt ${r.receipt.path} (chain ${r.receipt.chain}${r.receipt.signed ? ', signed' : ''})\n`)
      if (process.stdout.isTTY && !r.text.endsWith('\n')) process.stdout.write('\n')
      const t = r.timings
      process.stderr.write(
        `load ${t.loadMs} ms · prompt ${r.evaluatedTokens} tokens, ${t.promptTokensPerSecond} tok/s · decode ${r.tokens.length} tokens, ` +
          `${t.decodeTokensPerSecond} tok/s · peak RSS ${formatBytes(r.peakRssBytes)} · ${r.finishReason} · seed ${r.seed}\n`,
      )
    }
    if (r.finishReason === 'aborted') this.exit(ExitCode.interrupted)
  }
}
