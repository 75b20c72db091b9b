import {
  constraintFromFlags,
  contextFromFlags,
  loadProgress,
  loraFromFlags,
  modelArg,
  modelFromFlagOrArg,
  RunnerCommand,
  samplingFromFlags,
  withInterrupt,
} from '../lib/cli/index.js'
import {amxStatus, cpuFeatures, describeKernels, kernelSet} from '../lib/engine/index.js'
import {ExitCode} from '../lib/errors.js'
import {runFlags, runPrompt} from '../lib/run/index.js'
import {formatBytes, readPrompt, stdoutIsStderr} from '../lib/util/index.js'

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
    {description: 'The model as the argument (as ollama run takes it)', command: '<%= config.bin %> run model.gguf -p "Once upon a time"'},
    {
      description: 'Sampled, reproducible with a seed',
      command: '<%= config.bin %> run -m model.gguf -p "Write a haiku" --temp 0.7 --top-p 0.9 --seed 42',
    },
    {
      description: 'Prompt from a file, result as JSON for scripts',
      command: '<%= config.bin %> run -m model.gguf --file prompt.txt -n 128 --json',
    },
    {
      description: 'Output constrained to a JSON Schema (or --grammar FILE.gbnf, or --json-object)',
      command: '<%= config.bin %> run -m model.gguf -p "A person as JSON:" --json-schema person.schema.json',
    },
    {
      description: 'With a LoRA adapter at half strength (llama.cpp --lora-scaled)',
      command: '<%= config.bin %> run model.gguf --lora style.gguf:0.5 -p "Once upon a time"',
    },
    {description: 'Prompt from standard input', command: 'echo "Once upon a time" | <%= config.bin %> run -m model.gguf -n 32'},
    {
      description: 'A signed receipt anyone with the model can replay (runner verify)',
      command: '<%= config.bin %> run -m model.gguf -p "Hello" --seed 7 --transcript r.json --sign-key alice.key',
    },
  ]

  static override flags = runFlags
  static override args = modelArg
  protected static override strayArgumentHint = 'the prompt goes in -p TEXT (or --file FILE, or standard input)'

  async run(): Promise<void> {
    const {flags, args} = await this.parse(Run)
    const modelPath = modelFromFlagOrArg(flags.model, args.model, 'run', '-p')
    const prompt = await readPrompt(flags.prompt, flags.file)
    const sampling = samplingFromFlags(flags)
    const constraint = await constraintFromFlags(flags)
    const receipt =
      flags.transcript === undefined
        ? undefined
        : {path: flags.transcript, signKeyPath: flags['sign-key'], prevPath: flags['transcript-prev']}
    const r = await withInterrupt((signal) =>
      runPrompt({
        modelPath,
        prompt,
        nPredict: flags['n-predict'],
        ...contextFromFlags(flags),
        addBos: !flags['no-bos'],
        parseSpecial: flags.special === true,
        sampling,
        constraint,
        lora: loraFromFlags(flags.lora),
        receipt,
        onProgress: loadProgress(!flags.json),
        onText: flags.json ? undefined : (text) => process.stdout.write(text),
        signal,
      }),
    )
    if (flags.json) {
      const {text, tokens, promptTokens, finishReason, timings, constraint: c, peakRssBytes, adapters} = r
      const kernels = kernelSet(cpuFeatures(), amxStatus().state)
      this.log(
        JSON.stringify({
          text,
          tokens,
          promptTokens,
          finishReason,
          seed: r.seed.toString(),
          timings,
          constraint: c,
          peakRssBytes,
          kernels,
          adapters,
        }),
      )
    } else {
      if (r.receipt) process.stderr.write(`receipt ${r.receipt.path} (chain ${r.receipt.chain}${r.receipt.signed ? ', signed' : ''})\n`)
      // A newline between the text and the summary when they meet: on a terminal, or in one file (> log 2>&1).
      if ((process.stdout.isTTY || stdoutIsStderr()) && !r.text.endsWith('\n')) process.stdout.write('\n')
      const t = r.timings
      process.stderr.write(
        `load ${t.loadMs} ms · prompt ${r.evaluatedTokens} tokens, ${t.promptTokensPerSecond} tok/s · decode ${r.tokens.length} tokens` +
          `${t.decodeTokensPerSecond === null ? '' : `, ${t.decodeTokensPerSecond} tok/s`} · peak RSS ${formatBytes(r.peakRssBytes)} · ${r.finishReason} · seed ${r.seed} · ` +
          `kernels ${describeKernels(kernelSet(cpuFeatures(), amxStatus().state))}\n`,
      )
    }
    if (r.finishReason === 'aborted') this.exit(ExitCode.interrupted)
  }
}
